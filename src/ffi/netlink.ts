// rtnetlink (linux/netlink.h, linux/rtnetlink.h, linux/if_link.h, linux/if_addr.h):
// an AF_NETLINK NETLINK_ROUTE socket for listing, creating (VLAN and other kinds),
// bringing up and deleting links, listing and adding addresses (RTM_*ADDR) and
// routes (RTM_*ROUTE), and for the kernel's multicast notifications (RTNLGRP_LINK, ...).
//
// The socket is non-blocking and read on the platform's event source (loop.ts):
// request() sends and returns a promise, settled by the ack, the reply or the end
// of a dump (NLMSG_DONE) when the event source reports the socket readable; answers
// are matched to requests by sequence number, and a request that gets no answer in
// time is rejected (ETIMEDOUT). Kernel errors arrive as NLMSG_ERROR and are thrown
// as NetlinkError with the errno and, when the kernel gives one, its extended-ack
// message. Multicast messages (told apart by NETLINK_PKTINFO) go to subscribe()rs.
import { SysError, check, checkAgain, closeFd, errno, libc, ptr } from "./libc.ts";
import { watch, type Watch } from "./loop.ts";
import { CMSG_SPACE, MSG_DONTWAIT, MSG_TRUNC, MsgHdr } from "./socket.ts";
import { Struct, scalar, struct } from "./struct.ts";

export const AF_UNSPEC = 0, AF_NETLINK = 16, SOCK_RAW = 3, SOCK_NONBLOCK = 0o4000, SOCK_CLOEXEC = 0o2000000, SOL_NETLINK = 270;
export const NETLINK_ROUTE = 0, NETLINK_ADD_MEMBERSHIP = 1, NETLINK_DROP_MEMBERSHIP = 2, NETLINK_PKTINFO = 3,
  NETLINK_CAP_ACK = 10, NETLINK_EXT_ACK = 11;

export const NLM_F_REQUEST = 0x01, NLM_F_MULTI = 0x02, NLM_F_ACK = 0x04, NLM_F_ECHO = 0x08, NLM_F_ROOT = 0x100,
  NLM_F_MATCH = 0x200, NLM_F_DUMP = 0x300, NLM_F_EXCL = 0x200, NLM_F_CREATE = 0x400, NLM_F_CAPPED = 0x100,
  NLM_F_ACK_TLVS = 0x200;
export const NLMSG_NOOP = 1, NLMSG_ERROR = 2, NLMSG_DONE = 3, NLMSGERR_ATTR_MSG = 1;
export const NLMSG_ALIGNTO = 4, NLA_ALIGNTO = 4;
export const RTM_NEWLINK = 16, RTM_DELLINK = 17, RTM_GETLINK = 18;
export const RTM_NEWADDR = 20, RTM_DELADDR = 21, RTM_GETADDR = 22, RTM_NEWROUTE = 24, RTM_DELROUTE = 25, RTM_GETROUTE = 26;
export const AF_INET = 2, AF_INET6 = 10;
/** linux/if_addr.h: ifaddrmsg attributes. */
export const IFA_ADDRESS = 1, IFA_LOCAL = 2, IFA_LABEL = 3, IFA_BROADCAST = 4;
/** linux/rtnetlink.h: rtmsg attributes, tables, protocols, scopes and route types. */
export const RTA_DST = 1, RTA_OIF = 4, RTA_GATEWAY = 5, RTA_PRIORITY = 6, RTA_PREFSRC = 7, RTA_TABLE = 15;
export const RT_TABLE_MAIN = 254, RTPROT_KERNEL = 2, RTPROT_BOOT = 3, RTPROT_STATIC = 4;
export const RT_SCOPE_UNIVERSE = 0, RT_SCOPE_LINK = 253, RT_SCOPE_HOST = 254;
export const RTN_UNICAST = 1, RTN_BLACKHOLE = 6, RTN_UNREACHABLE = 7;
export const IFLA_ADDRESS = 1, IFLA_IFNAME = 3, IFLA_MTU = 4, IFLA_LINK = 5, IFLA_OPERSTATE = 16, IFLA_LINKINFO = 18;
export const IFLA_INFO_KIND = 1, IFLA_INFO_DATA = 2;
export const IFLA_VLAN_ID = 1, IFLA_VLAN_PROTOCOL = 5;
export const IFF_UP = 0x1, IFF_LOOPBACK = 0x8, IFF_RUNNING = 0x40;
export const ETH_P_8021Q = 0x8100, ETH_P_8021AD = 0x88a8;
export const NLA_F_NESTED = 1 << 15, NLA_F_NET_BYTEORDER = 1 << 14;
/** Multicast groups (enum rtnetlink_groups), for subscribe(). */
export const RTNLGRP_LINK = 1, RTNLGRP_NEIGH = 3, RTNLGRP_IPV4_IFADDR = 5, RTNLGRP_IPV4_ROUTE = 7,
  RTNLGRP_IPV6_IFADDR = 9, RTNLGRP_IPV6_ROUTE = 11;
/** The legacy bind() masks of the same groups (RTMGRP_* = 1 << (RTNLGRP_* - 1)). */
export const RTMGRP_LINK = 0x1, RTMGRP_NEIGH = 0x4, RTMGRP_IPV4_IFADDR = 0x10, RTMGRP_IPV4_ROUTE = 0x40,
  RTMGRP_IPV6_IFADDR = 0x100, RTMGRP_IPV6_ROUTE = 0x400;

