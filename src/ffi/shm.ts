// Shared memory (sys/mman.h, sys/shm.h, sys/eventfd.h, linux/memfd.h, fcntl seals):
// POSIX shm_open/shm_unlink, memfd_create with F_ADD_SEALS, ftruncate, mmap/munmap
// as a Buffer over the mapping, System V shmget/shmat/shmdt/shmctl, and eventfd for
// signalling a peer that a frame is ready (the fd is watched on the event source).
//
// A Mapping's buffer is a view over memory the kernel maps (bun:ffi toArrayBuffer,
// no copy). unmap() detaches that ArrayBuffer first, so a buffer kept past unmap()
// reads as empty instead of touching unmapped memory; slices taken with
// subarray() share the ArrayBuffer and are detached with it.
import { toArrayBuffer, type Pointer } from "bun:ffi";
import { O_CLOEXEC, O_CREAT, O_EXCL, O_RDWR, SysError, check, checkAgain, cstr, errno, libc, ptr } from "./libc.ts";
import type { Watch } from "./loop.ts";
import { watchItems, type ReaderOptions } from "./readers.ts";
import { Struct, scalar, struct } from "./struct.ts";

export const PROT_NONE = 0, PROT_READ = 1, PROT_WRITE = 2;
export const MAP_SHARED = 0x01, MAP_PRIVATE = 0x02, MAP_ANONYMOUS = 0x20;
export const MFD_CLOEXEC = 0x1, MFD_ALLOW_SEALING = 0x2;
export const F_ADD_SEALS = 1033, F_GET_SEALS = 1034;
export const F_SEAL_SEAL = 0x1, F_SEAL_SHRINK = 0x2, F_SEAL_GROW = 0x4, F_SEAL_WRITE = 0x8, F_SEAL_FUTURE_WRITE = 0x10;
export const IPC_PRIVATE = 0, IPC_CREAT = 0o1000, IPC_EXCL = 0o2000, IPC_RMID = 0, IPC_SET = 1, IPC_STAT = 2;
export const SHM_RDONLY = 0o10000;
export const EFD_SEMAPHORE = 0x1, EFD_NONBLOCK = 0o4000, EFD_CLOEXEC = 0o2000000;

/** Struct layouts, asserted against the C headers in test/ffi (glibc's struct shmid_ds, x86_64/aarch64 LP64). */
export const structs = {
  shmid_ds: {
    c: "struct shmid_ds", size: 112,
    fields: { shm_perm: 0, shm_segsz: 48, shm_atime: 56, shm_dtime: 64, shm_ctime: 72, shm_cpid: 80, shm_lpid: 84, shm_nattch: 88 },
  },
  ipc_perm: { c: "struct ipc_perm", size: 48, fields: { __key: 0, uid: 4, gid: 8, cuid: 12, cgid: 16, mode: 20 } },
} as const;
const S = structs;

/** sizeof(eventfd_t): an eventfd is read and written 8 bytes at a time. */
export const EVENTFD_SIZE = 8;

/** A pointer returned by mmap/shmat, or the SysError for MAP_FAILED ((void *)-1) / NULL. */
function mapped(call: string, p: Pointer | bigint | null): Pointer {
  if (p === null || typeof p === "bigint" || Number(p) === -1) throw new SysError(call, errno());
  return p;
}

/** Memory mapped into the process: `buffer` is a view over it (no copy). */
export class Mapping {
  readonly buffer: Buffer;
  private readonly ab: ArrayBuffer;
  private done = false;

  constructor(readonly address: Pointer, readonly length: number, private readonly release: (addr: Pointer, length: number) => void) {
    this.ab = toArrayBuffer(address, 0, length);
    this.buffer = Buffer.from(this.ab);
  }

  get mapped(): boolean { return !this.done; }

  /** Detaches the buffer (it reads as empty from now on) and unmaps the memory. */
  unmap(): void {
    if (this.done) return;
    this.done = true;
    (this.ab as ArrayBuffer & { transfer(n: number): ArrayBuffer }).transfer(0);
    this.release(this.address, this.length);
  }
}

export interface MmapOptions {
  /** PROT_* (default PROT_READ | PROT_WRITE) */
  prot?: number;
  /** MAP_* (default MAP_SHARED) */
  flags?: number;
  offset?: number;
}

/** mmap of `length` bytes of fd (-1 with MAP_ANONYMOUS); unmap() calls munmap. */
export function mmap(fd: number, length: number, opts: MmapOptions = {}): Mapping {
  const p = libc.mmap(null, length, opts.prot ?? PROT_READ | PROT_WRITE, opts.flags ?? MAP_SHARED, fd, opts.offset ?? 0);
  return new Mapping(mapped(`mmap(fd ${fd}, ${length})`, p as Pointer | bigint | null), length, (a, n) => {
    check("munmap", () => libc.munmap(a, n));
  });
}

