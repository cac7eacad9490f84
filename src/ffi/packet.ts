// ARP over an AF_PACKET socket (linux/if_packet.h, linux/if_arp.h, linux/if_ether.h):
// one ARP request broadcast on an interface and its reply awaited on the platform's
// event source (loop.ts). The socket is SOCK_DGRAM, so the kernel writes and strips
// the Ethernet header: what is sent and received is the ARP packet itself (RFC 826,
// Ethernet and IPv4: 28 bytes). It is bound to the interface and ETH_P_ARP, so it
// sees that interface's ARP traffic only. Opening it needs CAP_NET_RAW.
import { SysError, check, checkAgain, closeFd, errno, libc, ptr } from "./libc.ts";
import { loopReady, watch, type Watch } from "./loop.ts";
import { MSG_DONTWAIT, MsgHdr } from "./socket.ts";
import { Struct, struct } from "./struct.ts";
import { addressBytes, addressText } from "./netlink.ts";

export const AF_PACKET = 17, SOCK_DGRAM = 2, SOCK_NONBLOCK = 0o4000, SOCK_CLOEXEC = 0o2000000;
export const ETH_P_ARP = 0x0806, ETH_P_IP = 0x0800, ETH_ALEN = 6;
export const ARPHRD_ETHER = 1, ARPOP_REQUEST = 1, ARPOP_REPLY = 2;
export const PACKET_BROADCAST = 1, PACKET_HOST = 0;

export const structs = {
  sockaddr_ll: {
    c: "struct sockaddr_ll", size: 20,
    fields: { sll_family: 0, sll_protocol: 2, sll_ifindex: 4, sll_hatype: 8, sll_pkttype: 10, sll_halen: 11, sll_addr: 12 },
    lengths: { sll_addr: 8 },
  },
  arphdr: { c: "struct arphdr", size: 8, fields: { ar_hrd: 0, ar_pro: 2, ar_hln: 4, ar_pln: 5, ar_op: 6 } },
} as const;
const S = structs;

/** Length of an Ethernet/IPv4 ARP packet: the header, then sender and target hardware and protocol addresses. */
export const ARP_ETHER_IPV4_LEN = S.arphdr.size + 2 * (ETH_ALEN + 4);

export interface ArpPacket {
  op: number;
  senderMac: string;
  senderIp: string;
  targetMac: string;
  targetIp: string;
}

export function macBytes(mac: string): Buffer {
  const parts = mac.split(":");
  if (parts.length !== ETH_ALEN || parts.some((p) => !/^[0-9a-fA-F]{2}$/.test(p))) throw new RangeError(`not a MAC address: ${mac}`);
  return Buffer.from(parts.map((p) => parseInt(p, 16)));
}

export const macText = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join(":");

function ipv4(text: string): Buffer {
  const b = addressBytes(text);
  if (!b || b.length !== 4) throw new RangeError(`not an IPv4 address: ${text}`);
  return b;
}

/** An Ethernet/IPv4 ARP packet (network byte order). */
export function encodeArp(p: ArpPacket): Buffer {
  const h = new Struct(S.arphdr, Buffer.alloc(ARP_ETHER_IPV4_LEN));
  h.buf.writeUInt16BE(ARPHRD_ETHER, S.arphdr.fields.ar_hrd);
  h.buf.writeUInt16BE(ETH_P_IP, S.arphdr.fields.ar_pro);
  h.setU8("ar_hln", ETH_ALEN).setU8("ar_pln", 4);
  h.buf.writeUInt16BE(p.op, S.arphdr.fields.ar_op);
  let off = S.arphdr.size;
  for (const part of [macBytes(p.senderMac), ipv4(p.senderIp), macBytes(p.targetMac), ipv4(p.targetIp)]) {
    h.buf.set(part, off);
    off += part.length;
  }
  return h.buf;
}

