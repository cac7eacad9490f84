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