import { EBADF, ENOBUFS, ENODEV, EMSGSIZE, ETIMEDOUT } from "./errno.ts";

export const structs = {
  sockaddr_nl: { c: "struct sockaddr_nl", size: 12, fields: { nl_family: 0, nl_pad: 2, nl_pid: 4, nl_groups: 8 } },
  nlmsghdr: { c: "struct nlmsghdr", size: 16, fields: { nlmsg_len: 0, nlmsg_type: 4, nlmsg_flags: 6, nlmsg_seq: 8, nlmsg_pid: 12 } },
  nlmsgerr: { c: "struct nlmsgerr", size: 20, fields: { error: 0, msg: 4 } },
  nl_pktinfo: { c: "struct nl_pktinfo", size: 4, fields: { group: 0 } },
  ifinfomsg: {
    c: "struct ifinfomsg", size: 16,
    fields: { ifi_family: 0, __ifi_pad: 1, ifi_type: 2, ifi_index: 4, ifi_flags: 8, ifi_change: 12 },
  },
  rtattr: { c: "struct rtattr", size: 4, fields: { rta_len: 0, rta_type: 2 } },
  ifaddrmsg: {
    c: "struct ifaddrmsg", size: 8,
    fields: { ifa_family: 0, ifa_prefixlen: 1, ifa_flags: 2, ifa_scope: 3, ifa_index: 4 },
  },
  rtmsg: {
    c: "struct rtmsg", size: 12,
    fields: { rtm_family: 0, rtm_dst_len: 1, rtm_src_len: 2, rtm_tos: 3, rtm_table: 4, rtm_protocol: 5, rtm_scope: 6, rtm_type: 7, rtm_flags: 8 },
  },
} as const;
const S = structs;

const HDR = S.nlmsghdr.size, IFI = S.ifinfomsg.size, RTA = S.rtattr.size;
const nlmsgAlign = (n: number) => (n + NLMSG_ALIGNTO - 1) & ~(NLMSG_ALIGNTO - 1);
const nlaAlign = (n: number) => (n + NLA_ALIGNTO - 1) & ~(NLA_ALIGNTO - 1);
/** NLA_TYPE_MASK: the attribute type without NLA_F_NESTED / NLA_F_NET_BYTEORDER. */
const NLA_TYPE_MASK = ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER) & 0xffff;

/** An error answered by the kernel (NLMSG_ERROR), with the extended-ack text when present. */
export class NetlinkError extends SysError {
  constructor(call: string, errno: number, public readonly extAck?: string) {
    super(call, errno);
    if (extAck) this.message += `: ${extAck}`;
  }
}

/** A netlink attribute; nested attributes carry a list. */
export type Attr = { type: number; value: Uint8Array | Attr[] };

export const attr = {
  str: (type: number, s: string): Attr => ({ type, value: Buffer.from(s + "\0") }),
  u8: (type: number, v: number): Attr => ({ type, value: scalar.u8(v) }),
  u16: (type: number, v: number): Attr => { const b = Buffer.alloc(2); b.writeUInt16LE(v); return { type, value: b }; },
  be16: (type: number, v: number): Attr => { const b = Buffer.alloc(2); b.writeUInt16BE(v); return { type, value: b }; },
  u32: (type: number, v: number): Attr => ({ type, value: scalar.u32(v) }),
  nest: (type: number, attrs: Attr[]): Attr => ({ type, value: attrs }),
};

export function encodeAttrs(attrs: Attr[]): Buffer {
  const parts: Buffer[] = [];
  for (const a of attrs) {
    const payload = Array.isArray(a.value) ? encodeAttrs(a.value) : Buffer.from(a.value);
    const h = struct(S.rtattr).setU16("rta_len", RTA + payload.length).setU16("rta_type", a.type);
    parts.push(h.buf, payload, Buffer.alloc(nlaAlign(payload.length) - payload.length));
  }
  return Buffer.concat(parts);
}

/** Attributes of a message body, by type (the last one wins; NLA_F_* bits masked off). */
export function parseAttrs(b: Buffer, off = 0, end = b.length): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  while (off + RTA <= end) {
    const h = new Struct(S.rtattr, b, off);
    const len = h.u16("rta_len");
    if (len < RTA || off + len > end) break;
    out.set(h.u16("rta_type") & NLA_TYPE_MASK, b.subarray(off + RTA, off + len));
    off += nlaAlign(len);
  }
  return out;
}

export interface IfInfo { family?: number; type?: number; index?: number; flags?: number; change?: number }

export function encodeIfinfomsg(i: IfInfo): Buffer {
  return struct(S.ifinfomsg).setU8("ifi_family", i.family ?? AF_UNSPEC).setU16("ifi_type", i.type ?? 0)
    .setI32("ifi_index", i.index ?? 0).setU32("ifi_flags", i.flags ?? 0).setU32("ifi_change", i.change ?? 0).buf;
}

/** A message received from the kernel. */
export interface NlMessage { type: number; flags: number; seq: number; pid: number; body: Buffer }

/** A netlink message: header (length, type, flags | NLM_F_REQUEST, seq) and body. */
export function encodeMessage(type: number, flags: number, seq: number, body: Uint8Array): Buffer {
  const h = new Struct(S.nlmsghdr, Buffer.alloc(HDR + body.length));
  h.setU32("nlmsg_len", HDR + body.length).setU16("nlmsg_type", type).setU16("nlmsg_flags", flags | NLM_F_REQUEST).setU32("nlmsg_seq", seq);
  h.buf.set(body, HDR);
  return h.buf;
}