/** An Ethernet/IPv4 ARP packet; undefined for any other kind. */
export function decodeArp(b: Buffer): ArpPacket | undefined {
  if (b.length < ARP_ETHER_IPV4_LEN) return undefined;
  const h = new Struct(S.arphdr, b);
  if (h.be16("ar_hrd") !== ARPHRD_ETHER || h.be16("ar_pro") !== ETH_P_IP || h.u8("ar_hln") !== ETH_ALEN || h.u8("ar_pln") !== 4) return undefined;
  const o = S.arphdr.size;
  return {
    op: h.be16("ar_op"),
    senderMac: macText(b.subarray(o, o + 6)),
    senderIp: addressText(b.subarray(o + 6, o + 10)),
    targetMac: macText(b.subarray(o + 10, o + 16)),
    targetIp: addressText(b.subarray(o + 16, o + 20)),
  };
}

function sockaddrLl(ifIndex: number, dest?: Uint8Array): Buffer {
  const sa = struct(S.sockaddr_ll).setU16("sll_family", AF_PACKET).setI32("sll_ifindex", ifIndex);
  sa.buf.writeUInt16BE(ETH_P_ARP, S.sockaddr_ll.fields.sll_protocol);
  if (dest) {
    sa.setU16("sll_hatype", ARPHRD_ETHER).setU8("sll_halen", dest.length);
    sa.buf.set(dest, sa.off("sll_addr"));
  }
  return sa.buf;
}

/** A non-blocking AF_PACKET SOCK_DGRAM socket for ETH_P_ARP, bound to the interface. */
export function openArpSocket(ifIndex: number): number {
  const proto = ((ETH_P_ARP & 0xff) << 8) | (ETH_P_ARP >> 8); // htons
  const fd = check("socket(AF_PACKET)", () => libc.socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, proto));
  try {
    const sa = sockaddrLl(ifIndex);
    check("bind(AF_PACKET)", () => libc.bind(fd, ptr(sa), sa.length));
  } catch (e) {
    closeFd(fd);
    throw e;
  }
  return fd;
}

export interface ArpRequest {
  ifIndex: number;
  /** The interface's own hardware address. */
  senderMac: string;
  /** The interface's IPv4 address; 0.0.0.0 makes it an ARP probe (RFC 5227). */
  senderIp: string;
  targetIp: string;
  timeoutMs: number;
}

export type ArpResult = { ok: true; mac: string; timeMs: number } | { ok: false; reason: "timeout" };

/**
 * Broadcasts one ARP request for targetIp and resolves with the hardware address
 * of the first reply from it, or a timeout. Rejects with SysError when the socket
 * cannot be opened or the request not sent (ENETDOWN: the interface is down).
 */
export async function arpRequest(req: ArpRequest): Promise<ArpResult> {
  await loopReady();
  const packet = encodeArp({ op: ARPOP_REQUEST, senderMac: req.senderMac, senderIp: req.senderIp, targetMac: "00:00:00:00:00:00", targetIp: req.targetIp });
  const fd = openArpSocket(req.ifIndex);
  let w: Watch | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  return new Promise<ArpResult>((resolve, reject) => {
    const finish = (r: ArpResult | Error) => {
      if (closed) return;
      closed = true;
      if (timer) clearTimeout(timer);
      w?.close();
      closeFd(fd);
      if (r instanceof Error) reject(r);
      else resolve(r);
    };
    const rx = Buffer.alloc(1500);
    const msg = new MsgHdr([rx]);
    let sentAt = 0;
    const drain = () => {
      for (let i = 0; i < 256 && !closed; i++) {
        msg.reset();
        const n = checkAgain("recvmsg(AF_PACKET)", () => libc.recvmsg(fd, msg.ptr, MSG_DONTWAIT));
        if (n === null) return;
        const p = decodeArp(rx.subarray(0, Number(n)));
        if (p && p.op === ARPOP_REPLY && p.senderIp === req.targetIp) return finish({ ok: true, mac: p.senderMac, timeMs: performance.now() - sentAt });
      }
    };
    try {
      w = watch(fd, { readable: () => { try { drain(); } catch (e) { finish(e as Error); } } });
      const out = new MsgHdr([packet], null, sockaddrLl(req.ifIndex, Buffer.alloc(ETH_ALEN, 0xff)));
      sentAt = performance.now();
      if (Number(libc.sendmsg(fd, out.ptr, MSG_DONTWAIT)) < 0) return finish(new SysError("sendmsg(AF_PACKET)", errno()));
    } catch (e) {
      return finish(e as Error);
    }
    timer = setTimeout(() => finish({ ok: false, reason: "timeout" }), req.timeoutMs);
  });
}
