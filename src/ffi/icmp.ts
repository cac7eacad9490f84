// ICMP and ICMPv6 echo (netinet/in.h, linux/icmp.h, linux/icmpv6.h, linux/errqueue.h):
// one echo request over a socket opened through bun:ffi, its answer awaited on the
// platform's event source (loop.ts), never with a blocking recv.
//
// Sockets: a raw socket (SOCK_RAW, IPPROTO_ICMP / IPPROTO_ICMPV6) when the process
// may open one (CAP_NET_RAW), else a "ping socket" (SOCK_DGRAM with the same
// protocol, allowed to the groups in net.ipv4.ping_group_range). The differences:
// - raw IPv4 receives the IP header (the TTL is read from it) and every ICMP message
//   of the namespace: replies are matched by identifier, sequence and source, and
//   errors (destination unreachable, time exceeded) by the echo they quote;
// - a ping socket receives only its own replies (the kernel sets the identifier to
//   the socket's port) and hears of errors through IP_RECVERR / IPV6_RECVERR: the
//   error queue (MSG_ERRQUEUE, a sock_extended_err control message) and the
//   socket's pending error; the TTL and hop limit come as IP_TTL / IPV6_HOPLIMIT
//   control messages (IP_RECVTTL / IPV6_RECVHOPLIMIT).
// The kernel fills the ICMPv6 checksum; the ICMPv4 one is computed here.
import { SysError, check, checkAgain, closeFd, errno, libc, ptr } from "./libc.ts";
import { loopReady, watch, type Watch } from "./loop.ts";
import { CMSG_SPACE, MSG_DONTWAIT, MsgHdr } from "./socket.ts";
import { Struct, scalar, struct } from "./struct.ts";
import { addressBytes, addressText } from "./netlink.ts";

export const AF_INET = 2, AF_INET6 = 10, SOCK_DGRAM = 2, SOCK_RAW = 3, SOCK_NONBLOCK = 0o4000, SOCK_CLOEXEC = 0o2000000;
export const IPPROTO_IP = 0, IPPROTO_ICMP = 1, IPPROTO_IPV6 = 41, IPPROTO_ICMPV6 = 58;
export const SOL_SOCKET = 1, SO_BINDTODEVICE = 25;
export const IP_TTL = 2, IP_RECVERR = 11, IP_RECVTTL = 12;
export const IPV6_RECVERR = 25, IPV6_RECVHOPLIMIT = 51, IPV6_HOPLIMIT = 52;
export const MSG_ERRQUEUE = 0x2000;
export const ICMP_ECHOREPLY = 0, ICMP_DEST_UNREACH = 3, ICMP_ECHO = 8, ICMP_TIME_EXCEEDED = 11;
export const ICMPV6_DEST_UNREACH = 1, ICMPV6_TIME_EXCEED = 3, ICMPV6_ECHO_REQUEST = 128, ICMPV6_ECHO_REPLY = 129;
export const SO_EE_ORIGIN_LOCAL = 1, SO_EE_ORIGIN_ICMP = 2, SO_EE_ORIGIN_ICMP6 = 3;

import { EACCES, ECONNREFUSED, EHOSTDOWN, EHOSTUNREACH, EINVAL, ENETDOWN, ENETUNREACH, EPERM, EPROTO } from "./errno.ts";

export const structs = {
  sockaddr_in: { c: "struct sockaddr_in", size: 16, fields: { sin_family: 0, sin_port: 2, sin_addr: 4 }, lengths: { sin_addr: 4 } },
  sockaddr_in6: {
    c: "struct sockaddr_in6", size: 28,
    fields: { sin6_family: 0, sin6_port: 2, sin6_flowinfo: 4, sin6_addr: 8, sin6_scope_id: 24 }, lengths: { sin6_addr: 16 },
  },
  icmphdr: {
    c: "struct icmphdr", size: 8,
    fields: { type: 0, code: 1, checksum: 2, "un.echo.id": 4, "un.echo.sequence": 6 },
  },
  icmp6hdr: {
    c: "struct icmp6hdr", size: 8,
    fields: { icmp6_type: 0, icmp6_code: 1, icmp6_cksum: 2, "icmp6_dataun.u_echo.identifier": 4, "icmp6_dataun.u_echo.sequence": 6 },
  },
  iphdr: { c: "struct iphdr", size: 20, fields: { tot_len: 2, ttl: 8, protocol: 9, saddr: 12, daddr: 16 } },
  ipv6hdr: { c: "struct ipv6hdr", size: 40, fields: { payload_len: 4, nexthdr: 6, hop_limit: 7, saddr: 8, daddr: 24 } },
  sock_extended_err: {
    c: "struct sock_extended_err", size: 16,
    fields: { ee_errno: 0, ee_origin: 4, ee_type: 5, ee_code: 6, ee_pad: 7, ee_info: 8, ee_data: 12 },
  },
} as const;
const S = structs;