/** The messages of one datagram. */
export function decodeMessages(b: Buffer, n = b.length): NlMessage[] {
  const out: NlMessage[] = [];
  for (let off = 0; off + HDR <= n;) {
    const h = new Struct(S.nlmsghdr, b, off);
    const len = h.u32("nlmsg_len");
    if (len < HDR || off + len > n) break;
    out.push({
      type: h.u16("nlmsg_type"), flags: h.u16("nlmsg_flags"), seq: h.u32("nlmsg_seq"), pid: h.u32("nlmsg_pid"),
      body: Buffer.from(b.subarray(off + HDR, off + len)),
    });
    off += nlmsgAlign(len);
  }
  return out;
}

/** The errno of an NLMSG_ERROR (0 for an ack) or of a dump's NLMSG_DONE (0 when it ended well). */
const errorOf = (m: NlMessage) => (m.body.length >= 4 ? -m.body.readInt32LE(S.nlmsgerr.fields.error) : 0);

/** The NLMSGERR_ATTR_MSG text of an extended ack (NLMSG_ERROR, or NLMSG_DONE of a failed dump). */
function extAck(m: NlMessage): string | undefined {
  if (!(m.flags & NLM_F_ACK_TLVS)) return undefined;
  let off: number;
  if (m.type === NLMSG_DONE) off = 4; // int error, then the TLVs
  else {
    // struct nlmsgerr, then the rest of the request unless capped, then the TLVs.
    off = S.nlmsgerr.size;
    if (!(m.flags & NLM_F_CAPPED)) off = S.nlmsgerr.fields.msg + nlmsgAlign(new Struct(S.nlmsgerr, m.body).nested("msg", S.nlmsghdr).u32("nlmsg_len"));
  }
  const msg = parseAttrs(m.body, off).get(NLMSGERR_ATTR_MSG);
  return msg ? msg.toString("utf8").replace(/\0.*$/s, "") : undefined;
}

export interface RequestOptions {
  /** Milliseconds before the request is rejected with ETIMEDOUT (default RtNetlink.timeoutMs). */
  timeoutMs?: number;
}

