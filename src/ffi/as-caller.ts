// The file system with a caller's rights: opens, creates, deletes and access checks
// made by a thread of ours that holds the caller's fsuid, fsgid and groups for the
// length of one syscall (as-caller-worker.ts), so the kernel decides what the caller
// may do, and what it creates is the caller's. Paths are resolved by openat2 with
// RESOLVE_NO_SYMLINKS (no symlink anywhere on the path, so none can be planted or
// swapped in between a check and a use: the open is the check).
//
// The process needs CAP_SETUID and CAP_SETGID for this (the unit grants them);
// without them every request for another uid fails with EPERM: closed, never done
// with the service's own rights.
import { SysError } from "./libc";
import { workerUrl } from "./worker";
import type { Request } from "./as-caller-worker";

/** Whose rights: uid, primary (fs) gid, supplementary groups. */
export interface Identity {
  uid: number;
  gid: number;
  groups: number[];
}

export const O_RDONLY = 0, O_WRONLY = 1, O_RDWR = 2, O_CREAT = 0o100, O_EXCL = 0o200, O_NOCTTY = 0o400, O_TRUNC = 0o1000,
  O_APPEND = 0o2000, O_NONBLOCK = 0o4000, O_CLOEXEC = 0o2000000;
// These two differ between the generic table (arm64) and x86-64 (asm/fcntl.h).
export const O_DIRECTORY = process.arch === "arm64" ? 0o40000 : 0o200000;
export const O_NOFOLLOW = process.arch === "arm64" ? 0o100000 : 0o400000;
export const R_OK = 4, W_OK = 2, X_OK = 1;
/** openat2 resolve flags (linux/openat2.h). */
export const RESOLVE_NO_XDEV = 0x01, RESOLVE_NO_MAGICLINKS = 0x02, RESOLVE_NO_SYMLINKS = 0x04, RESOLVE_BENEATH = 0x08;

/**
 * How long the thread stays without a request before it ends (its JavaScript heap, 1.5
 * to 2 MB, goes with it); the next request starts another. Ended between requests
 * only: the thread holds no one's rights then.
 */
export const THREAD_IDLE_MS = 30_000;
let idleMs = THREAD_IDLE_MS;
let worker: Worker | undefined;
let idleTimer: ReturnType<typeof setTimeout> | undefined;
let nextId = 0;
const waiting = new Map<number, { resolve: (r: { fd?: number; errno: number; identity?: boolean }) => void }>();

/** Tests: how long the thread stays idle (THREAD_IDLE_MS by default). */
export function setThreadIdleMs(ms: number): void {
  idleMs = ms;
}

function thread(): Worker {
  clearTimeout(idleTimer);
  idleTimer = undefined;
  if (worker) return worker;
  const w = new Worker(workerUrl("ffi/as-caller-worker.ts"));
  worker = w;
  w.onmessage = (ev: MessageEvent<{ id: number; fd?: number; errno: number; identity?: boolean }>) => {
    const pending = waiting.get(ev.data.id);
    waiting.delete(ev.data.id);
    pending?.resolve(ev.data);
    if (waiting.size) return;
    // Idle, the thread does not keep the process alive (a pending request does), and
    // it ends after idleMs without one.
    w.unref();
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => {
      idleTimer = undefined;
      if (worker !== w || waiting.size) return;
      worker = undefined;
      w.terminate();
    }, idleMs);
    idleTimer.unref();
  };
  return w;
}

function ask(who: Identity, q: Omit<Request, "id" | "uid" | "gid" | "groups">, call: string): Promise<number> {
  const id = (nextId = (nextId + 1) >>> 0);
  const w = thread();
  w.ref();
  return new Promise((resolve, reject) => {
    waiting.set(id, {
      resolve: (r) => {
        if (r.errno) reject(r.identity ? new SysError(`${call}: cannot take the rights of uid ${who.uid}`, r.errno) : new SysError(`${call}(${q.path})`, r.errno));
        else resolve(r.fd ?? 0);
      },
    });
    w.postMessage({ id, uid: who.uid, gid: who.gid, groups: who.groups, ...q } satisfies Request);
  });
}

const RESOLVE = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

/**
 * Opens path as `who` (O_CLOEXEC always; no symlinks on the path). Only a regular file
 * or a directory is opened (anything else: ENXIO), and never waits (O_NONBLOCK: a FIFO
 * cannot hold the thread). Resolves with the fd, which is O_NONBLOCK (no effect on
 * regular files).
 */
export function openAs(who: Identity, path: string, flags: number, mode = 0o644): Promise<number> {
  // openat2 refuses a mode without O_CREAT.
  return ask(who, { op: "open", path, flags: flags | O_CLOEXEC, mode: flags & O_CREAT ? mode : 0, resolve: RESOLVE }, "open");
}

/** Removes a file (or, with dir, an empty directory) as `who`. */
export async function unlinkAs(who: Identity, path: string, dir = false): Promise<void> {
  await ask(who, { op: dir ? "rmdir" : "unlink", path }, dir ? "rmdir" : "unlink");
}

/** Makes a directory as `who` (owned by it). */
export async function mkdirAs(who: Identity, path: string, mode = 0o755): Promise<void> {
  await ask(who, { op: "mkdir", path, mode }, "mkdir");
}

/** Whether `who` may access path with mode (R_OK | W_OK | X_OK): the kernel's answer. */
export async function accessAs(who: Identity, path: string, mode: number): Promise<boolean> {
  try {
    await ask(who, { op: "access", path, mode }, "access");
    return true;
  } catch (e) {
    if (e instanceof SysError && /cannot take the rights/.test(e.message)) throw e;
    return false;
  }
}
