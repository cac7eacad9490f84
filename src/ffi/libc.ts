// libc through bun:ffi: the one place that dlopens libc. Kernel-interface modules
// (gpio.ts, i2c.ts, ...) build on these primitives and add their own structs.
import { dlopen, FFIType, ptr, read, CString, type Pointer } from "bun:ffi";

const { i32, u32, u64, i64, ptr: P, cstring } = FFIType;

export const libc = dlopen("libc.so.6", {
  __errno_location: { args: [], returns: P },
  strerror: { args: [i32], returns: cstring },
  open: { args: [P, i32, u32], returns: i32 },
  close: { args: [i32], returns: i32 },
  read: { args: [i32, P, u64], returns: i64 },
  write: { args: [i32, P, u64], returns: i64 },
  ioctl: { args: [i32, u64, P], returns: i32 },
  fcntl: { args: [i32, i32, u64], returns: i32 },
  poll: { args: [P, u64, i32], returns: i32 },
  socket: { args: [i32, i32, i32], returns: i32 },
  socketpair: { args: [i32, i32, i32, P], returns: i32 },
  connect: { args: [i32, P, u32], returns: i32 },
  bind: { args: [i32, P, u32], returns: i32 },
  setsockopt: { args: [i32, i32, i32, P, u32], returns: i32 },
  sendmsg: { args: [i32, P, i32], returns: i64 },
  recvmsg: { args: [i32, P, i32], returns: i64 },
  shutdown: { args: [i32, i32], returns: i32 },
  dup: { args: [i32], returns: i32 },
  pipe2: { args: [P, i32], returns: i32 },
  getpid: { args: [], returns: i32 },
  getuid: { args: [], returns: u32 },
  prctl: { args: [i32, u64, u64, u64, u64], returns: i32 },
  execve: { args: [P, P, P], returns: i32 },
  memfd_create: { args: [P, u32], returns: i32 },
  ftruncate: { args: [i32, i64], returns: i32 },
  lseek: { args: [i32, i64, i32], returns: i64 },
  mmap: { args: [P, u64, i32, i32, i32, i64], returns: P },
  munmap: { args: [P, u64], returns: i32 },
  shm_open: { args: [P, i32, u32], returns: i32 },
  shm_unlink: { args: [P], returns: i32 },
  reboot: { args: [i32], returns: i32 },
  // System calls glibc has no wrapper for (io_uring_setup, _enter and _register: uring.ts).
  syscall: { args: [i64, i64, i64, i64, i64, i64], returns: i64 },
  sync: { args: [], returns: FFIType.void },
  // Gives the heap's free memory at its top and in whole free pages back to the kernel.
  malloc_trim: { args: [u64], returns: i32 },
  // Sets one of the heap's parameters (fixNativeMmapThreshold).
  mallopt: { args: [i32, i32], returns: i32 },
  // pseudo-terminals (termios.ts)
  posix_openpt: { args: [i32], returns: i32 },
  grantpt: { args: [i32], returns: i32 },
  unlockpt: { args: [i32], returns: i32 },
  ptsname_r: { args: [i32, P, u64], returns: i32 },
  // System V shared memory and eventfd (shm.ts)
  shmget: { args: [i32, u64, i32], returns: i32 },
  shmat: { args: [i32, P, i32], returns: P },
  shmdt: { args: [P], returns: i32 },
  shmctl: { args: [i32, i32, P], returns: i32 },
  eventfd: { args: [u32, i32], returns: i32 },
}).symbols;

/** mallopt's parameter (malloc.h). */
export const M_MMAP_THRESHOLD = -3;