interface Pending {
  call: string;
  dump: boolean;
  wantAck: boolean;
  out: NlMessage[];
  resolve: (m: NlMessage[]) => void;
  reject: (e: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

interface Listener {
  groups: Set<number>;
  onMessage: (m: NlMessage, group: number) => void;
  onError?: (e: Error) => void;
}

/** A multicast subscription; close() leaves its groups (unless other subscriptions want them). */
export interface Subscription { close(): void }

/**
 * A bound, non-blocking NETLINK_ROUTE socket. It is watched on the event source
 * only while a request is pending or a subscription is open, so an idle socket does
 * not keep the process alive.
 */
export class RtNetlink {
  /** Default request timeout in milliseconds. */
  static timeoutMs = 5000;
  readonly fd: number;
  private seq = Math.floor(Date.now() / 1000) & 0x7fffffff;
  private readonly rx = Buffer.alloc(1 << 16);
  private readonly from = struct(S.sockaddr_nl);
  private readonly rmsg: MsgHdr;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Set<Listener>();
  private readonly members = new Map<number, number>();
  private w: Watch | null = null;
  private closed = false;

  constructor() {
    this.fd = check("socket(AF_NETLINK)", () => libc.socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE));
    try {
      const sa = struct(S.sockaddr_nl).setU16("nl_family", AF_NETLINK);
      check("bind(AF_NETLINK)", () => libc.bind(this.fd, ptr(sa.buf), sa.buf.length));
      // Extended acks give the kernel's reason; capped acks skip echoing our request
      // back; PKTINFO tells multicast messages (their group) from answers (group 0).
      for (const opt of [NETLINK_EXT_ACK, NETLINK_CAP_ACK, NETLINK_PKTINFO]) this.setOpt(opt, 1, opt === NETLINK_PKTINFO);
    } catch (e) {
      closeFd(this.fd);
      throw e;
    }
    this.rmsg = new MsgHdr([this.rx], Buffer.alloc(CMSG_SPACE(S.nl_pktinfo.size)), this.from.buf);
  }

  private setOpt(opt: number, value: number, required = true): void {
    const v = scalar.i32(value);
    if (libc.setsockopt(this.fd, SOL_NETLINK, opt, ptr(v), v.length) !== 0 && required) {
      throw new SysError(`setsockopt(SOL_NETLINK, ${opt})`, errno());
    }
  }

  /** Rejects pending requests, ends subscriptions and closes the socket. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.failAll(new SysError("netlink socket closed", EBADF));
    this.listeners.clear();
    this.w?.close();
    this.w = null;
    closeFd(this.fd);
  }

  /**
   * Sends one request; resolves with the kernel's answers (the messages of a dump, or
   * the reply of a GET; [] for an ack) and rejects with NetlinkError on NLMSG_ERROR
   * with a non-zero error, or ETIMEDOUT when no answer came in time.
   */
  request(call: string, type: number, flags: number, body: Uint8Array, opts: RequestOptions = {}): Promise<NlMessage[]> {
    if (this.closed) return Promise.reject(new SysError(call, EBADF));
    const seq = (this.seq = (this.seq + 1) >>> 0 || 1);
    const msg = encodeMessage(type, flags, seq, body);
    return new Promise<NlMessage[]>((resolve, reject) => {
      const timeoutMs = opts.timeoutMs ?? RtNetlink.timeoutMs;
      const p: Pending = {
        call, dump: (flags & NLM_F_DUMP) === NLM_F_DUMP, wantAck: (flags & NLM_F_ACK) !== 0, out: [], resolve, reject,
        timer: setTimeout(() => this.settle(seq, new NetlinkError(`${call}: no answer in ${timeoutMs} ms`, ETIMEDOUT)), timeoutMs),
      };
      this.pending.set(seq, p);
      try {
        this.send(call, msg);
      } catch (e) {
        this.settle(seq, e as Error);
        return;
      }
      this.update();
    });
  }

  /**
   * Joins multicast groups (RTNLGRP_*) and calls onMessage for each notification of
   * them, on the event source. onError hears of receive errors (ENOBUFS: the socket
   * overran and notifications were lost; re-read the state).
   */
  subscribe(groups: number[], onMessage: (m: NlMessage, group: number) => void, onError?: (e: Error) => void): Subscription {
    if (this.closed) throw new SysError("subscribe", EBADF);
    const l: Listener = { groups: new Set(groups), onMessage, onError };
    for (const g of l.groups) {
      const n = this.members.get(g) ?? 0;
      if (n === 0) this.setOpt(NETLINK_ADD_MEMBERSHIP, g);
      this.members.set(g, n + 1);
    }
    this.listeners.add(l);
    this.update();
    return {
      close: () => {
        if (!this.listeners.delete(l)) return;
        for (const g of l.groups) {
          const n = (this.members.get(g) ?? 1) - 1;
          if (n === 0) {
            this.members.delete(g);
            if (!this.closed) this.setOpt(NETLINK_DROP_MEMBERSHIP, g, false);
          } else this.members.set(g, n);
        }
        this.update();
      },
    };
  }

  /** Watched while someone waits for the socket. */
  private update(): void {
    const need = !this.closed && (this.pending.size > 0 || this.listeners.size > 0);
    if (need && !this.w) this.w = watch(this.fd, { readable: () => this.onReadable() });
    else if (!need && this.w) {
      this.w.close();
      this.w = null;
    }
  }

  private send(call: string, msg: Buffer): void {
    const kernel = struct(S.sockaddr_nl).setU16("nl_family", AF_NETLINK);
    const mh = new MsgHdr([msg], null, kernel.buf);
    check(`${call}: sendmsg`, () => libc.sendmsg(this.fd, mh.ptr, 0));
  }

  /** Reads datagrams until EAGAIN (at most a batch; the watch reports the rest). */
  private onReadable(): void {
    for (let i = 0; i < 64 && !this.closed; i++) {
      this.rmsg.reset();
      let n: number | bigint | null;
      try {
        n = checkAgain("recvmsg(netlink)", () => libc.recvmsg(this.fd, this.rmsg.ptr, MSG_DONTWAIT));
      } catch (e) {
        this.receiveError(e as SysError);
        continue;
      }
      if (n === null) break;
      const len = Number(n);
      let group = 0;
      for (const c of this.rmsg.cmsgs()) {
        if (c.level === SOL_NETLINK && c.type === NETLINK_PKTINFO && c.data.length >= S.nl_pktinfo.size) {
          group = new Struct(S.nl_pktinfo, c.data).u32("group");
        }
      }
      const msgs = decodeMessages(this.rx, Math.min(len, this.rx.length));
      if (this.rmsg.flags & MSG_TRUNC) {
        const seq = msgs[0]?.seq ?? new Struct(S.nlmsghdr, this.rx).u32("nlmsg_seq");
        if (group === 0) this.settle(seq, new SysError("recvmsg(netlink): message larger than the receive buffer", EMSGSIZE));
        continue;
      }
      if (group !== 0) this.deliver(msgs, group);
      else for (const m of msgs) this.answer(m);
    }
    this.update();
  }

  private receiveError(e: SysError): void {
    for (const l of this.listeners) l.onError?.(e);
    // ENOBUFS drops notifications, not necessarily answers: pending requests keep
    // waiting (their timeout bounds them). Anything else ends them.
    if (e.errno !== ENOBUFS) this.failAll(e);
  }

  private deliver(msgs: NlMessage[], group: number): void {
    for (const l of [...this.listeners]) {
      if (!l.groups.has(group)) continue;
      for (const m of msgs) {
        try {
          l.onMessage(m, group);
        } catch (err) {
          console.error("netlink: a subscriber failed:", err);
        }
      }
    }
  }

  private answer(m: NlMessage): void {
    const p = this.pending.get(m.seq);
    if (!p) return; // a late answer to a request that timed out, or not ours
    if (m.type === NLMSG_ERROR || m.type === NLMSG_DONE) {
      const err = errorOf(m);
      this.settle(m.seq, err !== 0 ? new NetlinkError(p.call, err, extAck(m)) : null);
      return;
    }
    if (m.type === NLMSG_NOOP) return;
    p.out.push(m);
    if (!p.dump && !p.wantAck && !(m.flags & NLM_F_MULTI)) this.settle(m.seq, null);
  }

  private settle(seq: number, err: Error | null): void {
    const p = this.pending.get(seq);
    if (!p) return;
    this.pending.delete(seq);
    clearTimeout(p.timer);
    if (err) p.reject(err);
    else p.resolve(p.out);
    this.update();
  }

  private failAll(e: Error): void {
    for (const seq of [...this.pending.keys()]) this.settle(seq, e);
  }
}

export interface Link {
  index: number;
  name: string;
  /** ARPHRD_* */
  type: number;
  /** IFF_* */
  flags: number;
  mtu?: number;
  /** Hardware address, as aa:bb:... */
  address?: string;
  operstate?: number;
  /** IFLA_LINK: the lower device (a VLAN's parent). */
  parentIndex?: number;
  /** IFLA_INFO_KIND: "vlan", "dummy", "veth", ... */
  kind?: string;
  vlanId?: number;
  vlanProtocol?: number;
}

export function decodeLink(body: Buffer): Link {
  const a = parseAttrs(body, IFI);
  const ifi = new Struct(S.ifinfomsg, body);
  const link: Link = {
    index: ifi.i32("ifi_index"), type: ifi.u16("ifi_type"), flags: ifi.u32("ifi_flags"),
    name: a.get(IFLA_IFNAME)?.toString("utf8").replace(/\0.*$/s, "") ?? "",
  };
  const mtu = a.get(IFLA_MTU), parent = a.get(IFLA_LINK), addr = a.get(IFLA_ADDRESS), oper = a.get(IFLA_OPERSTATE);
  if (mtu) link.mtu = mtu.readUInt32LE(0);
  if (parent) link.parentIndex = parent.readUInt32LE(0);
  if (addr) link.address = [...addr].map((x) => x.toString(16).padStart(2, "0")).join(":");
  if (oper) link.operstate = oper[0];
  const info = a.get(IFLA_LINKINFO);
  if (info) {
    const ia = parseAttrs(info);
    const kind = ia.get(IFLA_INFO_KIND);
    if (kind) link.kind = kind.toString("utf8").replace(/\0.*$/s, "");
    const data = ia.get(IFLA_INFO_DATA);
    if (data && link.kind === "vlan") {
      const va = parseAttrs(data);
      const id = va.get(IFLA_VLAN_ID), proto = va.get(IFLA_VLAN_PROTOCOL);
      if (id) link.vlanId = id.readUInt16LE(0);
      if (proto) link.vlanProtocol = proto.readUInt16BE(0);
    }
  }
  return link;
}

async function withSocket<T>(nl: RtNetlink | undefined, fn: (nl: RtNetlink) => Promise<T>): Promise<T> {
  if (nl) return fn(nl);
  const own = new RtNetlink();
  try {
    return await fn(own);
  } finally {
    own.close();
  }
}

const byNameOrIndex = (link: string | number, extra: IfInfo = {}) => Buffer.concat([
  encodeIfinfomsg({ ...extra, index: typeof link === "number" ? link : 0 }),
  typeof link === "number" ? Buffer.alloc(0) : encodeAttrs([attr.str(IFLA_IFNAME, link)]),
]);

/** RTM_GETLINK dump: every link in the network namespace. */
export async function listLinks(nl?: RtNetlink): Promise<Link[]> {
  const msgs = await withSocket(nl, (s) => s.request("RTM_GETLINK", RTM_GETLINK, NLM_F_DUMP, encodeIfinfomsg({})));
  return msgs.filter((m) => m.type === RTM_NEWLINK).map((m) => decodeLink(m.body));
}

/** RTM_GETLINK for one link by name or index; undefined when there is none. */
export async function getLink(nameOrIndex: string | number, nl?: RtNetlink): Promise<Link | undefined> {
  try {
    const [m] = await withSocket(nl, (s) => s.request("RTM_GETLINK", RTM_GETLINK, 0, byNameOrIndex(nameOrIndex)));
    return m ? decodeLink(m.body) : undefined;
  } catch (e) {
    if (e instanceof SysError && e.errno === ENODEV) return undefined;
    throw e;
  }
}

export async function linkExists(name: string, nl?: RtNetlink): Promise<boolean> {
  return (await getLink(name, nl)) !== undefined;
}

async function indexOf(link: string | number, s: RtNetlink): Promise<number> {
  if (typeof link === "number") return link;
  const l = await getLink(link, s);
  if (!l) throw new NetlinkError(`link ${link}`, ENODEV);
  return l.index;
}

export interface NewLink {
  name: string;
  /** IFLA_INFO_KIND, e.g. "dummy", "vlan", "veth" */
  kind: string;
  /** The lower device (IFLA_LINK), by name or index. */
  parent?: string | number;
  mtu?: number;
  /** IFLA_INFO_DATA attributes for the kind. */
  data?: Attr[];
  /** kind "veth": the name of the other end (VETH_INFO_PEER: an ifinfomsg and its IFLA_IFNAME). */
  peer?: string;
}

/** VETH_INFO_PEER (linux/veth.h). */
export const VETH_INFO_PEER = 1;

/** RTM_NEWLINK with NLM_F_CREATE|NLM_F_EXCL: creates a link; fails with EEXIST when the name is taken. */
export async function createLink(link: NewLink, nl?: RtNetlink): Promise<void> {
  await withSocket(nl, async (s) => {
    const info: Attr[] = [attr.str(IFLA_INFO_KIND, link.kind)];
    const data = [...(link.data ?? [])];
    if (link.peer !== undefined) {
      data.push({ type: VETH_INFO_PEER, value: Buffer.concat([encodeIfinfomsg({}), encodeAttrs([attr.str(IFLA_IFNAME, link.peer)])]) });
    }
    if (data.length) info.push(attr.nest(IFLA_INFO_DATA, data));
    const attrs: Attr[] = [attr.str(IFLA_IFNAME, link.name), attr.nest(IFLA_LINKINFO, info)];
    if (link.parent !== undefined) attrs.push(attr.u32(IFLA_LINK, await indexOf(link.parent, s)));
    if (link.mtu !== undefined) attrs.push(attr.u32(IFLA_MTU, link.mtu));
    await s.request(`RTM_NEWLINK ${link.name}`, RTM_NEWLINK, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
      Buffer.concat([encodeIfinfomsg({}), encodeAttrs(attrs)]));
  });
}

/** Creates VLAN `vlanId` (1..4094) on parent as link `name` (8021q); a bad id rejects with RangeError. */
export async function createVlan(
  parent: string | number, name: string, vlanId: number, opts: { protocol?: number } = {}, nl?: RtNetlink,
): Promise<void> {
  if (!Number.isInteger(vlanId) || vlanId < 1 || vlanId > 4094) throw new RangeError(`VLAN id 1..4094: ${vlanId}`);
  const data = [attr.u16(IFLA_VLAN_ID, vlanId)];
  if (opts.protocol !== undefined) data.push(attr.be16(IFLA_VLAN_PROTOCOL, opts.protocol));
  await createLink({ name, kind: "vlan", parent, data }, nl);
}

/** RTM_DELLINK by name or index. */
export async function deleteLink(link: string | number, nl?: RtNetlink): Promise<void> {
  await withSocket(nl, (s) => s.request(`RTM_DELLINK ${link}`, RTM_DELLINK, NLM_F_ACK, byNameOrIndex(link)));
}

/** Sets or clears IFF_UP. */
export async function setLinkUp(link: string | number, up: boolean, nl?: RtNetlink): Promise<void> {
  await withSocket(nl, async (s) => {
    const body = encodeIfinfomsg({ index: await indexOf(link, s), flags: up ? IFF_UP : 0, change: IFF_UP });
    await s.request(`RTM_NEWLINK ${link} ${up ? "up" : "down"}`, RTM_NEWLINK, NLM_F_ACK, body);
  });
}

export interface LinkEvent {
  /** RTM_NEWLINK (added or changed) or RTM_DELLINK */
  type: typeof RTM_NEWLINK | typeof RTM_DELLINK;
  link: Link;
}

/**
 * Link notifications (RTNLGRP_LINK) on the event source: every link added, changed
 * or removed in the namespace. Without a socket it opens its own, closed with the
 * subscription.
 */
export function watchLinks(onEvent: (ev: LinkEvent) => void, nl?: RtNetlink, onError?: (e: Error) => void): Subscription {
  const s = nl ?? new RtNetlink();
  const sub = s.subscribe([RTNLGRP_LINK], (m) => {
    if (m.type === RTM_NEWLINK || m.type === RTM_DELLINK) onEvent({ type: m.type, link: decodeLink(m.body) });
  }, onError);
  return {
    close: () => {
      sub.close();
      if (!nl) s.close();
    },
  };
}

// Addresses and routes (RTM_*ADDR, RTM_*ROUTE).

/** An IPv4 or IPv6 address in text form as its bytes (4 or 16); undefined when it is neither. */
export function addressBytes(text: string): Buffer | undefined {
  const v4 = parseIPv4(text);
  if (v4) return v4;
  return parseIPv6(text);
}

function parseIPv4(text: string): Buffer | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!m) return undefined;
  const b = m.slice(1).map(Number);
  if (b.some((x, i) => x > 255 || (m[i + 1]!.length > 1 && m[i + 1]!.startsWith("0")))) return undefined;
  return Buffer.from(b);
}

