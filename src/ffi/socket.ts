// AF_UNIX stream sockets with SCM_RIGHTS (sys/socket.h, linux/socket.h), for the
// D-Bus transport: dbus-next's optional native `usocket` does not load in Bun. Also
// the one place msghdr/iovec/cmsghdr are built (netlink.ts uses it too).
// Layouts are LP64 (x86_64, aarch64); test/ffi/socket.test.ts checks them against gcc.
import { libc, check, checkAgain, ptr } from "./libc";
import { Struct, struct } from "./struct";

export const AF_UNIX = 1;
export const SOCK_STREAM = 1;
export const SOCK_CLOEXEC = 0o2000000;
export const SOL_SOCKET = 1;
export const SCM_RIGHTS = 1;
export const MSG_NOSIGNAL = 0x4000;
export const MSG_DONTWAIT = 0x40;
export const MSG_TRUNC = 0x20;
export const MSG_CTRUNC = 0x8;
export const MSG_CMSG_CLOEXEC = 0x40000000;
export const SHUT_RDWR = 2;

/** Struct layouts (size and member offsets), asserted against the C headers in test/ffi. */
export const structs = {
  sockaddr_un: { c: "struct sockaddr_un", size: 110, fields: { sun_family: 0, sun_path: 2 }, lengths: { sun_path: 108 } },
  msghdr: {
    c: "struct msghdr", size: 56,
    fields: { msg_name: 0, msg_namelen: 8, msg_iov: 16, msg_iovlen: 24, msg_control: 32, msg_controllen: 40, msg_flags: 48 },
  },
  iovec: { c: "struct iovec", size: 16, fields: { iov_base: 0, iov_len: 8 } },
  cmsghdr: { c: "struct cmsghdr", size: 16, fields: { cmsg_len: 0, cmsg_level: 8, cmsg_type: 12 } },
} as const;

export const SIZEOF_SOCKADDR_UN = structs.sockaddr_un.size;
export const SIZEOF_MSGHDR = structs.msghdr.size;
export const SIZEOF_IOVEC = structs.iovec.size;
export const SIZEOF_CMSGHDR = structs.cmsghdr.size;
export const OFFSETOF_MSGHDR = structs.msghdr.fields;

const ALIGN = 8; // sizeof(size_t): cmsg alignment on LP64 (CMSG_SPACE/CMSG_LEN are asserted in test/ffi)
export const CMSG_ALIGN = (n: number) => (n + ALIGN - 1) & ~(ALIGN - 1);
export const CMSG_SPACE = (n: number) => CMSG_ALIGN(SIZEOF_CMSGHDR) + CMSG_ALIGN(n);
export const CMSG_LEN = (n: number) => CMSG_ALIGN(SIZEOF_CMSGHDR) + n;

/** Most fds carried by one message (the D-Bus reference limit per message is larger; ours is enough). */
export const MAX_FDS = 32;

/** sockaddr_un for a filesystem path or, with `abstract`, a Linux abstract name. */
export function sockaddrUn(path: string, abstract = false): { buf: Buffer; len: number } {
  const sa = struct(structs.sockaddr_un).setU16("sun_family", AF_UNIX);
  const name = Buffer.from(path, "utf8");
  const room = sa.len("sun_path") - 1;
  if (name.length + (abstract ? 1 : 0) > room) throw new Error(`socket path too long: ${path}`);
  const at = sa.off("sun_path") + (abstract ? 1 : 0);
  name.copy(sa.buf, at);
  return { buf: sa.buf, len: at + name.length + (abstract ? 0 : 1) };
}