/** The Internet checksum (RFC 1071) of b. */
export function inetChecksum(b: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i + 1 < b.length; i += 2) sum += (b[i]! << 8) | b[i + 1]!;
  if (b.length & 1) sum += b[b.length - 1]! << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/** An echo request (type 8 or 128) with id, sequence and payload; the IPv4 checksum filled in. */
export function encodeEcho(family: number, id: number, seq: number, payload: Uint8Array): Buffer {
  const b = Buffer.alloc(S.icmphdr.size + payload.length);
  if (family === AF_INET) {
    new Struct(S.icmphdr, b).setU8("type", ICMP_ECHO).setU8("code", 0);
    b.writeUInt16BE(id, S.icmphdr.fields["un.echo.id"]);
    b.writeUInt16BE(seq, S.icmphdr.fields["un.echo.sequence"]);
    b.set(payload, S.icmphdr.size);
    b.writeUInt16BE(inetChecksum(b), S.icmphdr.fields.checksum);
  } else {
    new Struct(S.icmp6hdr, b).setU8("icmp6_type", ICMPV6_ECHO_REQUEST).setU8("icmp6_code", 0);
    b.writeUInt16BE(id, S.icmp6hdr.fields["icmp6_dataun.u_echo.identifier"]);
    b.writeUInt16BE(seq, S.icmp6hdr.fields["icmp6_dataun.u_echo.sequence"]);
    b.set(payload, S.icmp6hdr.size);
  }
  return b;
}

/** A sockaddr_in / sockaddr_in6 for an address in text form. */
export function sockaddrIn(address: string): { family: number; buf: Buffer } {
  const a = addressBytes(address);
  if (!a) throw new RangeError(`not an IP address: ${address}`);
  if (a.length === 4) {
    const sa = struct(S.sockaddr_in).setU16("sin_family", AF_INET);
    sa.buf.set(a, sa.off("sin_addr"));
    return { family: AF_INET, buf: sa.buf };
  }
  const sa = struct(S.sockaddr_in6).setU16("sin6_family", AF_INET6);
  sa.buf.set(a, sa.off("sin6_addr"));
  return { family: AF_INET6, buf: sa.buf };
}

export type SocketKind = "raw" | "dgram";

/**
 * Opens a non-blocking ICMP (family AF_INET) or ICMPv6 (AF_INET6) socket: raw when
 * allowed and asked for ("auto" tries raw first), else a ping socket.
 */
export function openIcmpSocket(family: number, kind: SocketKind | "auto" = "auto"): { fd: number; kind: SocketKind } {
  const proto = family === AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6;
  const open = (type: number) => libc.socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
  if (kind !== "dgram") {
    const fd = open(SOCK_RAW);
    if (fd >= 0) return { fd, kind: "raw" };
    const e = errno();
    if (kind === "raw" || (e !== EPERM && e !== EACCES)) throw new SysError("socket(SOCK_RAW)", e);
  }
  const fd = open(SOCK_DGRAM);
  if (fd < 0) throw new SysError("socket(SOCK_DGRAM)", errno());
  return { fd, kind: "dgram" };
}

function setInt(fd: number, level: number, opt: number, value: number, what: string): void {
  const v = scalar.i32(value);
  check(`setsockopt(${what})`, () => libc.setsockopt(fd, level, opt, ptr(v), v.length));
}

/** SO_BINDTODEVICE: the socket sends and receives through this interface only. */
export function bindToDevice(fd: number, ifName: string): void {
  const name = Buffer.from(ifName + "\0");
  check(`setsockopt(SO_BINDTODEVICE, ${ifName})`, () => libc.setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ptr(name), name.length));
}

export interface EchoOptions {
  /** The destination, an IPv4 or IPv6 address in text form (its family picks ICMP or ICMPv6). */
  address: string;
  /** Send through this interface (SO_BINDTODEVICE). */
  ifName?: string;
  /** How long to wait for the answer (ms). */
  timeoutMs: number;
  /** Socket kind; "auto" (default) tries raw, then a ping socket. */
  kind?: SocketKind | "auto";
  /** Payload bytes after the 8-byte header (default 56: 64-byte messages, as ping(8)). */
  payloadSize?: number;
}

export type EchoResult =
  | { ok: true; address: string; timeMs: number; bytes: number; ttl?: number; kind: SocketKind }
  /** No answer in time. */
  | { ok: false; reason: "timeout"; kind: SocketKind }
  /** The kernel refused to send (no route: errno) or an ICMP error came back for the echo. */
  | { ok: false; reason: "unreachable"; errno?: number; icmpType?: number; icmpCode?: number; from?: string; kind: SocketKind };