function parseIPv6(text: string): Buffer | undefined {
  if (!/^[0-9a-fA-F:.]+$/.test(text) || text.length > 45) return undefined;
  let head = text, tail = "";
  const dbl = text.indexOf("::");
  if (dbl >= 0) {
    if (text.indexOf("::", dbl + 1) >= 0) return undefined;
    head = text.slice(0, dbl);
    tail = text.slice(dbl + 2);
  }
  const words = (s: string): number[] | undefined => {
    if (s === "") return [];
    const out: number[] = [];
    const parts = s.split(":");
    for (const [i, p] of parts.entries()) {
      if (i === parts.length - 1 && p.includes(".")) {
        const v4 = parseIPv4(p);
        if (!v4) return undefined;
        out.push(v4.readUInt16BE(0), v4.readUInt16BE(2));
      } else if (/^[0-9a-fA-F]{1,4}$/.test(p)) out.push(parseInt(p, 16));
      else return undefined;
    }
    return out;
  };
  const h = words(head), t = words(tail);
  if (!h || !t) return undefined;
  if (dbl < 0 ? h.length !== 8 : h.length + t.length > 7) return undefined;
  const all = [...h, ...Array(8 - h.length - t.length).fill(0), ...t];
  const b = Buffer.alloc(16);
  all.forEach((w, i) => b.writeUInt16BE(w, 2 * i));
  return b;
}