/** ftruncate: sets the size of a shared memory object or memfd. */
export function ftruncate(fd: number, size: number): void {
  check(`ftruncate(${fd}, ${size})`, () => libc.ftruncate(fd, size));
}

/** shm_open: a POSIX shared memory object ("/name"); by default created exclusively, read-write. */
export function shmOpen(name: string, flags = O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode = 0o600): number {
  return check(`shm_open(${name})`, () => libc.shm_open(ptr(cstr(name)), flags, mode));
}

export function shmUnlink(name: string): void {
  check(`shm_unlink(${name})`, () => libc.shm_unlink(ptr(cstr(name))));
}

/** memfd_create: an anonymous file; MFD_ALLOW_SEALING lets addSeals() freeze it. */
export function memfdCreate(name: string, flags = MFD_CLOEXEC | MFD_ALLOW_SEALING): number {
  return check(`memfd_create(${name})`, () => libc.memfd_create(ptr(cstr(name)), flags));
}

/** fcntl(F_ADD_SEALS): F_SEAL_* bits; a sealed size refuses ftruncate with EPERM. */
export function addSeals(fd: number, seals: number): void {
  check("fcntl(F_ADD_SEALS)", () => libc.fcntl(fd, F_ADD_SEALS, seals));
}

export function getSeals(fd: number): number {
  return check("fcntl(F_GET_SEALS)", () => libc.fcntl(fd, F_GET_SEALS, 0));
}

/** shmget: a System V segment id (IPC_PRIVATE, or a key with IPC_CREAT...). */
export function shmget(key: number, size: number, flags = IPC_CREAT | 0o600): number {
  return check(`shmget(${key}, ${size})`, () => libc.shmget(key, size, flags));
}

export interface SegmentInfo { size: number; attached: number; creatorPid: number; mode: number; uid: number }

/** shmctl(IPC_STAT) */
export function shmStat(id: number): SegmentInfo {
  const ds = struct(S.shmid_ds);
  check(`shmctl(${id}, IPC_STAT)`, () => libc.shmctl(id, IPC_STAT, ptr(ds.buf)));
  const perm = ds.nested("shm_perm", S.ipc_perm);
  return {
    size: Number(ds.u64("shm_segsz")), attached: Number(ds.u64("shm_nattch")), creatorPid: ds.i32("shm_cpid"),
    mode: perm.u32("mode") & 0o777, uid: perm.u32("uid"),
  };
}

/** shmctl(IPC_RMID): the segment goes once the last process detaches. */
export function shmRemove(id: number): void {
  check(`shmctl(${id}, IPC_RMID)`, () => libc.shmctl(id, IPC_RMID, null));
}

/** shmat: the whole segment mapped; unmap() calls shmdt. */
export function shmat(id: number, flags = 0): Mapping {
  const { size } = shmStat(id);
  const p = mapped(`shmat(${id})`, libc.shmat(id, null, flags) as Pointer | bigint | null);
  return new Mapping(p, size, (a) => {
    check("shmdt", () => libc.shmdt(a));
  });
}

/** eventfd: a counter fd, non-blocking by default. */
export function eventfd(initval = 0, flags = EFD_NONBLOCK | EFD_CLOEXEC): number {
  return check("eventfd", () => libc.eventfd(initval, flags));
}

/** Adds n to the counter (wakes the peer's watch); false when it would overflow (EAGAIN). */
export function eventfdSignal(fd: number, n: bigint | number = 1n): boolean {
  const v = scalar.u64(n);
  return checkAgain("write(eventfd)", () => libc.write(fd, ptr(v), EVENTFD_SIZE)) !== null;
}

/** Takes the counter (or 1 with EFD_SEMAPHORE); null when it is zero (EAGAIN). */
export function eventfdRead(fd: number): bigint | null {
  const v = scalar.u64();
  return checkAgain("read(eventfd)", () => libc.read(fd, ptr(v), EVENTFD_SIZE)) === null ? null : v.readBigUInt64LE(0);
}

/** Calls onSignal with the counter each time the eventfd is signalled, on the event source. */
export function watchEventfd(fd: number, onSignal: (count: bigint) => void, opts?: ReaderOptions): Watch {
  return watchItems(fd, () => {
    const n = eventfdRead(fd);
    return n === null ? [] : [n];
  }, onSignal, opts);
}
