// rtnetlink (linux/netlink.h, linux/rtnetlink.h, linux/if_link.h): an AF_NETLINK
// NETLINK_ROUTE socket for listing, creating (VLAN and other kinds), bringing up and
// deleting links. Kernel errors arrive as NLMSG_ERROR and are thrown as NetlinkError
// with the errno and, when the kernel gives one, its extended-ack message.
import { SysError, check, closeFd, libc, ptr } from "./libc.ts";

export const AF_UNSPEC = 0, AF_NETLINK = 16, SOCK_RAW = 3, SOCK_CLOEXEC = 0o2000000, SOL_NETLINK = 270;
export const NETLINK_ROUTE = 0, NETLINK_CAP_ACK = 10, NETLINK_EXT_ACK = 11;

export const NLM_F_REQUEST = 0x01, NLM_F_MULTI = 0x02, NLM_F_ACK = 0x04, NLM_F_ECHO = 0x08, NLM_F_ROOT = 0x100,
  NLM_F_MATCH = 0x200, NLM_F_DUMP = 0x300, NLM_F_EXCL = 0x200, NLM_F_CREATE = 0x400, NLM_F_CAPPED = 0x100,
  NLM_F_ACK_TLVS = 0x200;
export const NLMSG_NOOP = 1, NLMSG_ERROR = 2, NLMSG_DONE = 3, NLMSGERR_ATTR_MSG = 1;
export const RTM_NEWLINK = 16, RTM_DELLINK = 17, RTM_GETLINK = 18;
export const IFLA_ADDRESS = 1, IFLA_IFNAME = 3, IFLA_MTU = 4, IFLA_LINK = 5, IFLA_OPERSTATE = 16, IFLA_LINKINFO = 18;
export const IFLA_INFO_KIND = 1, IFLA_INFO_DATA = 2;
export const IFLA_VLAN_ID = 1, IFLA_VLAN_PROTOCOL = 5;
export const IFF_UP = 0x1, IFF_LOOPBACK = 0x8, IFF_RUNNING = 0x40;
export const ETH_P_8021Q = 0x8100, ETH_P_8021AD = 0x88a8;
export const NLA_F_NESTED = 1 << 15;

export const structs = {
  sockaddr_nl: { c: "struct sockaddr_nl", size: 12, fields: { nl_family: 0, nl_pad: 2, nl_pid: 4, nl_groups: 8 } },
  nlmsghdr: { c: "struct nlmsghdr", size: 16, fields: { nlmsg_len: 0, nlmsg_type: 4, nlmsg_flags: 6, nlmsg_seq: 8, nlmsg_pid: 12 } },
  nlmsgerr: { c: "struct nlmsgerr", size: 20, fields: { error: 0, msg: 4 } },
  ifinfomsg: {
    c: "struct ifinfomsg", size: 16,
    fields: { ifi_family: 0, __ifi_pad: 1, ifi_type: 2, ifi_index: 4, ifi_flags: 8, ifi_change: 12 },
  },
  rtattr: { c: "struct rtattr", size: 4, fields: { rta_len: 0, rta_type: 2 } },
  msghdr: {
    c: "struct msghdr", size: 56,
    fields: { msg_name: 0, msg_namelen: 8, msg_iov: 16, msg_iovlen: 24, msg_control: 32, msg_controllen: 40, msg_flags: 48 },
  },
  iovec: { c: "struct iovec", size: 16, fields: { iov_base: 0, iov_len: 8 } },
} as const;

const HDR = structs.nlmsghdr.size, IFI = structs.ifinfomsg.size;
const align4 = (n: number) => (n + 3) & ~3;

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
  u8: (type: number, v: number): Attr => ({ type, value: Uint8Array.of(v) }),
  u16: (type: number, v: number): Attr => { const b = Buffer.alloc(2); b.writeUInt16LE(v); return { type, value: b }; },
  be16: (type: number, v: number): Attr => { const b = Buffer.alloc(2); b.writeUInt16BE(v); return { type, value: b }; },
  u32: (type: number, v: number): Attr => { const b = Buffer.alloc(4); b.writeUInt32LE(v >>> 0); return { type, value: b }; },
  nest: (type: number, attrs: Attr[]): Attr => ({ type, value: attrs }),
};

