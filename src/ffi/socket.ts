// AF_UNIX stream sockets with SCM_RIGHTS (sys/socket.h, linux/socket.h), for the
// D-Bus transport: dbus-next's optional native `usocket` does not load in Bun.
// Layouts are LP64 (x86_64, aarch64); test/ffi/socket.test.ts checks them against gcc.
import { libc, check, ptr, SysError, errno, EINTR, EAGAIN } from "./libc";

export const AF_UNIX = 1;
export const SOCK_STREAM = 1;
export const SOCK_CLOEXEC = 0o2000000;
export const SOL_SOCKET = 1;
export const SCM_RIGHTS = 1;
export const MSG_NOSIGNAL = 0x4000;
export const MSG_DONTWAIT = 0x40;
export const MSG_CMSG_CLOEXEC = 0x40000000;
export const SHUT_RDWR = 2;

export const SIZEOF_SOCKADDR_UN = 110;
export const SIZEOF_MSGHDR = 56;
export const SIZEOF_IOVEC = 16;
export const SIZEOF_CMSGHDR = 16;
export const OFFSETOF_MSGHDR = { msg_name: 0, msg_namelen: 8, msg_iov: 16, msg_iovlen: 24, msg_control: 32, msg_controllen: 40, msg_flags: 48 };

/** Struct layouts (size and member offsets), asserted against the C headers in test/ffi. */
export const structs = {
  sockaddr_un: { c: "struct sockaddr_un", size: SIZEOF_SOCKADDR_UN, fields: { sun_family: 0, sun_path: 2 } },
  msghdr: { c: "struct msghdr", size: SIZEOF_MSGHDR, fields: OFFSETOF_MSGHDR },
  iovec: { c: "struct iovec", size: SIZEOF_IOVEC, fields: { iov_base: 0, iov_len: 8 } },
  cmsghdr: { c: "struct cmsghdr", size: SIZEOF_CMSGHDR, fields: { cmsg_len: 0, cmsg_level: 8, cmsg_type: 12 } },
};

export const CMSG_ALIGN = (n: number) => (n + 7) & ~7;
export const CMSG_SPACE = (n: number) => SIZEOF_CMSGHDR + CMSG_ALIGN(n);
export const CMSG_LEN = (n: number) => SIZEOF_CMSGHDR + n;

/** Most fds carried by one message (the D-Bus reference limit per message is larger; ours is enough). */
export const MAX_FDS = 32;