/**
 * The size from which glibc's malloc serves a block from a mapping of its own, which
 * free() unmaps. glibc's malloc is the heap of the native libraries (GStreamer, its
 * plugins and glib; libturbojpeg); devservices' own objects live in Bun's. By default
 * the threshold starts at 128 KiB and moves up to the size of the largest such block
 * freed so far (up to 32 MiB): after the first recording freed its encoder's 4 MiB
 * blocks, every later one took them from the heap of whichever thread allocated them,
 * and a thread's heap kept those pages once the thread ended: +4 MiB of RssAnon for
 * each recording (26 to 52 MB over seven; glibc keeps up to 8 heaps a core). A
 * threshold that is set stays where it is: with it the eighth recording idles where
 * the first did (docs/performance.md, "The native libraries' large blocks given
 * back"). 1 MiB rather than 128 KiB: a block between the two (a 640x480 frame outside
 * a buffer pool) is reused from the heap instead of being mapped and faulted in anew
 * each time. `serve` fixes it at start.
 */
export const NATIVE_MMAP_THRESHOLD = 1 << 20;

/** Fixes glibc's mmap threshold at `bytes` (NATIVE_MMAP_THRESHOLD); false where libc refused it. */
export function fixNativeMmapThreshold(bytes = NATIVE_MMAP_THRESHOLD): boolean {
  return libc.mallopt(M_MMAP_THRESHOLD, bytes) === 1;
}

export function errno(): number {
  return read.i32(libc.__errno_location() as Pointer, 0);
}

/** An error carrying the C errno, thrown by check(). */
export class SysError extends Error {
  constructor(public readonly call: string, public readonly errno: number) {
    super(`${call}: ${String(libc.strerror(errno))} (errno ${errno})`);
  }
}

import { EAGAIN, EINTR, EINVAL } from "./errno.ts";
export { EAGAIN, EINTR, EINVAL };

/** Throws SysError for a -1 return; retries EINTR. */
export function check<T extends number | bigint>(call: string, fn: () => T): T {
  for (;;) {
    const r = fn();
    if (Number(r) !== -1) return r;
    const e = errno();
    if (e !== EINTR) throw new SysError(call, e);
  }
}

/**
 * For non-blocking fds: like check(), but EAGAIN (nothing there yet, or no room)
 * gives null instead of an error.
 */
export function checkAgain<T extends number | bigint>(call: string, fn: () => T): T | null {
  for (;;) {
    const r = fn();
    if (Number(r) !== -1) return r;
    const e = errno();
    if (e === EAGAIN) return null;
    if (e !== EINTR) throw new SysError(call, e);
  }
}

/** The text of a fixed-size C char array: up to the first NUL, or all `len` bytes. */
export function cString(buf: Uint8Array, off: number, len: number): string {
  const s = Buffer.from(buf.buffer, buf.byteOffset + off, len);
  const nul = s.indexOf(0);
  return s.subarray(0, nul < 0 ? len : nul).toString("utf8");
}

/** Writes s NUL-terminated into a fixed-size char array; refuses what does not fit with its NUL. */
export function putCString(buf: Uint8Array, off: number, len: number, s: string): void {
  const b = Buffer.from(s, "utf8");
  if (b.length >= len) throw new RangeError(`longer than ${len - 1} bytes: ${s}`);
  buf.set(b, off);
  buf.fill(0, off + b.length, off + len);
}

/** NUL-terminated C string buffer for a JS string. */
export function cstr(s: string): Buffer {
  return Buffer.from(s + "\0", "utf8");
}

export const O_RDONLY = 0, O_WRONLY = 1, O_RDWR = 2, O_CREAT = 0o100, O_EXCL = 0o200,
  O_NOCTTY = 0o400, O_TRUNC = 0o1000, O_NONBLOCK = 0o4000, O_CLOEXEC = 0o2000000;

export function openFile(path: string, flags: number, mode = 0o600): number {
  return check(`open(${path})`, () => libc.open(ptr(cstr(path)), flags, mode));
}

/** A pipe: [read end, write end]. */
export function makePipe(flags = O_CLOEXEC): [number, number] {
  const fds = new Int32Array(2);
  check("pipe2", () => libc.pipe2(ptr(fds), flags));
  return [fds[0]!, fds[1]!];
}

/** Writes all of data (blocking fd). */
export function writeAll(fd: number, data: Uint8Array): void {
  let off = 0;
  while (off < data.length) off += writeFd(fd, data.subarray(off));
}