export function encodeAttrs(attrs: Attr[]): Buffer {
  const parts: Buffer[] = [];
  for (const a of attrs) {
    const payload = Array.isArray(a.value) ? encodeAttrs(a.value) : Buffer.from(a.value);
    const h = Buffer.alloc(4);
    h.writeUInt16LE(4 + payload.length, 0);
    h.writeUInt16LE(a.type, 2);
    parts.push(h, payload, Buffer.alloc(align4(payload.length) - payload.length));
  }
  return Buffer.concat(parts);
}

/** Attributes of a message body, by type (the last one wins; NLA_F_* bits masked off). */
export function parseAttrs(b: Buffer, off = 0, end = b.length): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  while (off + 4 <= end) {
    const len = b.readUInt16LE(off);
    if (len < 4 || off + len > end) break;
    out.set(b.readUInt16LE(off + 2) & 0x3fff, b.subarray(off + 4, off + len));
    off += align4(len);
  }
  return out;
}

export interface IfInfo { family?: number; type?: number; index?: number; flags?: number; change?: number }

export function encodeIfinfomsg(i: IfInfo): Buffer {
  const b = Buffer.alloc(IFI);
  b.writeUInt8(i.family ?? AF_UNSPEC, 0);
  b.writeUInt16LE(i.type ?? 0, 2);
  b.writeInt32LE(i.index ?? 0, 4);
  b.writeUInt32LE((i.flags ?? 0) >>> 0, 8);
  b.writeUInt32LE((i.change ?? 0) >>> 0, 12);
  return b;
}

/** A message received from the kernel. */
export interface NlMessage { type: number; flags: number; seq: number; body: Buffer }

/** A bound NETLINK_ROUTE socket. Requests are synchronous: send, then read until the ack or NLMSG_DONE. */
export class RtNetlink {
  readonly fd: number;
  private seq = Math.floor(Date.now() / 1000) & 0x7fffffff;
  private readonly rx = Buffer.alloc(1 << 16);

