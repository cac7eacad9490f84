// The cache's files on the local filesystem: creating an object's file (or
// directory, for dirType types) for its writer, measuring, removing and copying
// them, and the caller's write permission on a copy destination.
import {
  accessSync,
  chownSync,
  closeSync,
  constants,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  statfsSync,
  type Stats,
} from "node:fs";
import { copyFile, cp, rm, chown, open as openFile, lstat, readdir } from "node:fs/promises";
import { write as writeCb } from "node:fs";
import { join } from "node:path";
import { PathRefused, type Caller } from "../../../core/service";
import { identityOf as callerIdentity } from "../../../core/access";
import { closeFd } from "../../../ffi/libc";
import { Inotify, IN_CLOSE_WRITE, IN_IGNORED, IN_ONLYDIR, IN_Q_OVERFLOW } from "../../../ffi/inotify";

export type Identity = ReturnType<typeof callerIdentity>;

/** uid, gid and groups of a caller (the platform's identityOf), null when the bus did not say who it is. */
export function identityOf(caller: Caller): Identity | null {
  return caller.uid < 0 ? null : callerIdentity(caller);
}

const runningAsRoot = process.getuid?.() === 0;

/** Hands a new file or directory to its writer (only possible when we are root). */
function giveTo(path: string, who: Identity | null) {
  if (!runningAsRoot || !who || who.uid <= 0) return;
  try {
    chownSync(path, who.uid, who.gid >= 0 ? who.gid : -1);
  } catch {
    /* the caller then writes through the group/other bits, as without root */
  }
}

export function ensureDir(path: string) {
  mkdirSync(path, { recursive: true, mode: 0o755 });
}

/**
 * The service cannot start on this path: names it and carries the errno's code
 * (EROFS, EACCES, ENOTDIR, ...), or SQLite's own code when the database failed without
 * an errno, so whoever starts the service can say which service and which path.
 */
export class StorageUnusable extends Error {
  readonly path: string;
  readonly code: string;
  readonly errno?: number;
  readonly syscall?: string;
  constructor(what: string, path: string, cause: unknown) {
    const c = cause as { code?: unknown; errno?: unknown; syscall?: unknown; message?: unknown } | null;
    const code = storageCode(cause) ?? (typeof c?.code === "string" ? c.code : "EIO");
    super(`file cache: cannot use ${what} ${path}: ${code}${typeof c?.message === "string" ? ` (${c.message})` : ""}`, { cause });
    this.name = "StorageUnusable";
    this.path = path;
    this.code = code;
    // Node's errno is negative (-30 for EROFS); SQLite's is its result code.
    if (typeof c?.errno === "number" && !String(c.code ?? "").startsWith("SQLITE")) this.errno = Math.abs(c.errno);
    if (typeof c?.syscall === "string") this.syscall = c.syscall;
  }
}

/**
 * A directory the service keeps files in: created when missing, then checked for
 * read, write and search permission (access(2): EROFS on a read-only file system
 * even for root, EACCES for a user without the permission).
 */
export function usableDir(what: string, path: string) {
  try {
    mkdirSync(path, { recursive: true, mode: 0o755 });
  } catch (e: any) {
    // EEXIST from a recursive mkdir: something that is not a directory is in the way.
    const cause = e?.code === "EEXIST" ? Object.assign(new Error("not a directory"), { code: "ENOTDIR", syscall: "mkdir" }) : e;
    throw new StorageUnusable(what, typeof e?.path === "string" ? e.path : path, cause);
  }
  try {
    if (!statSync(path).isDirectory()) throw Object.assign(new Error("not a directory"), { code: "ENOTDIR" });
    accessSync(path, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (e) {
    throw new StorageUnusable(what, path, e);
  }
}

/** An existing file the service must read and write (a missing one is fine: it is created). */
export function usableFile(what: string, path: string) {
  try {
    accessSync(path, constants.R_OK | constants.W_OK);
  } catch (e: any) {
    if (e?.code === "ENOENT") return;
    throw new StorageUnusable(what, path, e);
  }
}

/**
 * The errno code of a failed storage operation: a Node error's own, or the one a
 * SQLite result code stands for (the database's file system full, an I/O error,
 * read-only). Undefined when it is neither.
 */
export function storageCode(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return undefined;
  if (!code.startsWith("SQLITE")) return /^E[A-Z0-9]+$/.test(code) ? code : undefined;
  if (code === "SQLITE_FULL") return "ENOSPC";
  if (code.startsWith("SQLITE_IOERR")) return "EIO";
  if (code.startsWith("SQLITE_READONLY")) return "EROFS";
  if (code === "SQLITE_PERM" || code.startsWith("SQLITE_AUTH")) return "EACCES";
  return undefined;
}

/**
 * Bytes a writer may still store on the file system holding path (statfs(2), what
 * statvfs(3) reports: available blocks times the fragment size), in whole 4096-byte
 * blocks; null when the file system cannot be asked.
 */
export function freeBytes(path: string): number | null {
  try {
    const s = statfsSync(path) as ReturnType<typeof statfsSync> & { frsize?: number };
    const unit = Number(s.frsize) || Number(s.bsize);
    return Math.floor((Number(s.bavail) * unit) / 4096) * 4096;
  } catch {
    return null;
  }
}

/** Creates an object's empty file (or directory); fails if the name exists. */
export function createObject(path: string, dirType: boolean, owner: Identity | null) {
  if (dirType) mkdirSync(path, { mode: 0o755 });
  else closeSync(openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644));
  giveTo(path, owner);
}

/** Bytes an object holds: a file's size, or the sum of the regular files in a directory tree. */
export function measure(path: string, dirType: boolean): number | null {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch {
    return null;
  }
  if (!dirType || !st.isDirectory()) return st.isFile() ? st.size : dirType ? null : st.size;
  let total = 0;
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) total += lstatSync(p).size;
    }
  };
  try {
    walk(path);
  } catch {
    /* entries vanishing while we walk: count what is there */
  }
  return total;
}

