// src/ffi/icmp.ts: the layouts and constants against the C headers, the checksum,
// and one echo per case over raw and ping sockets in a network namespace of the
// test's own (unshare -rn): replies with their TTL, no route, a silent address
// (timeout) and an address whose neighbour never answers (host unreachable).
import { describe, expect, test } from "bun:test";
import * as icmp from "../../src/ffi/icmp.ts";
import { checkAgainstHeaders, sameNames } from "./cabi.ts";

const consts: Record<string, number> = {
  AF_INET: icmp.AF_INET, AF_INET6: icmp.AF_INET6, SOCK_DGRAM: icmp.SOCK_DGRAM, SOCK_RAW: icmp.SOCK_RAW,
  SOCK_NONBLOCK: icmp.SOCK_NONBLOCK, SOCK_CLOEXEC: icmp.SOCK_CLOEXEC,
  IPPROTO_IP: icmp.IPPROTO_IP, IPPROTO_ICMP: icmp.IPPROTO_ICMP, IPPROTO_IPV6: icmp.IPPROTO_IPV6, IPPROTO_ICMPV6: icmp.IPPROTO_ICMPV6,
  SOL_SOCKET: icmp.SOL_SOCKET, SO_BINDTODEVICE: icmp.SO_BINDTODEVICE,
  IP_TTL: icmp.IP_TTL, IP_RECVERR: icmp.IP_RECVERR, IP_RECVTTL: icmp.IP_RECVTTL,
  IPV6_RECVERR: icmp.IPV6_RECVERR, IPV6_RECVHOPLIMIT: icmp.IPV6_RECVHOPLIMIT, IPV6_HOPLIMIT: icmp.IPV6_HOPLIMIT,
  MSG_ERRQUEUE: icmp.MSG_ERRQUEUE,
  ICMP_ECHOREPLY: icmp.ICMP_ECHOREPLY, ICMP_DEST_UNREACH: icmp.ICMP_DEST_UNREACH, ICMP_ECHO: icmp.ICMP_ECHO, ICMP_TIME_EXCEEDED: icmp.ICMP_TIME_EXCEEDED,
  ICMPV6_DEST_UNREACH: icmp.ICMPV6_DEST_UNREACH, ICMPV6_TIME_EXCEED: icmp.ICMPV6_TIME_EXCEED,
  ICMPV6_ECHO_REQUEST: icmp.ICMPV6_ECHO_REQUEST, ICMPV6_ECHO_REPLY: icmp.ICMPV6_ECHO_REPLY,
  SO_EE_ORIGIN_LOCAL: icmp.SO_EE_ORIGIN_LOCAL, SO_EE_ORIGIN_ICMP: icmp.SO_EE_ORIGIN_ICMP, SO_EE_ORIGIN_ICMP6: icmp.SO_EE_ORIGIN_ICMP6,
};
checkAgainstHeaders("icmp.ts mirrors netinet/in.h, linux/icmp.h, linux/icmpv6.h, linux/ip.h, linux/ipv6.h and linux/errqueue.h", {
  headers: ["netinet/in.h", "linux/icmp.h", "linux/icmpv6.h", "linux/ip.h", "linux/ipv6.h", "linux/errqueue.h"],
  structs: icmp.structs,
  consts: sameNames(consts),
  defines: ["_GNU_SOURCE"],
});