export function closeFd(fd: number): void {
  libc.close(fd);
}

/** ioctl with a buffer argument (the struct), returning the ioctl's result. */
export function ioctl(fd: number, request: number | bigint, arg: Uint8Array | null, name = "ioctl"): number {
  return check(name, () => libc.ioctl(fd, BigInt(request), arg ? ptr(arg) : null));
}

/** ioctl on a non-blocking fd: null when the driver answers EAGAIN (nothing ready yet). */
export function ioctlAgain(fd: number, request: number | bigint, arg: Uint8Array | null, name = "ioctl"): number | null {
  return checkAgain(name, () => libc.ioctl(fd, BigInt(request), arg ? ptr(arg) : null));
}

/** An ioctl whose argument is an integer value, not a pointer. */
export function ioctlValue(fd: number, request: number | bigint, value: number, name = "ioctl"): number {
  return check(name, () => libc.ioctl(fd, BigInt(request), value as never));
}

/** One read of up to size bytes (blocks on a blocking fd; use readAvailable on O_NONBLOCK fds). */
export function readFd(fd: number, size: number): Buffer {
  const buf = Buffer.alloc(size);
  const n = Number(check("read", () => libc.read(fd, ptr(buf), size)));
  return buf.subarray(0, n);
}

/**
 * One read of up to size bytes from an O_NONBLOCK fd: null when nothing is there
 * (EAGAIN), an empty buffer at end of file.
 */
export function readAvailable(fd: number, size: number, into = Buffer.alloc(size)): Buffer | null {
  const n = checkAgain("read", () => libc.read(fd, ptr(into), size));
  return n === null ? null : into.subarray(0, Number(n));
}

/**
 * Reads whole records of recordSize bytes from an O_NONBLOCK fd until EAGAIN (or
 * `max` records): what the kernel has queued now, [] when nothing is. For record
 * fds (GPIO events, eventfd) whose read returns whole records only.
 */
export function readRecords(fd: number, recordSize: number, max = 64): Buffer[] {
  const out: Buffer[] = [];
  const buf = Buffer.alloc(recordSize * 16);
  while (out.length < max) {
    const want = recordSize * Math.min(16, max - out.length);
    const b = readAvailable(fd, want, buf);
    if (b === null || b.length === 0) break;
    for (let off = 0; off + recordSize <= b.length; off += recordSize) out.push(Buffer.from(b.subarray(off, off + recordSize)));
    if (b.length < want) break; // a short read: the queue is empty now
  }
  return out;
}

/** One write to an O_NONBLOCK fd: bytes taken, or 0 when it is full (EAGAIN). */
export function writeAvailable(fd: number, data: Uint8Array): number {
  if (data.length === 0) return 0;
  return Number(checkAgain("write", () => libc.write(fd, ptr(data), data.length)) ?? 0);
}

export function writeFd(fd: number, data: Uint8Array): number {
  if (data.length === 0) return 0;
  return Number(check("write", () => libc.write(fd, ptr(data), data.length)));
}

// Linux ioctl request encoding (asm-generic/ioctl.h).
const IOC_NONE = 0, IOC_WRITE = 1, IOC_READ = 2;
function IOC(dir: number, type: number, nr: number, size: number): number {
  return ((dir << 30) | (size << 16) | (type << 8) | nr) >>> 0;
}
const t = (c: string | number) => (typeof c === "string" ? c.charCodeAt(0) : c);
export const IO = (type: string | number, nr: number) => IOC(IOC_NONE, t(type), nr, 0);
export const IOR = (type: string | number, nr: number, size: number) => IOC(IOC_READ, t(type), nr, size);
export const IOW = (type: string | number, nr: number, size: number) => IOC(IOC_WRITE, t(type), nr, size);
export const IOWR = (type: string | number, nr: number, size: number) => IOC(IOC_READ | IOC_WRITE, t(type), nr, size);

export { ptr, read, CString };
export type { Pointer };
