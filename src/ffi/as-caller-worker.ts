// The thread that touches the file system with a caller's rights (as-caller.ts).
// Linux keeps credentials per thread and the raw syscalls below change this thread's
// alone (glibc's setgroups/setfsuid wrappers would broadcast to every thread): for
// each request it takes the caller's supplementary groups, fsgid and fsuid, makes the
// one call, and takes its own back before the next. The kernel then decides as it
// would for the caller: permissions, ownership of what is created, sticky bits.
import { dlopen, FFIType, ptr, read, type Pointer } from "bun:ffi";

declare const self: Worker;

const { i64, ptr: P } = FFIType;
const c = dlopen("libc.so.6", {
  syscall: { args: [i64, i64, i64, i64, i64], returns: i64 },
  __errno_location: { args: [], returns: P },
  getuid: { args: [], returns: FFIType.u32 },
  getgid: { args: [], returns: FFIType.u32 },
}).symbols;

// Syscall numbers (asm/unistd.h): x86-64 and the generic table (arm64).
const NR =
  process.arch === "arm64"
    ? { setgroups: 159, setfsuid: 151, setfsgid: 152, getgroups: 158, unlinkat: 35, openat2: 437, faccessat2: 439, mkdirat: 34, fstat: 80, close: 57 }
    : { setgroups: 116, setfsuid: 122, setfsgid: 123, getgroups: 115, unlinkat: 263, openat2: 437, faccessat2: 439, mkdirat: 258, fstat: 5, close: 3 };
/** st_mode's offset in struct stat (asm/stat.h: x86-64; asm-generic/stat.h: arm64). */
const ST_MODE = process.arch === "arm64" ? 16 : 24;
const S_IFMT = 0o170000, S_IFREG = 0o100000, S_IFDIR = 0o040000;
const O_NONBLOCK = 0o4000;
import { ENXIO, EPERM } from "./errno";
const AT_FDCWD = -100;
const AT_EACCESS = 0x200;
const AT_REMOVEDIR = 0x200;

const errno = () => read.i32(c.__errno_location() as Pointer, 0);
const sys = (nr: number, a = 0, b = 0, d = 0, e = 0): [number, number] => {
  const r = Number(c.syscall(nr, a, b, d, e));
  return [r, r === -1 ? errno() : 0];
};
const addr = (buf: Uint8Array) => Number(ptr(buf));
const cstr = (s: string) => Buffer.from(s + "\0", "utf8");

// This thread's own identity, restored after every request.
const ownUid = c.getuid();
const ownGid = c.getgid();
const ownGroups = (() => {
  const buf = new Uint32Array(65536);
  const [n] = sys(NR.getgroups, buf.length, addr(new Uint8Array(buf.buffer)));
  return buf.slice(0, Math.max(0, n));
})();

function setGroups(list: Uint32Array): number {
  const [r, e] = sys(NR.setgroups, list.length, list.length ? addr(new Uint8Array(list.buffer, list.byteOffset, list.byteLength)) : 0);
  return r === -1 ? e : 0;
}

/** Takes the identity; 0, or the errno (EPERM: this process may not take it). */
function become(uid: number, gid: number, groups: number[]): number {
  if (uid === ownUid && gid === ownGid && groups.length === ownGroups.length && groups.every((g, i) => g === ownGroups[i])) return 0;
  const e = setGroups(Uint32Array.from(groups));
  if (e) return e;
  sys(NR.setfsgid, gid);
  sys(NR.setfsuid, uid);
  // setfsuid/setfsgid cannot fail loudly: read them back (-1 changes nothing and returns the current one).
  const [fsuid] = sys(NR.setfsuid, -1);
  const [fsgid] = sys(NR.setfsgid, -1);
  return fsuid === uid && fsgid === gid ? 0 : EPERM;
}

function restore(): void {
  sys(NR.setfsuid, ownUid);
  sys(NR.setfsgid, ownGid);
  setGroups(ownGroups);
}

export interface Request {
  id: number;
  op: "open" | "unlink" | "rmdir" | "access" | "mkdir";
  uid: number;
  gid: number;
  groups: number[];
  path: string;
  flags?: number;
  mode?: number;
  resolve?: number;
}

function run(q: Request): { fd?: number; errno: number } {
  const p = cstr(q.path);
  switch (q.op) {
    case "open": {
      // struct open_how { u64 flags; u64 mode; u64 resolve; } (linux/openat2.h).
      // Always O_NONBLOCK: a FIFO or device put where a file was expected must not hold
      // this thread (every service's file operations wait on it); what is not a
      // regular file or a directory is refused (ENXIO).
      const how = new BigUint64Array([BigInt((q.flags ?? 0) | O_NONBLOCK), BigInt(q.mode ?? 0), BigInt(q.resolve ?? 0)]);
      const [fd, e] = sys(NR.openat2, AT_FDCWD, addr(p), addr(new Uint8Array(how.buffer)), 24);
      if (fd < 0) return { errno: e };
      const st = new Uint8Array(256);
      const [r, se] = sys(NR.fstat, fd, addr(st));
      const type = r === 0 ? new DataView(st.buffer).getUint32(ST_MODE, true) & S_IFMT : -1;
      if (type !== S_IFREG && type !== S_IFDIR) {
        sys(NR.close, fd);
        return { errno: r === 0 ? ENXIO : se };
      }
      return { fd, errno: 0 };
    }
    case "unlink":
    case "rmdir": {
      const [r, e] = sys(NR.unlinkat, AT_FDCWD, addr(p), q.op === "rmdir" ? AT_REMOVEDIR : 0);
      return { errno: r === -1 ? e : 0 };
    }
    case "mkdir": {
      const [r, e] = sys(NR.mkdirat, AT_FDCWD, addr(p), q.mode ?? 0o755);
      return { errno: r === -1 ? e : 0 };
    }
    case "access": {
      const [r, e] = sys(NR.faccessat2, AT_FDCWD, addr(p), q.mode ?? 0, AT_EACCESS);
      return { errno: r === -1 ? e : 0 };
    }
  }
}

self.onmessage = (ev: MessageEvent<Request>) => {
  const q = ev.data;
  const e = become(q.uid, q.gid, q.groups);
  if (e) {
    restore();
    self.postMessage({ id: q.id, errno: e, identity: true });
    return;
  }
  let out: { fd?: number; errno: number };
  try {
    out = run(q);
  } finally {
    restore();
  }
  self.postMessage({ id: q.id, ...out });
};
