// inotify(7) through bun:ffi: an O_NONBLOCK instance whose fd goes on the event
// source (loop.ts), watches added and removed by path, and the queued events
// parsed from struct inotify_event records (<sys/inotify.h>).
import { dlopen, FFIType, ptr } from "bun:ffi";
import { check, cstr, closeFd, readAvailable } from "./libc";
import { watch as watchFd } from "./loop";

const { i32, u32, ptr: P } = FFIType;
const lib = dlopen("libc.so.6", {
  inotify_init1: { args: [i32], returns: i32 },
  inotify_add_watch: { args: [i32, P, u32], returns: i32 },
  inotify_rm_watch: { args: [i32, i32], returns: i32 },
}).symbols;

export const IN_ACCESS = 0x1, IN_MODIFY = 0x2, IN_ATTRIB = 0x4, IN_CLOSE_WRITE = 0x8, IN_CLOSE_NOWRITE = 0x10, IN_OPEN = 0x20;
export const IN_MOVED_FROM = 0x40, IN_MOVED_TO = 0x80, IN_CREATE = 0x100, IN_DELETE = 0x200, IN_DELETE_SELF = 0x400, IN_MOVE_SELF = 0x800;
export const IN_UNMOUNT = 0x2000, IN_Q_OVERFLOW = 0x4000, IN_IGNORED = 0x8000;
export const IN_ONLYDIR = 0x1000000, IN_DONT_FOLLOW = 0x2000000, IN_EXCL_UNLINK = 0x4000000, IN_MASK_ADD = 0x20000000;
export const IN_ISDIR = 0x40000000, IN_ONESHOT = 0x80000000;
export const IN_NONBLOCK = 0o4000, IN_CLOEXEC = 0o2000000;
/** struct inotify_event { int wd; uint32_t mask; uint32_t cookie; uint32_t len; char name[]; } */
export const structs = {
  inotify_event: { c: "struct inotify_event", size: 16, fields: { wd: 0, mask: 4, cookie: 8, len: 12, name: 16 } },
};
export const SIZEOF_INOTIFY_EVENT = structs.inotify_event.size;
export const OFFSETOF_INOTIFY_EVENT = structs.inotify_event.fields;

export interface InotifyEvent {
  wd: number;
  mask: number;
  cookie: number;
  /** The entry's name in a watched directory ("" for the directory itself). */
  name: string;
}