/** sockaddr_un for a filesystem path or, with `abstract`, a Linux abstract name. */
export function sockaddrUn(path: string, abstract = false): { buf: Buffer; len: number } {
  const buf = Buffer.alloc(SIZEOF_SOCKADDR_UN);
  buf.writeUInt16LE(AF_UNIX, 0);
  const name = Buffer.from(path, "utf8");
  if (name.length + (abstract ? 1 : 0) > 107) throw new Error(`socket path too long: ${path}`);
  name.copy(buf, abstract ? 3 : 2);
  return { buf, len: abstract ? 3 + name.length : 2 + name.length + 1 };
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

function buildMsghdr(data: Uint8Array, control: Uint8Array | null) {
  const iov = Buffer.alloc(SIZEOF_IOVEC);
  iov.writeBigUInt64LE(BigInt(data.length ? ptr(data) : 0), 0);
  iov.writeBigUInt64LE(BigInt(data.length), 8);
  const msg = Buffer.alloc(SIZEOF_MSGHDR);
  msg.writeBigUInt64LE(BigInt(ptr(iov)), OFFSETOF_MSGHDR.msg_iov);
  msg.writeBigUInt64LE(1n, OFFSETOF_MSGHDR.msg_iovlen);
  if (control) {
    msg.writeBigUInt64LE(BigInt(ptr(control)), OFFSETOF_MSGHDR.msg_control);
    msg.writeBigUInt64LE(BigInt(control.length), OFFSETOF_MSGHDR.msg_controllen);
  }
  return { msg, iov };
}

/**
 * Writes all of `data`; `fds` travel with the first byte (as D-Bus requires).
 * Blocking socket: returns when the kernel took every byte.
 */
export function sendAll(fd: number, data: Uint8Array, fds: number[] = []): void {
  let off = 0;
  let pendingFds = fds;
  while (off < data.length) {
    const chunk = data.subarray(off);
    let control: Buffer | null = null;
    if (pendingFds.length) {
      control = Buffer.alloc(CMSG_SPACE(4 * pendingFds.length));
      control.writeBigUInt64LE(BigInt(CMSG_LEN(4 * pendingFds.length)), 0);
      control.writeInt32LE(SOL_SOCKET, 8);
      control.writeInt32LE(SCM_RIGHTS, 12);
      pendingFds.forEach((f, i) => control!.writeInt32LE(f, SIZEOF_CMSGHDR + 4 * i));
    }
    const { msg, iov } = buildMsghdr(chunk, control);
    const n = Number(check("sendmsg", () => libc.sendmsg(fd, ptr(msg), MSG_NOSIGNAL)));
    void iov;
    off += n;
    pendingFds = [];
  }
}

/** Receive buffers kept for one socket: reused across recvmsg calls. */
export class Receiver {
  private data: Buffer;
  private control = Buffer.alloc(CMSG_SPACE(4 * MAX_FDS));
  private msg: Buffer;
  private iov: Buffer;
  constructor(private fd: number, size = 65536) {
    this.data = Buffer.alloc(size);
    ({ msg: this.msg, iov: this.iov } = buildMsghdr(this.data, this.control));
  }
  /** Non-blocking recvmsg: null when nothing is there yet (EAGAIN), else as recv(). */
  tryRecv(): { data: Buffer; fds: number[] } | null {
    return this.recv(MSG_DONTWAIT);
  }
  /** Blocking recvmsg: bytes (empty at end of stream) and any fds that came with them. */
  recv(flags?: number): { data: Buffer; fds: number[] };
  recv(flags = 0): { data: Buffer; fds: number[] } | null {
    this.msg.writeBigUInt64LE(BigInt(this.control.length), OFFSETOF_MSGHDR.msg_controllen);
    let n: number;
    for (;;) {
      n = Number(libc.recvmsg(this.fd, ptr(this.msg), MSG_CMSG_CLOEXEC | flags));
      if (n >= 0) break;
      const e = errno();
      if (e === EAGAIN && flags & MSG_DONTWAIT) return null;
      if (e !== EINTR) throw new SysError("recvmsg", e);
    }
    const fds: number[] = [];
    const controllen = Number(this.msg.readBigUInt64LE(OFFSETOF_MSGHDR.msg_controllen));
    let off = 0;
    while (off + SIZEOF_CMSGHDR <= controllen) {
      const len = Number(this.control.readBigUInt64LE(off));
      const level = this.control.readInt32LE(off + 8);
      const type = this.control.readInt32LE(off + 12);
      if (len < SIZEOF_CMSGHDR) break;
      if (level === SOL_SOCKET && type === SCM_RIGHTS) {
        for (let p = off + SIZEOF_CMSGHDR; p + 4 <= off + len; p += 4) fds.push(this.control.readInt32LE(p));
      }
      off += CMSG_ALIGN(len);
    }
    void this.iov;
    return { data: Buffer.from(this.data.subarray(0, n)), fds };
  }
}

/**
 * One non-blocking sendmsg of `data` with `fds` (fds go with the first byte): the
 * number of bytes the kernel took, or 0 when the socket is full (EAGAIN).
 */
export function trySend(fd: number, data: Uint8Array, fds: number[] = []): number {
  let control: Buffer | null = null;
  if (fds.length) {
    control = Buffer.alloc(CMSG_SPACE(4 * fds.length));
    control.writeBigUInt64LE(BigInt(CMSG_LEN(4 * fds.length)), 0);
    control.writeInt32LE(SOL_SOCKET, 8);
    control.writeInt32LE(SCM_RIGHTS, 12);
    fds.forEach((f, i) => control!.writeInt32LE(f, SIZEOF_CMSGHDR + 4 * i));
  }
  const { msg, iov } = buildMsghdr(data, control);
  for (;;) {
    const n = Number(libc.sendmsg(fd, ptr(msg), MSG_NOSIGNAL | MSG_DONTWAIT));
    void iov;
    if (n >= 0) return n;
    const e = errno();
    if (e === EAGAIN) return 0;
    if (e !== EINTR) throw new SysError("sendmsg", e);
  }
}

export function shutdownSocket(fd: number): void {
  libc.shutdown(fd, SHUT_RDWR);
}