export function removePath(path: string) {
  rmSync(path, { recursive: true, force: true });
}

export function exists(path: string): boolean {
  return existsSync(path);
}

export function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

export function listDir(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

/** May this identity create entries in dir (write and search permission)? */
export function canWrite(dir: string, who: Identity | null): boolean {
  if (!who) return false;
  let st: Stats;
  try {
    st = statSync(dir);
  } catch {
    return false;
  }
  if (who.uid === 0) return true;
  const need = 0o3; // write + execute
  if (st.uid === who.uid) return ((st.mode >> 6) & need) === need;
  if (st.gid === who.gid || who.groups.includes(st.gid)) return ((st.mode >> 3) & need) === need;
  return (st.mode & need) === need;
}

/**
 * Copies src to target without replacing anything there; resolves false when the
 * target name is taken. The copy belongs to the caller.
 */
export async function copyNew(src: string, target: string, dirType: boolean, owner: Identity | null): Promise<boolean> {
  try {
    if (dirType) {
      if (existsSync(target)) return false;
      await cp(src, target, { recursive: true, errorOnExist: true, force: false });
    } else {
      await copyFile(src, target, constants.COPYFILE_EXCL);
    }
  } catch (e: any) {
    if (e?.code === "EEXIST" || e?.code === "ERR_FS_CP_EEXIST") return false;
    await rm(target, { recursive: true, force: true }).catch(() => {});
    throw e;
  }
  if (runningAsRoot && owner && owner.uid > 0) {
    await chown(target, owner.uid, owner.gid >= 0 ? owner.gid : -1).catch(() => {});
  }
  return true;
}

/**
 * IN_CLOSE_WRITE of files in watched directories (one inotify instance on the
 * platform's event source): onClosed(dir, name) for each. Nothing it is given throws
 * into the event source: a failure of onClosed (each event on its own, so one failure
 * does not lose the others of its batch) or of reading the events goes to onError;
 * events the kernel dropped (its queue overflowed) are told to onOverflow.
 */
export class DirWatcher {
  private readonly ino: Inotify;
  private readonly dirs = new Map<number, string>();
  private readonly wds = new Map<string, number>();

  constructor(onClosed: (dir: string, name: string) => void, on: { error: (e: unknown) => void; overflow: () => void }) {
    const guarded = (fn: () => void) => {
      try {
        fn();
      } catch (e) {
        try {
          on.error(e);
        } catch {
          /* the error report itself failed: nothing is left to tell */
        }
      }
    };
    this.ino = new Inotify(
      (events) => {
        for (const ev of events) {
          if (ev.mask & IN_Q_OVERFLOW) {
            guarded(on.overflow);
            continue;
          }
          const dir = this.dirs.get(ev.wd);
          if (ev.mask & IN_IGNORED) {
            if (dir !== undefined) this.wds.delete(dir);
            this.dirs.delete(ev.wd);
          } else if (dir !== undefined && ev.mask & IN_CLOSE_WRITE && ev.name) guarded(() => onClosed(dir, ev.name));
        }
      },
      // A failed read may have lost events: what they would have told is checked again.
      {
        onError: (e) => {
          guarded(() => on.error(e));
          guarded(on.overflow);
        },
      },
    );
  }

  add(dir: string) {
    const wd = this.ino.add(dir, IN_CLOSE_WRITE | IN_ONLYDIR);
    this.dirs.set(wd, dir);
    this.wds.set(dir, wd);
  }

  remove(dir: string) {
    const wd = this.wds.get(dir);
    if (wd === undefined) return;
    this.wds.delete(dir);
    this.dirs.delete(wd);
    this.ino.remove(wd);
  }

  close() {
    this.ino.close();
  }
}

/**
 * A destination's file system as the caller may use it (the platform's caller
 * files, bound to one caller): every path is resolved without symlinks, the
 * service's own files are refused, and what is made is the caller's.
 */
export interface CopyAs {
  /** The path rules alone; throws PathRefused. Returns the path normalized. */
  check(path: string): string;
  /** Creates a new file (O_EXCL); resolves with its fd, which the copy closes. */
  create(path: string): Promise<number>;
  /** Makes a new directory. */
  mkdir(path: string): Promise<void>;
  /** Removes a file (dir false) or an empty directory the failed copy made. */
  remove(path: string, dir: boolean): Promise<void>;
}

const COPY_CHUNK = 1 << 20;

function writeSome(fd: number, buf: Buffer, offset: number, length: number): Promise<number> {
  return new Promise((resolve, reject) => writeCb(fd, buf, offset, length, null, (err, n) => (err ? reject(err) : resolve(n))));
}

/**
 * Copies the regular file src (opened without following a symlink, and without
 * blocking on a FIFO) into the open fd, in chunks on the file system's threads.
 */
async function pump(src: string, fd: number, buf: Buffer): Promise<void> {
  const h = await openFile(src, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    if (!(await h.stat()).isFile()) throw Object.assign(new Error(`${src} is not a regular file`), { code: "EINVAL" });
    for (;;) {
      const { bytesRead } = await h.read(buf, 0, buf.length, null);
      if (!bytesRead) return;
      for (let off = 0; off < bytesRead; ) off += await writeSome(fd, buf, off, bytesRead - off);
    }
  } finally {
    await h.close();
  }
}

/** Creates target as the caller and fills it from src; false when the name is taken. */
async function copyFileAs(src: string, target: string, as: CopyAs, buf: Buffer, made: [string, boolean][]): Promise<boolean> {
  let fd: number;
  try {
    fd = await as.create(target);
  } catch (e) {
    if (e instanceof PathRefused && e.reason === "exists") return false;
    throw e;
  }
  made.push([target, false]);
  try {
    await pump(src, fd, buf);
  } finally {
    closeFd(fd);
  }
  return true;
}

/** An entry of the object's tree changed while it was copied (its writer renamed it, or put a link in its place). */
const changed = (path: string) => Object.assign(new Error(`${path} changed while it was copied`), { code: "ENOENT" });

/**
 * Opens a directory of an object's tree without following a symbolic link, and only
 * if it is the directory lstat saw (`seen`: same device and inode): the writer of a
 * dirType object owns its tree and may swap any of its directories for a link to one
 * only the service may read. Everything below is then read through this descriptor
 * (/proc/self/fd/N/entry, resolved from the open directory, not from a path).
 */
async function openTreeDir(path: string, seen?: { dev: number; ino: number }) {
  let h: Awaited<ReturnType<typeof openFile>>;
  try {
    h = await openFile(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (e: any) {
    throw e?.code === "ELOOP" || e?.code === "ENOTDIR" ? changed(path) : e;
  }
  const st = await h.stat();
  if (seen && (st.dev !== seen.dev || st.ino !== seen.ino)) {
    await h.close();
    throw changed(path);
  }
  return h;
}

/**
 * Copies an object to target with the caller's rights (as): a file, or (dirType) a
 * directory tree whose regular files and directories are copied (other entries,
 * symbolic links among them, are not; each directory is read through a descriptor
 * of its own, so a link swapped in on the way is never followed). Resolves false
 * when the target name is taken; on a failure removes what it made (as the caller)
 * and throws.
 */
export async function copyAs(src: string, target: string, dirType: boolean, as: CopyAs): Promise<boolean> {
  const buf = Buffer.allocUnsafe(COPY_CHUNK);
  const made: [string, boolean][] = [];
  try {
    if (!dirType) return await copyFileAs(src, target, as, buf, made);
    try {
      await as.mkdir(target);
    } catch (e) {
      if (e instanceof PathRefused && e.reason === "exists") return false;
      throw e;
    }
    made.push([target, true]);
    // One directory open at a time: its files are copied through its descriptor, its
    // subdirectories after it is closed, each checked to be the one listed.
    const walk = async (from: string, to: string, seen?: { dev: number; ino: number }) => {
      const subdirs: [string, { dev: number; ino: number }][] = [];
      const h = await openTreeDir(from, seen);
      try {
        const at = `/proc/self/fd/${h.fd}`;
        for (const entry of await readdir(at)) {
          const s = join(at, entry);
          const st = await lstat(s);
          if (st.isDirectory()) subdirs.push([entry, { dev: st.dev, ino: st.ino }]);
          else if (st.isFile()) {
            if (!(await copyFileAs(s, join(to, entry), as, buf, made))) throw new PathRefused(join(to, entry), "exists", 17);
          }
        }
      } finally {
        await h.close();
      }
      for (const [entry, st] of subdirs) {
        const d = join(to, entry);
        await as.mkdir(d);
        made.push([d, true]);
        await walk(join(from, entry), d, st);
      }
    };
    await walk(src, target);
    return true;
  } catch (e) {
    for (const [p, dir] of made.reverse()) await as.remove(p, dir).catch(() => {});
    throw e;
  }
}