/** A new inotify instance (non-blocking, close-on-exec): its fd. */
export function inotifyInit(): number {
  return check("inotify_init1", () => lib.inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
}

/** Watches a path; returns the watch descriptor (the same one again for a path already watched). */
export function addWatch(fd: number, path: string, mask: number): number {
  return check(`inotify_add_watch(${path})`, () => lib.inotify_add_watch(fd, ptr(cstr(path)), mask >>> 0));
}

/** Removes a watch (an already gone one is no error). */
export function rmWatch(fd: number, wd: number): void {
  lib.inotify_rm_watch(fd, wd);
}

/** Parses the records of one read. */
export function parseEvents(buf: Uint8Array): InotifyEvent[] {
  const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const out: InotifyEvent[] = [];
  for (let o = 0; o + SIZEOF_INOTIFY_EVENT <= buf.length; ) {
    const len = v.getUint32(o + OFFSETOF_INOTIFY_EVENT.len, true);
    let end = o + SIZEOF_INOTIFY_EVENT;
    let stop = end;
    const limit = Math.min(end + len, buf.length);
    while (stop < limit && buf[stop] !== 0) stop++;
    out.push({
      wd: v.getInt32(o, true),
      mask: v.getUint32(o + OFFSETOF_INOTIFY_EVENT.mask, true),
      cookie: v.getUint32(o + OFFSETOF_INOTIFY_EVENT.cookie, true),
      name: Buffer.from(buf.subarray(end, stop)).toString("utf8"),
    });
    o = end + len;
  }
  return out;
}

const READ_SIZE = 64 * 1024;

/** Reads every queued event (until EAGAIN) from a non-blocking inotify fd. */
export function readEvents(fd: number): InotifyEvent[] {
  const out: InotifyEvent[] = [];
  const buf = Buffer.alloc(READ_SIZE);
  for (;;) {
    const b = readAvailable(fd, READ_SIZE, buf);
    if (!b || !b.length) return out;
    out.push(...parseEvents(b));
  }
}

export { closeFd };

/**
 * One inotify instance on the platform's event source: watches added and removed by
 * path, and every batch of queued events handed to onEvents on the main thread.
 * Nothing blocks: the fd is non-blocking and read only when the event source says
 * it is readable.
 */
export class Inotify {
  readonly fd: number;
  private w: import("./loop").Watch;

  /** A failed read is handed to onError (default: thrown into the event source, which logs it). */
  constructor(onEvents: (events: InotifyEvent[]) => void, opts: { ref?: boolean; onError?: (e: unknown) => void } = {}) {
    this.fd = inotifyInit();
    const readable = () => {
      let events: InotifyEvent[];
      try {
        events = readEvents(this.fd);
      } catch (e) {
        if (!opts.onError) throw e;
        opts.onError(e);
        return;
      }
      onEvents(events);
    };
    this.w = watchFd(this.fd, { readable }, { ref: opts.ref ?? false });
  }

  /** Watches path for the events of mask; the watch descriptor. */
  add(path: string, mask: number): number {
    return addWatch(this.fd, path, mask);
  }

  remove(wd: number): void {
    rmWatch(this.fd, wd);
  }

  close(): void {
    if (this.w.closed) return;
    this.w.close();
    closeFd(this.fd);
  }
}

/** The changes of a directory's entries: created, deleted, moved in or out, written and closed; and the directory itself deleted or moved. */
export const DIR_CHANGES = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF;
const EVENT_BITS = 0xfff;

/** A watch of one directory (watchDirectory): close() ends it; `closed` once it ended (also when the directory went). */
export interface DirWatch {
  readonly path: string;
  readonly closed: boolean;
  close(): void;
}

interface DirEntry {
  path: string;
  mask: number;
  onEvent: (ev: InotifyEvent) => void;
  wd: number;
  closed: boolean;
}

/**
 * The process's directory watches share one inotify instance (one fd on the event
 * source, opened with the first watch and closed with the last), so ten services
 * do not each take one of the user's inotify instances (fs.inotify.max_user_instances).
 */
let shared: { ino: Inotify; byWd: Map<number, Set<DirEntry>> } | undefined;

function deliver(e: DirEntry, ev: InotifyEvent): void {
  try {
    e.onEvent(ev);
  } catch (err) {
    console.error(`inotify: the watcher of ${e.path} failed:`, err);
  }
}

function dispatchDir(events: InotifyEvent[]): void {
  const s = shared;
  if (!s) return;
  for (const ev of events) {
    if (ev.mask & IN_Q_OVERFLOW) {
      for (const set of [...s.byWd.values()]) for (const e of [...set]) if (!e.closed) deliver(e, ev);
      continue;
    }
    const set = s.byWd.get(ev.wd);
    if (!set) continue;
    if (ev.mask & IN_IGNORED) {
      // The kernel ended the watch: the directory was deleted, or its filesystem unmounted.
      s.byWd.delete(ev.wd);
      for (const e of set) e.closed = true;
      for (const e of set) deliver(e, ev);
      continue;
    }
    for (const e of [...set]) if (!e.closed && ev.mask & e.mask & EVENT_BITS) deliver(e, ev);
  }
  if (shared === s && s.byWd.size === 0) closeShared();
}

function closeShared(): void {
  const s = shared;
  shared = undefined;
  s?.ino.close();
}

/**
 * Watches a directory's entries (not its subdirectories' entries) on the event
 * source: onEvent runs on the main thread for each event of `mask` (default
 * DIR_CHANGES), with the entry's name ("" for the directory itself). It also hears
 * IN_Q_OVERFLOW (events were lost: look at the directory again) and IN_IGNORED (the
 * watch ended: the directory is gone; the DirWatch is closed then).
 * Throws SysError when the path cannot be watched (ENOENT, ENOTDIR, EACCES, ENOSPC
 * at the user's inotify watch limit).
 */
export function watchDirectory(path: string, onEvent: (ev: InotifyEvent) => void, opts: { mask?: number } = {}): DirWatch {
  const mask = (opts.mask ?? DIR_CHANGES) & EVENT_BITS;
  if (!shared) shared = { ino: new Inotify(dispatchDir, { onError: (e) => console.error("inotify: read failed:", e) }), byWd: new Map() };
  const s = shared;
  let wd: number;
  try {
    // IN_MASK_ADD: a directory already watched (by this path or another name of it) keeps the events its other watchers asked for.
    wd = s.ino.add(path, mask | IN_ONLYDIR | IN_MASK_ADD);
  } catch (e) {
    if (s.byWd.size === 0) closeShared();
    throw e;
  }
  const e: DirEntry = { path, mask, onEvent, wd, closed: false };
  let set = s.byWd.get(wd);
  if (!set) s.byWd.set(wd, (set = new Set()));
  set.add(e);
  return {
    path,
    get closed() {
      return e.closed;
    },
    close() {
      if (e.closed) return;
      e.closed = true;
      if (shared !== s) return;
      const set = s.byWd.get(e.wd);
      if (!set) return;
      set.delete(e);
      if (set.size) return;
      s.byWd.delete(e.wd);
      s.ino.remove(e.wd);
      if (s.byWd.size === 0) closeShared();
    },
  };
}

/** Directory watches open now (tests). */
export function dirWatchCount(): number {
  let n = 0;
  for (const set of shared?.byWd.values() ?? []) n += set.size;
  return n;
}
