// epoll (sys/epoll.h): the kernel side of the platform's event source (loop.ts).
// struct epoll_event is packed on x86_64 (12 bytes) and naturally aligned on
// aarch64 (16 bytes); test/ffi/epoll.test.ts checks the host's layout with gcc.
import { dlopen, FFIType } from "bun:ffi";

const { i32, ptr: P } = FFIType;

export const epollSymbols = {
  epoll_create1: { args: [i32], returns: i32 },
  epoll_ctl: { args: [i32, i32, i32, P], returns: i32 },
  epoll_wait: { args: [i32, P, i32, i32], returns: i32 },
} as const;

export const EPOLLIN = 0x001, EPOLLPRI = 0x002, EPOLLOUT = 0x004, EPOLLERR = 0x008, EPOLLHUP = 0x010,
  EPOLLRDHUP = 0x2000, EPOLLONESHOT = 1 << 30;
export const EPOLL_CTL_ADD = 1, EPOLL_CTL_DEL = 2, EPOLL_CTL_MOD = 3;
export const EPOLL_CLOEXEC = 0o2000000;

const packed = process.arch === "x64";
export const structs = {
  epoll_event: { c: "struct epoll_event", size: packed ? 12 : 16, fields: { events: 0, data: packed ? 4 : 8 } },
};
export const SIZEOF_EPOLL_EVENT = structs.epoll_event.size;
const DATA = structs.epoll_event.fields.data;

/** Writes one epoll_event (events, data.u64 = a 32-bit id) at `index` of `buf`. */
export function putEvent(view: DataView, index: number, events: number, id: number): void {
  const o = index * SIZEOF_EPOLL_EVENT;
  view.setUint32(o, events >>> 0, true);
  view.setUint32(o + DATA, id >>> 0, true);
  view.setUint32(o + DATA + 4, 0, true);
}

/** Reads one epoll_event: [events, id]. */
export function getEvent(view: DataView, index: number): [number, number] {
  const o = index * SIZEOF_EPOLL_EVENT;
  return [view.getUint32(o, true), view.getUint32(o + DATA, true)];
}

/** The epoll calls, bound in the thread that calls this (workers dlopen their own). */
export function epollLib() {
  return dlopen("libc.so.6", epollSymbols).symbols;
}

/**
 * What the poller thread (poller-worker.ts) calls, and nothing else: epoll_wait and
 * write. Each bound symbol is a compiled trampoline in that thread's own heap, so the
 * thread does not bind the whole of libc.ts.
 */
export function pollerLib() {
  return dlopen("libc.so.6", {
    epoll_wait: epollSymbols.epoll_wait,
    write: { args: [FFIType.i32, FFIType.ptr, FFIType.u64], returns: FFIType.i64 },
  }).symbols;
}