  constructor() {
    this.fd = check("socket(AF_NETLINK)", () => libc.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
    try {
      const sa = Buffer.alloc(structs.sockaddr_nl.size);
      sa.writeUInt16LE(AF_NETLINK, 0);
      check("bind(AF_NETLINK)", () => libc.bind(this.fd, ptr(sa), sa.length));
      const one = Buffer.alloc(4);
      one.writeInt32LE(1);
      // Extended acks give the kernel's reason; capped acks skip echoing our request back.
      libc.setsockopt(this.fd, SOL_NETLINK, NETLINK_EXT_ACK, ptr(one), 4);
      libc.setsockopt(this.fd, SOL_NETLINK, NETLINK_CAP_ACK, ptr(one), 4);
    } catch (e) {
      closeFd(this.fd);
      throw e;
    }
  }

  close(): void {
    closeFd(this.fd);
  }

  /**
   * Sends one request and returns the kernel's answers (the messages of a dump, or
   * the reply of a GET); throws NetlinkError on NLMSG_ERROR with a non-zero error.
   */
  request(call: string, type: number, flags: number, body: Buffer): NlMessage[] {
    const seq = ++this.seq;
    const msg = Buffer.alloc(HDR + body.length);
    msg.writeUInt32LE(msg.length, 0);
    msg.writeUInt16LE(type, 4);
    msg.writeUInt16LE(flags | NLM_F_REQUEST, 6);
    msg.writeUInt32LE(seq, 8);
    body.copy(msg, HDR);
    this.send(call, msg);
    const dump = (flags & NLM_F_DUMP) === NLM_F_DUMP, wantAck = (flags & NLM_F_ACK) !== 0;
    const out: NlMessage[] = [];
    for (;;) {
      for (const m of this.recv(call)) {
        if (m.seq !== seq) continue; // a late answer to an earlier request
        if (m.type === NLMSG_ERROR) {
          const err = -m.body.readInt32LE(0);
          if (err !== 0) throw new NetlinkError(call, err, extAck(m));
          return out;
        }
        if (m.type === NLMSG_DONE) return out;
        if (m.type === NLMSG_NOOP) continue;
        out.push(m);
        if (!dump && !wantAck && !(m.flags & NLM_F_MULTI)) return out;
      }
    }
  }

  private send(call: string, msg: Buffer): void {
    const sa = Buffer.alloc(structs.sockaddr_nl.size);
    sa.writeUInt16LE(AF_NETLINK, 0);
    const iov = Buffer.alloc(structs.iovec.size);
    iov.writeBigUInt64LE(BigInt(ptr(msg)), 0);
    iov.writeBigUInt64LE(BigInt(msg.length), 8);
    const mh = Buffer.alloc(structs.msghdr.size);
    mh.writeBigUInt64LE(BigInt(ptr(sa)), 0);
    mh.writeUInt32LE(sa.length, 8);
    mh.writeBigUInt64LE(BigInt(ptr(iov)), 16);
    mh.writeBigUInt64LE(1n, 24);
    check(`${call}: sendmsg`, () => libc.sendmsg(this.fd, ptr(mh), 0));
  }

  private recv(call: string): NlMessage[] {
    const iov = Buffer.alloc(structs.iovec.size);
    iov.writeBigUInt64LE(BigInt(ptr(this.rx)), 0);
    iov.writeBigUInt64LE(BigInt(this.rx.length), 8);
    const mh = Buffer.alloc(structs.msghdr.size);
    mh.writeBigUInt64LE(BigInt(ptr(iov)), 16);
    mh.writeBigUInt64LE(1n, 24);
    const n = Number(check(`${call}: recvmsg`, () => libc.recvmsg(this.fd, ptr(mh), 0)));
    const out: NlMessage[] = [];
    for (let off = 0; off + HDR <= n;) {
      const len = this.rx.readUInt32LE(off);
      if (len < HDR || off + len > n) break;
      out.push({
        type: this.rx.readUInt16LE(off + 4), flags: this.rx.readUInt16LE(off + 6), seq: this.rx.readUInt32LE(off + 8),
        body: Buffer.from(this.rx.subarray(off + HDR, off + len)),
      });
      off += align4(len);
    }
    return out;
  }
}

/** The NLMSGERR_ATTR_MSG text of an extended ack. */
function extAck(m: NlMessage): string | undefined {
  if (!(m.flags & NLM_F_ACK_TLVS)) return undefined;
  // struct nlmsgerr, then the request unless capped, then the TLVs.
  let off = structs.nlmsgerr.size;
  if (!(m.flags & NLM_F_CAPPED)) off = 4 + align4(m.body.readUInt32LE(4));
  const msg = parseAttrs(m.body, off).get(NLMSGERR_ATTR_MSG);
  return msg ? msg.toString("utf8").replace(/\0.*$/s, "") : undefined;
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
  const link: Link = {
    index: body.readInt32LE(4), type: body.readUInt16LE(2), flags: body.readUInt32LE(8),
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

function withSocket<T>(nl: RtNetlink | undefined, fn: (nl: RtNetlink) => T): T {
  if (nl) return fn(nl);
  const own = new RtNetlink();
  try {
    return fn(own);
  } finally {
    own.close();
  }
}

const ENODEV = 19;

/** RTM_GETLINK dump: every link in the network namespace. */
export function listLinks(nl?: RtNetlink): Link[] {
  return withSocket(nl, (s) =>
    s.request("RTM_GETLINK", RTM_GETLINK, NLM_F_DUMP, encodeIfinfomsg({})).filter((m) => m.type === RTM_NEWLINK)
      .map((m) => decodeLink(m.body)));
}

/** RTM_GETLINK for one link by name or index; undefined when there is none. */
export function getLink(nameOrIndex: string | number, nl?: RtNetlink): Link | undefined {
  const byIndex = typeof nameOrIndex === "number";
  const body = Buffer.concat([
    encodeIfinfomsg({ index: byIndex ? nameOrIndex : 0 }),
    byIndex ? Buffer.alloc(0) : encodeAttrs([attr.str(IFLA_IFNAME, nameOrIndex)]),
  ]);
  try {
    const [m] = withSocket(nl, (s) => s.request("RTM_GETLINK", RTM_GETLINK, 0, body));
    return m ? decodeLink(m.body) : undefined;
  } catch (e) {
    if (e instanceof SysError && e.errno === ENODEV) return undefined;
    throw e;
  }
}

export function linkExists(name: string, nl?: RtNetlink): boolean {
  return getLink(name, nl) !== undefined;
}

function indexOf(link: string | number, s: RtNetlink): number {
  if (typeof link === "number") return link;
  const l = getLink(link, s);
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
}

/** RTM_NEWLINK with NLM_F_CREATE|NLM_F_EXCL: creates a link; fails with EEXIST when the name is taken. */
export function createLink(link: NewLink, nl?: RtNetlink): void {
  withSocket(nl, (s) => {
    const info: Attr[] = [attr.str(IFLA_INFO_KIND, link.kind)];
    if (link.data) info.push(attr.nest(IFLA_INFO_DATA, link.data));
    const attrs: Attr[] = [attr.str(IFLA_IFNAME, link.name), attr.nest(IFLA_LINKINFO, info)];
    if (link.parent !== undefined) attrs.push(attr.u32(IFLA_LINK, indexOf(link.parent, s)));
    if (link.mtu !== undefined) attrs.push(attr.u32(IFLA_MTU, link.mtu));
    s.request(`RTM_NEWLINK ${link.name}`, RTM_NEWLINK, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
      Buffer.concat([encodeIfinfomsg({}), encodeAttrs(attrs)]));
  });
}

/** Creates VLAN `vlanId` (1..4094) on parent as link `name` (8021q). */
export function createVlan(parent: string | number, name: string, vlanId: number, opts: { protocol?: number } = {}, nl?: RtNetlink): void {
  if (!Number.isInteger(vlanId) || vlanId < 1 || vlanId > 4094) throw new RangeError(`VLAN id 1..4094: ${vlanId}`);
  const data = [attr.u16(IFLA_VLAN_ID, vlanId)];
  if (opts.protocol !== undefined) data.push(attr.be16(IFLA_VLAN_PROTOCOL, opts.protocol));
  createLink({ name, kind: "vlan", parent, data }, nl);
}

/** RTM_DELLINK by name or index. */
export function deleteLink(link: string | number, nl?: RtNetlink): void {
  withSocket(nl, (s) => {
    const byIndex = typeof link === "number";
    const body = Buffer.concat([
      encodeIfinfomsg({ index: byIndex ? link : 0 }),
      byIndex ? Buffer.alloc(0) : encodeAttrs([attr.str(IFLA_IFNAME, link)]),
    ]);
    s.request(`RTM_DELLINK ${link}`, RTM_DELLINK, NLM_F_ACK, body);
  });
}

/** Sets or clears IFF_UP. */
export function setLinkUp(link: string | number, up: boolean, nl?: RtNetlink): void {
  withSocket(nl, (s) => {
    const body = encodeIfinfomsg({ index: indexOf(link, s), flags: up ? IFF_UP : 0, change: IFF_UP });
    s.request(`RTM_NEWLINK ${link} ${up ? "up" : "down"}`, RTM_NEWLINK, NLM_F_ACK, body);
  });
}