/** Connects a blocking AF_UNIX stream socket; returns its fd. */
export function connectUnix(path: string, abstract = false): number {
  const fd = check("socket", () => libc.socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const { buf, len } = sockaddrUn(path, abstract);
  try {
    check(`connect(${path})`, () => libc.connect(fd, ptr(buf), len));
  } catch (e) {
    libc.close(fd);
    throw e;
  }
  return fd;
}

/** A control message: level, type and its data. */
export interface Cmsg { level: number; type: number; data: Buffer }

/** A control buffer holding the given messages (CMSG_SPACE each). */
export function encodeCmsgs(msgs: { level: number; type: number; data: Uint8Array }[]): Buffer {
  const out = Buffer.alloc(msgs.reduce((n, m) => n + CMSG_SPACE(m.data.length), 0));
  let off = 0;
  for (const m of msgs) {
    new Struct(structs.cmsghdr, out, off).setU64("cmsg_len", CMSG_LEN(m.data.length)).setI32("cmsg_level", m.level).setI32("cmsg_type", m.type);
    out.set(m.data, off + CMSG_LEN(0));
    off += CMSG_SPACE(m.data.length);
  }
  return out;
}

/** The control messages in the first controllen bytes of a control buffer. */
export function decodeCmsgs(control: Buffer, controllen: number): Cmsg[] {
  const out: Cmsg[] = [];
  for (let off = 0; off + SIZEOF_CMSGHDR <= controllen;) {
    const h = new Struct(structs.cmsghdr, control, off);
    const len = Number(h.u64("cmsg_len"));
    if (len < CMSG_LEN(0) || off + len > controllen) break;
    out.push({ level: h.i32("cmsg_level"), type: h.i32("cmsg_type"), data: control.subarray(off + CMSG_LEN(0), off + len) });
    off += CMSG_ALIGN(len);
  }
  return out;
}

const fdsCmsg = (fds: number[]) => {
  const data = Buffer.alloc(4 * fds.length);
  fds.forEach((f, i) => data.writeInt32LE(f, 4 * i));
  return encodeCmsgs([{ level: SOL_SOCKET, type: SCM_RIGHTS, data }]);
};

/**
 * A struct msghdr with its iovecs, for sendmsg/recvmsg. It holds the buffers it
 * points to, so they stay alive as long as it does.
 */
export class MsgHdr {
  readonly hdr = struct(structs.msghdr);
  private readonly iovs: Buffer;

  constructor(readonly iov: Uint8Array[], readonly control: Buffer | null = null, readonly name: Buffer | null = null) {
    this.iovs = Struct.array(structs.iovec, iov.length);
    iov.forEach((b, i) => Struct.at(structs.iovec, this.iovs, i).setPtr("iov_base", b).setU64("iov_len", b.length));
    this.hdr.setPtr("msg_iov", this.iovs).setU64("msg_iovlen", iov.length);
    if (name) this.hdr.setPtr("msg_name", name).setU32("msg_namelen", name.length);
    this.reset();
  }

  /** Restores the lengths the kernel rewrites on recvmsg (control and name). */
  reset(): void {
    if (this.control) this.hdr.setPtr("msg_control", this.control).setU64("msg_controllen", this.control.length);
    if (this.name) this.hdr.setU32("msg_namelen", this.name.length);
  }

  get controllen(): number { return Number(this.hdr.u64("msg_controllen")); }
  get flags(): number { return this.hdr.i32("msg_flags"); }
  /** The control messages the kernel returned. */
  cmsgs(): Cmsg[] { return this.control ? decodeCmsgs(this.control, this.controllen) : []; }
  get ptr() { return ptr(this.hdr.buf); }
}

/**
 * Writes all of `data`; `fds` travel with the first byte (as D-Bus requires).
 * Blocking socket: returns when the kernel took every byte.
 */
export function sendAll(fd: number, data: Uint8Array, fds: number[] = []): void {
  let off = 0;
  let pendingFds = fds;
  while (off < data.length) {
    const msg = new MsgHdr([data.subarray(off)], pendingFds.length ? fdsCmsg(pendingFds) : null);
    off += Number(check("sendmsg", () => libc.sendmsg(fd, msg.ptr, MSG_NOSIGNAL)));
    pendingFds = [];
  }
}

/** Receive buffers kept for one socket: reused across recvmsg calls. */
export class Receiver {
  private data: Buffer;
  private msg: MsgHdr;
  constructor(private fd: number, size = 65536) {
    this.data = Buffer.alloc(size);
    this.msg = new MsgHdr([this.data], Buffer.alloc(CMSG_SPACE(4 * MAX_FDS)));
  }
  /** Non-blocking recvmsg: null when nothing is there yet (EAGAIN), else as recv(). */
  tryRecv(): { data: Buffer; fds: number[] } | null {
    return this.recv(MSG_DONTWAIT);
  }
  /** Blocking recvmsg: bytes (empty at end of stream) and any fds that came with them. */
  recv(flags?: number): { data: Buffer; fds: number[] };
  recv(flags = 0): { data: Buffer; fds: number[] } | null {
    this.msg.reset();
    const call = () => libc.recvmsg(this.fd, this.msg.ptr, MSG_CMSG_CLOEXEC | flags);
    const r = flags & MSG_DONTWAIT ? checkAgain("recvmsg", call) : check("recvmsg", call);
    if (r === null) return null;
    const fds: number[] = [];
    for (const c of this.msg.cmsgs()) {
      if (c.level === SOL_SOCKET && c.type === SCM_RIGHTS) for (let p = 0; p + 4 <= c.data.length; p += 4) fds.push(c.data.readInt32LE(p));
    }
    return { data: Buffer.from(this.data.subarray(0, Number(r))), fds };
  }
}

/**
 * One non-blocking sendmsg of `data` with `fds` (fds go with the first byte): the
 * number of bytes the kernel took, or 0 when the socket is full (EAGAIN).
 */
export function trySend(fd: number, data: Uint8Array, fds: number[] = []): number {
  const msg = new MsgHdr([data], fds.length ? fdsCmsg(fds) : null);
  return Number(checkAgain("sendmsg", () => libc.sendmsg(fd, msg.ptr, MSG_NOSIGNAL | MSG_DONTWAIT)) ?? 0);
}

export function shutdownSocket(fd: number): void {
  libc.shutdown(fd, SHUT_RDWR);
}