let nextId = (Math.random() * 0xffff) | 0;

/**
 * Sends one echo request and resolves with the reply, an ICMP error quoting the
 * request, or a timeout. Fails (rejects with SysError) when the socket cannot be
 * opened or bound to the interface.
 */
export async function echo(opts: EchoOptions): Promise<EchoResult> {
  // The event source's thread is up before the clock starts (the first echo of a process).
  await loopReady();
  const dst = sockaddrIn(opts.address);
  const family = dst.family;
  const v4 = family === AF_INET;
  const dstBytes = addressBytes(opts.address)!;
  const { fd, kind } = openIcmpSocket(family, opts.kind ?? "auto");
  let w: Watch | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    if (timer) clearTimeout(timer);
    w?.close();
    closeFd(fd);
  };
  try {
    if (opts.ifName) bindToDevice(fd, opts.ifName);
    if (v4) {
      if (kind === "dgram") {
        setInt(fd, IPPROTO_IP, IP_RECVTTL, 1, "IP_RECVTTL");
        setInt(fd, IPPROTO_IP, IP_RECVERR, 1, "IP_RECVERR");
      }
    } else {
      setInt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1, "IPV6_RECVHOPLIMIT");
      if (kind === "dgram") setInt(fd, IPPROTO_IPV6, IPV6_RECVERR, 1, "IPV6_RECVERR");
    }
  } catch (e) {
    close();
    throw e;
  }

  nextId = (nextId + 1) & 0xffff;
  const id = nextId;
  const seq = 1;
  const payload = Buffer.alloc(opts.payloadSize ?? 56);
  for (let i = 0; i < payload.length; i++) payload[i] = i & 0xff;
  const request = encodeEcho(family, id, seq, payload);

  return new Promise<EchoResult>((resolve, reject) => {
    const finish = (r: EchoResult | Error) => {
      if (closed) return;
      close();
      if (r instanceof Error) reject(r);
      else resolve(r);
    };
    const rx = Buffer.alloc(65536);
    const from = Buffer.alloc(S.sockaddr_in6.size);
    const msg = new MsgHdr([rx], Buffer.alloc(CMSG_SPACE(64) * 2), from);

    /** The echo quoted by an ICMP error (after the error's 8-byte header) is ours. */
    const quotesOurs = (inner: Buffer): boolean => {
      if (v4) {
        if (inner.length < S.iphdr.size) return false;
        const ihl = (inner[0]! & 0x0f) * 4;
        const ip = new Struct(S.iphdr, inner);
        if (ip.u8("protocol") !== IPPROTO_ICMP || inner.length < ihl + 8) return false;
        if (!inner.subarray(S.iphdr.fields.daddr, S.iphdr.fields.daddr + 4).equals(dstBytes)) return false;
        const e = inner.subarray(ihl);
        return e[0] === ICMP_ECHO && e.readUInt16BE(4) === id && e.readUInt16BE(6) === seq;
      }
      if (inner.length < S.ipv6hdr.size + 8) return false;
      const ip = new Struct(S.ipv6hdr, inner);
      if (ip.u8("nexthdr") !== IPPROTO_ICMPV6) return false;
      if (!inner.subarray(S.ipv6hdr.fields.daddr, S.ipv6hdr.fields.daddr + 16).equals(dstBytes)) return false;
      const e = inner.subarray(S.ipv6hdr.size);
      return e[0] === ICMPV6_ECHO_REQUEST && e.readUInt16BE(4) === id && e.readUInt16BE(6) === seq;
    };

    const fromAddress = () => {
      const fam = from.readUInt16LE(0);
      if (fam === AF_INET) return addressText(from.subarray(S.sockaddr_in.fields.sin_addr, S.sockaddr_in.fields.sin_addr + 4));
      if (fam === AF_INET6) return addressText(from.subarray(S.sockaddr_in6.fields.sin6_addr, S.sockaddr_in6.fields.sin6_addr + 16));
      return "";
    };

    /** One datagram of the normal queue. */
    const onDatagram = (n: number, now: number): EchoResult | undefined => {
      let data = rx.subarray(0, n);
      let ttl: number | undefined;
      for (const c of msg.cmsgs()) {
        if (c.level === IPPROTO_IP && c.type === IP_TTL && c.data.length >= 4) ttl = c.data.readInt32LE(0);
        if (c.level === IPPROTO_IPV6 && c.type === IPV6_HOPLIMIT && c.data.length >= 4) ttl = c.data.readInt32LE(0);
      }
      const src = fromAddress();
      if (v4 && kind === "raw") {
        if (data.length < S.iphdr.size) return undefined;
        ttl = new Struct(S.iphdr, data).u8("ttl");
        data = data.subarray((data[0]! & 0x0f) * 4);
      }
      if (data.length < 8) return undefined;
      const type = data[0]!, code = data[1]!;
      const replyType = v4 ? ICMP_ECHOREPLY : ICMPV6_ECHO_REPLY;
      if (type === replyType) {
        // A ping socket gets only its own replies, with the identifier the kernel chose.
        if (data.readUInt16BE(6) !== seq || (kind === "raw" && data.readUInt16BE(4) !== id)) return undefined;
        if (src !== addressText(dstBytes)) return undefined;
        const r: EchoResult = { ok: true, address: src, timeMs: now - sentAt, bytes: data.length, kind };
        if (ttl !== undefined) r.ttl = ttl;
        return r;
      }
      const isError = v4 ? type === ICMP_DEST_UNREACH || type === ICMP_TIME_EXCEEDED : type === ICMPV6_DEST_UNREACH || type === ICMPV6_TIME_EXCEED;
      if (kind === "raw" && isError && quotesOurs(data.subarray(8))) {
        return { ok: false, reason: "unreachable", icmpType: type, icmpCode: code, from: src, kind };
      }
      return undefined;
    };

    /** One entry of the error queue (ping sockets): the ICMP error the kernel matched to this socket. */
    const onQueuedError = (n: number): EchoResult | undefined => {
      for (const c of msg.cmsgs()) {
        const isErr = (c.level === IPPROTO_IP && c.type === IP_RECVERR) || (c.level === IPPROTO_IPV6 && c.type === IPV6_RECVERR);
        if (!isErr || c.data.length < S.sock_extended_err.size) continue;
        const ee = new Struct(S.sock_extended_err, c.data);
        const origin = ee.u8("ee_origin");
        // The offending echo is the datagram itself: ours when its sequence is ours.
        const offender = rx.subarray(0, n);
        if (offender.length >= 8 && offender.readUInt16BE(6) !== seq) continue;
        if (origin === SO_EE_ORIGIN_ICMP || origin === SO_EE_ORIGIN_ICMP6) {
          return { ok: false, reason: "unreachable", errno: ee.u32("ee_errno"), icmpType: ee.u8("ee_type"), icmpCode: ee.u8("ee_code"), kind };
        }
        return { ok: false, reason: "unreachable", errno: ee.u32("ee_errno"), kind };
      }
      return undefined;
    };

    const UNREACHABLE = new Set([ENETUNREACH, EHOSTUNREACH, ECONNREFUSED, EPROTO, ENETDOWN, EHOSTDOWN]);

    const drain = () => {
      const now = performance.now();
      for (let i = 0; i < 256 && !closed; i++) {
        msg.reset();
        let n: number | bigint | null;
        try {
          n = checkAgain("recvmsg(icmp)", () => libc.recvmsg(fd, msg.ptr, MSG_DONTWAIT));
        } catch (e) {
          // The socket's pending error: a ping socket's own (an ICMP error for its
          // echo); on a raw socket it may be another echo's, so it is only read off.
          const err = (e as SysError).errno;
          if (kind === "dgram" && UNREACHABLE.has(err)) return finish({ ok: false, reason: "unreachable", errno: err, kind });
          continue;
        }
        if (n === null) break;
        const r = onDatagram(Number(n), now);
        if (r) return finish(r);
      }
      if (kind !== "dgram") return;
      for (let i = 0; i < 64 && !closed; i++) {
        msg.reset();
        const n = checkAgain("recvmsg(MSG_ERRQUEUE)", () => libc.recvmsg(fd, msg.ptr, MSG_DONTWAIT | MSG_ERRQUEUE));
        if (n === null) break;
        const r = onQueuedError(Number(n));
        if (r) return finish(r);
      }
    };

    let sentAt = 0;
    try {
      w = watch(fd, { readable: () => { try { drain(); } catch (e) { finish(e as Error); } } });
      const out = new MsgHdr([request], null, dst.buf);
      sentAt = performance.now();
      const sent = libc.sendmsg(fd, out.ptr, MSG_DONTWAIT);
      if (Number(sent) < 0) {
        const e = errno();
        if (UNREACHABLE.has(e) || e === EINVAL /* e.g. no IPv6 on the bound link */) return finish({ ok: false, reason: "unreachable", errno: e, kind });
        return finish(new SysError("sendmsg(icmp)", e));
      }
    } catch (e) {
      return finish(e as Error);
    }
    timer = setTimeout(() => finish({ ok: false, reason: "timeout", kind }), opts.timeoutMs);
  });
}
