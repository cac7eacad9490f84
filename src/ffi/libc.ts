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
  memfd_create: { args: [P, u32], returns: i32 },
  ftruncate: { args: [i32, i64], returns: i32 },
  lseek: { args: [i32, i64, i32], returns: i64 },
  mmap: { args: [P, u64, i32, i32, i32, i64], returns: P },
  munmap: { args: [P, u64], returns: i32 },
  shm_open: { args: [P, i32, u32], returns: i32 },
  shm_unlink: { args: [P], returns: i32 },
  reboot: { args: [i32], returns: i32 },
  sync: { args: [], returns: FFIType.void },
}).symbols;

export function errno(): number {
  return read.i32(libc.__errno_location() as Pointer, 0);
}

/** An error carrying the C errno, thrown by check(). */
export class SysError extends Error {
  constructor(public readonly call: string, public readonly errno: number) {
    super(`${call}: ${String(libc.strerror(errno))} (errno ${errno})`);
  }
}

export const EINTR = 4;
export const EAGAIN = 11;

/** Throws SysError for a -1 return; retries EINTR. */
export function check<T extends number | bigint>(call: string, fn: () => T): T {
  for (;;) {
    const r = fn();
    if (Number(r) !== -1) return r;
    const e = errno();
    if (e !== EINTR) throw new SysError(call, e);
  }
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

export function readFd(fd: number, size: number): Buffer {
  const buf = Buffer.alloc(size);
  const n = Number(check("read", () => libc.read(fd, ptr(buf), size)));
  return buf.subarray(0, n);
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