/** Text form of a 4- or 16-byte address (IPv6 compressed as RFC 5952). */
export function addressText(b: Uint8Array): string {
  if (b.length === 4) return [...b].join(".");
  const w = Array.from({ length: 8 }, (_, i) => (b[2 * i]! << 8) | b[2 * i + 1]!);
  let best = -1, bestLen = 1;
  for (let i = 0; i < 8;) {
    if (w[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && w[j] === 0) j++;
    if (j - i > bestLen) { best = i; bestLen = j - i; }
    i = j;
  }
  const hex = w.map((x) => x.toString(16));
  if (best < 0) return hex.join(":");
  return `${hex.slice(0, best).join(":")}::${hex.slice(best + bestLen).join(":")}`;
}

export interface Address {
  /** The link's index. */
  index: number;
  family: number;
  prefixLen: number;
  scope: number;
  /** IFA_LOCAL when present (the interface's own address), else IFA_ADDRESS. */
  address: string;
  /** IFA_ADDRESS: the peer on point-to-point links, else the same as address. */
  peer?: string;
  broadcast?: string;
  label?: string;
}

export function decodeAddress(body: Buffer): Address {
  const ifa = new Struct(S.ifaddrmsg, body);
  const a = parseAttrs(body, S.ifaddrmsg.size);
  const local = a.get(IFA_LOCAL), addr = a.get(IFA_ADDRESS), brd = a.get(IFA_BROADCAST), label = a.get(IFA_LABEL);
  const out: Address = {
    index: ifa.u32("ifa_index"), family: ifa.u8("ifa_family"), prefixLen: ifa.u8("ifa_prefixlen"), scope: ifa.u8("ifa_scope"),
    address: addressText(local ?? addr ?? Buffer.alloc(0)),
  };
  if (addr) out.peer = addressText(addr);
  if (brd) out.broadcast = addressText(brd);
  if (label) out.label = label.toString("utf8").replace(/\0.*$/s, "");
  return out;
}

/** RTM_GETADDR dump: the addresses of the namespace, of one family (AF_INET, AF_INET6) or all. */
export async function listAddresses(family = AF_UNSPEC, nl?: RtNetlink): Promise<Address[]> {
  const body = struct(S.ifaddrmsg).setU8("ifa_family", family).buf;
  const msgs = await withSocket(nl, (s) => s.request("RTM_GETADDR", RTM_GETADDR, NLM_F_DUMP, body));
  return msgs.filter((m) => m.type === RTM_NEWADDR).map((m) => decodeAddress(m.body)).filter((a) => family === AF_UNSPEC || a.family === family);
}

export interface NewAddress {
  /** IPv4 or IPv6 address in text form. */
  address: string;
  prefixLen: number;
  /** IPv4 broadcast (IFA_BROADCAST), text form. */
  broadcast?: string;
}

function familyOf(b: Buffer): number {
  return b.length === 4 ? AF_INET : AF_INET6;
}

function mustAddress(text: string): Buffer {
  const b = addressBytes(text);
  if (!b) throw new RangeError(`not an IPv4 or IPv6 address: ${text}`);
  return b;
}

/** RTM_NEWADDR (NLM_F_CREATE|NLM_F_EXCL): adds an address to a link; EEXIST when it is there. */
export async function addAddress(link: string | number, a: NewAddress, nl?: RtNetlink): Promise<void> {
  const addr = mustAddress(a.address);
  const family = familyOf(addr);
  if (!Number.isInteger(a.prefixLen) || a.prefixLen < 0 || a.prefixLen > addr.length * 8) throw new RangeError(`prefix length: ${a.prefixLen}`);
  await withSocket(nl, async (s) => {
    const ifa = struct(S.ifaddrmsg).setU8("ifa_family", family).setU8("ifa_prefixlen", a.prefixLen)
      .setU8("ifa_scope", RT_SCOPE_UNIVERSE).setU32("ifa_index", await indexOf(link, s));
    const attrs: Attr[] = [{ type: IFA_LOCAL, value: addr }, { type: IFA_ADDRESS, value: addr }];
    if (a.broadcast !== undefined) attrs.push({ type: IFA_BROADCAST, value: mustAddress(a.broadcast) });
    await s.request(`RTM_NEWADDR ${a.address}/${a.prefixLen} ${link}`, RTM_NEWADDR, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
      Buffer.concat([ifa.buf, encodeAttrs(attrs)]));
  });
}

/** RTM_DELADDR: removes an address from a link. */
export async function deleteAddress(link: string | number, a: NewAddress, nl?: RtNetlink): Promise<void> {
  const addr = mustAddress(a.address);
  await withSocket(nl, async (s) => {
    const ifa = struct(S.ifaddrmsg).setU8("ifa_family", familyOf(addr)).setU8("ifa_prefixlen", a.prefixLen).setU32("ifa_index", await indexOf(link, s));
    await s.request(`RTM_DELADDR ${a.address}/${a.prefixLen} ${link}`, RTM_DELADDR, NLM_F_ACK,
      Buffer.concat([ifa.buf, encodeAttrs([{ type: IFA_LOCAL, value: addr }])]));
  });
}

export interface Route {
  family: number;
  /** Destination prefix length (0: a default route). */
  dstLen: number;
  dst?: string;
  gateway?: string;
  /** Output link index. */
  oif?: number;
  /** Preferred source address. */
  prefsrc?: string;
  /** Metric (RTA_PRIORITY). */
  priority?: number;
  table: number;
  protocol: number;
  scope: number;
  /** RTN_* */
  type: number;
}

export function decodeRoute(body: Buffer): Route {
  const rt = new Struct(S.rtmsg, body);
  const a = parseAttrs(body, S.rtmsg.size);
  const table = a.get(RTA_TABLE);
  const out: Route = {
    family: rt.u8("rtm_family"), dstLen: rt.u8("rtm_dst_len"), table: table ? table.readUInt32LE(0) : rt.u8("rtm_table"),
    protocol: rt.u8("rtm_protocol"), scope: rt.u8("rtm_scope"), type: rt.u8("rtm_type"),
  };
  const dst = a.get(RTA_DST), gw = a.get(RTA_GATEWAY), oif = a.get(RTA_OIF), prio = a.get(RTA_PRIORITY), src = a.get(RTA_PREFSRC);
  if (dst) out.dst = addressText(dst);
  if (gw) out.gateway = addressText(gw);
  if (oif) out.oif = oif.readUInt32LE(0);
  if (prio) out.priority = prio.readUInt32LE(0);
  if (src) out.prefsrc = addressText(src);
  return out;
}

/** RTM_GETROUTE dump of one family (AF_INET or AF_INET6): the routes of every table. */
export async function listRoutes(family: number, nl?: RtNetlink): Promise<Route[]> {
  const body = struct(S.rtmsg).setU8("rtm_family", family).buf;
  const msgs = await withSocket(nl, (s) => s.request("RTM_GETROUTE", RTM_GETROUTE, NLM_F_DUMP, body));
  return msgs.filter((m) => m.type === RTM_NEWROUTE).map((m) => decodeRoute(m.body)).filter((r) => r.family === family);
}

/** The default route of the main table with the lowest metric (undefined when there is none). */
export async function defaultRoute(family: number, nl?: RtNetlink): Promise<Route | undefined> {
  const routes = (await listRoutes(family, nl)).filter((r) => r.dstLen === 0 && r.table === RT_TABLE_MAIN && r.type === RTN_UNICAST && r.oif !== undefined);
  routes.sort((a, b) => (a.priority ?? 0) - (b.priority ?? 0));
  return routes[0];
}

export interface NewRoute {
  /** Destination in text form; absent: the default route of the gateway's family. */
  dst?: string;
  dstLen?: number;
  gateway?: string;
  /** Output link by name or index. */
  oif?: string | number;
  priority?: number;
  /** Default RT_TABLE_MAIN. */
  table?: number;
}

/** RTM_NEWROUTE (NLM_F_CREATE|NLM_F_EXCL): adds a static unicast route; EEXIST when it is there. */
export async function addRoute(r: NewRoute, nl?: RtNetlink): Promise<void> {
  const dst = r.dst !== undefined ? mustAddress(r.dst) : undefined;
  const gw = r.gateway !== undefined ? mustAddress(r.gateway) : undefined;
  const family = familyOf(dst ?? gw ?? Buffer.alloc(4));
  if (dst && gw && dst.length !== gw.length) throw new RangeError("destination and gateway of different families");
  const dstLen = r.dstLen ?? (dst ? dst.length * 8 : 0);
  const table = r.table ?? RT_TABLE_MAIN;
  await withSocket(nl, async (s) => {
    const rt = struct(S.rtmsg).setU8("rtm_family", family).setU8("rtm_dst_len", dstLen).setU8("rtm_table", table < 256 ? table : 0)
      .setU8("rtm_protocol", RTPROT_STATIC).setU8("rtm_scope", gw ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK).setU8("rtm_type", RTN_UNICAST);
    const attrs: Attr[] = [attr.u32(RTA_TABLE, table)];
    if (dst) attrs.push({ type: RTA_DST, value: dst });
    if (gw) attrs.push({ type: RTA_GATEWAY, value: gw });
    if (r.oif !== undefined) attrs.push(attr.u32(RTA_OIF, await indexOf(r.oif, s)));
    if (r.priority !== undefined) attrs.push(attr.u32(RTA_PRIORITY, r.priority));
    const what = `${r.dst ?? "default"}${dst ? `/${dstLen}` : ""}${r.gateway ? ` via ${r.gateway}` : ""}`;
    await s.request(`RTM_NEWROUTE ${what}`, RTM_NEWROUTE, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, Buffer.concat([rt.buf, encodeAttrs(attrs)]));
  });
}

/** RTM_DELROUTE of a route as addRoute() took it. */
export async function deleteRoute(r: NewRoute, nl?: RtNetlink): Promise<void> {
  const dst = r.dst !== undefined ? mustAddress(r.dst) : undefined;
  const gw = r.gateway !== undefined ? mustAddress(r.gateway) : undefined;
  const family = familyOf(dst ?? gw ?? Buffer.alloc(4));
  const dstLen = r.dstLen ?? (dst ? dst.length * 8 : 0);
  const table = r.table ?? RT_TABLE_MAIN;
  await withSocket(nl, async (s) => {
    const rt = struct(S.rtmsg).setU8("rtm_family", family).setU8("rtm_dst_len", dstLen).setU8("rtm_table", table < 256 ? table : 0);
    const attrs: Attr[] = [attr.u32(RTA_TABLE, table)];
    if (dst) attrs.push({ type: RTA_DST, value: dst });
    if (gw) attrs.push({ type: RTA_GATEWAY, value: gw });
    if (r.oif !== undefined) attrs.push(attr.u32(RTA_OIF, await indexOf(r.oif, s)));
    await s.request("RTM_DELROUTE", RTM_DELROUTE, NLM_F_ACK, Buffer.concat([rt.buf, encodeAttrs(attrs)]));
  });
}