describe("echo requests", () => {
  test("the Internet checksum of a request sums to zero", () => {
    const b = icmp.encodeEcho(icmp.AF_INET, 0x1234, 7, Buffer.from("abcdefg"));
    expect(b[0]).toBe(icmp.ICMP_ECHO);
    expect(b.readUInt16BE(4)).toBe(0x1234);
    expect(b.readUInt16BE(6)).toBe(7);
    expect(icmp.inetChecksum(b)).toBe(0);
    // RFC 1071's example words.
    expect(icmp.inetChecksum(Buffer.from([0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]))).toBe(~0xddf2 & 0xffff);
    const v6 = icmp.encodeEcho(icmp.AF_INET6, 1, 2, Buffer.alloc(4));
    expect([v6[0], v6.readUInt16BE(2)]).toEqual([icmp.ICMPV6_ECHO_REQUEST, 0]); // the kernel fills it
  });

  test("socket addresses for both families", () => {
    expect(icmp.sockaddrIn("192.0.2.1").buf.subarray(0, 8)).toEqual(Buffer.from([2, 0, 0, 0, 192, 0, 2, 1]));
    const six = icmp.sockaddrIn("2001:db8::1");
    expect(six.family).toBe(icmp.AF_INET6);
    expect(six.buf.subarray(8, 24).toString("hex")).toBe("20010db8000000000000000000000001");
    expect(() => icmp.sockaddrIn("host.example")).toThrow(RangeError);
  });
});

const unshare = Bun.which("unshare");
const canUnshare = unshare !== null && Bun.spawnSync([unshare, "-rn", "true"]).exitCode === 0;
const setup = [
  "ip link set lo up", "ip link add ta0 type veth peer name ta1", "ip link set ta0 up", "ip link set ta1 up",
  "ip addr add 192.0.2.1/24 dev ta0", "ip addr add 2001:db8::1/64 dev ta0 nodad",
  "ip route add unreachable 203.0.113.0/24",
  // 192.0.2.99 answers ARP (a permanent neighbour entry) but nobody is there: silence.
  "ip neigh add 192.0.2.99 lladdr 02:00:00:00:00:99 dev ta0 nud permanent",
  // Ping sockets for the namespace's root group.
  "echo '0 0' > /proc/sys/net/ipv4/ping_group_range",
].join(" && ");

for (const kind of ["raw", "dgram"] as const) {
  test.skipIf(!canUnshare)(`${kind} sockets in a network namespace: replies, no route, silence, host unreachable`, () => {
    const r = Bun.spawnSync([unshare!, "-rn", "sh", "-c", `${setup} && exec "$0" "$1" "$2"`, process.execPath, `${import.meta.dir}/fixtures/icmp-netns.ts`, kind]);
    expect(r.stderr.toString()).toBe("");
    const out = JSON.parse(r.stdout.toString());
    expect(out.loopback).toMatchObject({ ok: true, address: "127.0.0.1", bytes: 64, ttl: 64, kind });
    expect(out.loopback6).toMatchObject({ ok: true, address: "::1", bytes: 64, ttl: 64, kind });
    expect(out.peer).toMatchObject({ ok: true, address: "192.0.2.1", bytes: 64, ttl: 64 });
    // The round trip the echo reports is its own: more than nothing, and within the time
    // the call took (a wall-clock bound here failed when the machine was busy: 231 ms).
    expect(out.loopback.timeMs).toBeGreaterThan(0);
    expect(out.loopback.timeMs).toBeLessThanOrEqual(out.loopback.elapsedMs + 1);
    expect(out.noRoute).toMatchObject({ ok: false, reason: "unreachable", errno: 113 });
    expect(out.silent).toMatchObject({ ok: false, reason: "timeout" });
    expect(out.silent.elapsedMs).toBeGreaterThanOrEqual(290);
    // The kernel gives up on the neighbour after 3 probes and reports host unreachable.
    expect(out.noNeighbour).toMatchObject({ ok: false, reason: "unreachable" });
    expect(out.noNeighbour6).toMatchObject({ ok: false, reason: "unreachable" });
    if (kind === "raw") expect(out.noNeighbour).toMatchObject({ icmpType: icmp.ICMP_DEST_UNREACH, icmpCode: 1, from: "192.0.2.1" });
    else expect(out.noNeighbour.errno).toBe(113);
    expect(out.noNeighbour.elapsedMs).toBeLessThan(4500);
    expect(out.badInterface).toBe(19); // ENODEV
  }, 15000);
}
