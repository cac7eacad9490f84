// ping, ping6, arping, resolvehostname and checkhttp: each waits on the event
// source or on Node's asynchronous resolver and sockets, never on the main thread.
// node:dns and node:net are loaded by the first call that needs them, not while the
// process starts (each is a module of the runtime to evaluate: docs/performance.md).
const dns = () => require("node:dns") as typeof import("node:dns");
const net = () => require("node:net") as typeof import("node:net");
import { echo, type EchoResult, type SocketKind } from "../../ffi/icmp";
import { arpRequest, type ArpResult } from "../../ffi/packet";
import * as nl from "../../ffi/netlink";
import { ENETDOWN, ENODEV, ENXIO } from "../../ffi/errno";

/** The host-name rule of checkhttp and resolvehostname (spec): `www.` first, one of these suffixes last. */
export const HOST_SUFFIXES = [".org", ".com", ".net", ".gov", ".edu", ".jp", ".int", ".mil"] as const;

/** `www.` + DNS labels + a listed suffix (compared without regard to case, as DNS does). */
export function followsHostRule(host: string): boolean {
  const h = host.toLowerCase();
  if (!h.startsWith("www.") || !HOST_SUFFIXES.some((s) => h.endsWith(s))) return false;
  if (h.length > 253) return false;
  return h.split(".").every((l) => /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(l));
}

export const isIPv4 = (s: string) => nl.addressBytes(s)?.length === 4;
export const isIPv6 = (s: string) => nl.addressBytes(s)?.length === 16;

export type PingOutcome =
  | { ok: true; ipaddress: string; time: number; bytes: number; ttl?: number }
  | { ok: false; why: "unknown-host" | "unreachable" | "poor-network" };

/**
 * One echo to host (a name or an address of the family) through ifName, or the
 * interface the routing table chooses. A literal of the other family is an
 * unknown host. Socket failures other than routing (no permission) are thrown.
 */
export async function pingHost(
  family: 4 | 6, host: string, opts: { ifName?: string; timeoutMs: number; kind: SocketKind | "auto" },
): Promise<PingOutcome> {
  let address: string;
  const literal = nl.addressBytes(host);
  if (literal) {
    if (literal.length !== (family === 4 ? 4 : 16)) return { ok: false, why: "unknown-host" };
    address = nl.addressText(literal);
  } else {
    try {
      address = (await dns().promises.lookup(host, { family })).address;
    } catch {
      return { ok: false, why: "unknown-host" };
    }
  }
  // Without ifName the socket is not bound: the routing table picks the interface, which is
  // the default gateway's for every destination without a more specific route (and lo for
  // the host's own addresses, which a socket bound to the gateway's interface could not reach).
  const ifName = opts.ifName;
  let r: EchoResult;
  try {
    r = await echo({ address, ifName, timeoutMs: opts.timeoutMs, kind: opts.kind });
  } catch (e) {
    // SO_BINDTODEVICE to an interface that is not there: nothing can be reached through it.
    if ((e as { errno?: number }).errno === ENODEV) return { ok: false, why: "unreachable" };
    throw e;
  }
  if (r.ok) {
    const out: PingOutcome = { ok: true, ipaddress: r.address, time: Math.round(r.timeMs * 1000) / 1000, bytes: r.bytes };
    if (r.ttl !== undefined) out.ttl = r.ttl;
    return out;
  }
  return { ok: false, why: r.reason === "timeout" ? "poor-network" : "unreachable" };
}

export type ArpingOutcome = { ok: true; mac: string } | { ok: false; why: "unreachable" | "not-found" };

/**
 * One ARP request for ipAddress on ifName. The interface must exist, be up and be
 * an Ethernet-like link; the sender address is its IPv4 address in the target's
 * subnet (else its first), or 0.0.0.0 (a probe) when it has none.
 */
export async function arping(ifName: string, ipAddress: string, timeoutMs: number): Promise<ArpingOutcome> {
  const link = await nl.getLink(ifName);
  if (!link || !(link.flags & nl.IFF_UP) || link.type !== 1 /* ARPHRD_ETHER */ || !link.address) return { ok: false, why: "unreachable" };
  const target = nl.addressBytes(ipAddress)!;
  const mine = (await nl.listAddresses(nl.AF_INET)).filter((a) => a.index === link.index);
  const inSubnet = mine.find((a) => sameSubnet(nl.addressBytes(a.address)!, target, a.prefixLen));
  const sender = (inSubnet ?? mine[0])?.address ?? "0.0.0.0";
  let r: ArpResult;
  try {
    r = await arpRequest({ ifIndex: link.index, senderMac: link.address, senderIp: sender, targetIp: nl.addressText(target), timeoutMs });
  } catch (e) {
    const errno = (e as { errno?: number }).errno;
    // ENETDOWN, ENXIO, ENODEV: the link went down or away.
    if (errno === ENETDOWN || errno === ENXIO || errno === ENODEV) return { ok: false, why: "unreachable" };
    throw e;
  }
  return r.ok ? { ok: true, mac: r.mac } : { ok: false, why: "not-found" };
}

export function sameSubnet(a: Uint8Array, b: Uint8Array, prefixLen: number): boolean {
  if (a.length !== b.length) return false;
  for (let bit = 0; bit < prefixLen; bit++) {
    const m = 0x80 >> (bit & 7);
    if ((a[bit >> 3]! & m) !== (b[bit >> 3]! & m)) return false;
  }
  return true;
}

/** Resolver failures that mean "this name has no address", as opposed to a failure of ours. */
const RESOLVE_FAILURES = new Set(["ENOTFOUND", "EAI_AGAIN", "ENODATA", "EAI_NONAME", "EAI_NODATA", "ESERVFAIL", "ETIMEOUT", "ECONNREFUSED", "EREFUSED", "EAI_FAIL", "ENONAME", "EBADNAME", "EAI_FAMILY", "ENOTIMP", "ECANCELLED", "EFORMERR", "EBADRESP", "ECONNRESET"]);

export type ResolveOutcome = { ok: true; addresses: string[] } | { ok: false; why: "not-resolved" | "unknown"; error?: unknown };

/**
 * The addresses of host through the system resolver (getaddrinfo: /etc/hosts, DNS),
 * limited to the families this host has a non-loopback address of (AI_ADDRCONFIG):
 * "according to what the interface supports".
 */
export async function resolveHost(host: string): Promise<ResolveOutcome> {
  try {
    const all = await dns().promises.lookup(host, { all: true, hints: dns().ADDRCONFIG });
    const addresses = [...new Set(all.map((a) => a.address))];
    if (!addresses.length) return { ok: false, why: "not-resolved" };
    return { ok: true, addresses };
  } catch (e) {
    const code = (e as { code?: string }).code ?? "";
    return RESOLVE_FAILURES.has(code) ? { ok: false, why: "not-resolved" } : { ok: false, why: "unknown", error: e };
  }
}

/** Opens (and closes) a TCP connection to port 80 of host within timeoutMs; the reason when it could not. */
export function connectHttp(host: string, timeoutMs: number): Promise<{ ok: true; address: string } | { ok: false; reason: string }> {
  return new Promise((resolve) => {
    let done = false;
    const socket = net().connect({ host, port: 80 });
    const finish = (r: { ok: true; address: string } | { ok: false; reason: string }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => finish({ ok: false, reason: `no connection within ${timeoutMs} ms` }), timeoutMs);
    socket.once("connect", () => finish({ ok: true, address: socket.remoteAddress ?? "" }));
    socket.once("error", (e) => finish({ ok: false, reason: String((e as Error).message ?? e) }));
  });
}
