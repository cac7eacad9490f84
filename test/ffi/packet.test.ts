// src/ffi/packet.ts: layouts against the C headers, the ARP codec, and ARP requests
// on a veth pair in a network namespace of the test's own (unshare -rn).
import { describe, expect, test } from "bun:test";
import * as pk from "../../src/ffi/packet.ts";
import { checkAgainstHeaders, sameNames } from "./cabi.ts";

const consts: Record<string, number> = {
  AF_PACKET: pk.AF_PACKET, SOCK_DGRAM: pk.SOCK_DGRAM, ETH_P_ARP: pk.ETH_P_ARP, ETH_P_IP: pk.ETH_P_IP, ETH_ALEN: pk.ETH_ALEN,
  ARPHRD_ETHER: pk.ARPHRD_ETHER, ARPOP_REQUEST: pk.ARPOP_REQUEST, ARPOP_REPLY: pk.ARPOP_REPLY,
  PACKET_BROADCAST: pk.PACKET_BROADCAST, PACKET_HOST: pk.PACKET_HOST,
};
checkAgainstHeaders("packet.ts mirrors linux/if_packet.h, linux/if_arp.h and linux/if_ether.h", {
  headers: ["linux/if_packet.h", "linux/if_arp.h", "linux/if_ether.h"],
  structs: pk.structs,
  consts: sameNames(consts),
});

describe("ARP packets", () => {
  test("a request encodes as RFC 826 says and decodes back", () => {
    const p = { op: pk.ARPOP_REQUEST, senderMac: "02:00:00:00:00:01", senderIp: "192.0.2.1", targetMac: "00:00:00:00:00:00", targetIp: "192.0.2.2" };
    const b = pk.encodeArp(p);
    expect(b.length).toBe(28);
    expect(b.subarray(0, 8).toString("hex")).toBe("0001080006040001");
    expect(b.subarray(8).toString("hex")).toBe("020000000001c0000201000000000000c0000202");
    expect(pk.decodeArp(b)).toEqual(p);
    expect(pk.decodeArp(b.subarray(0, 20))).toBeUndefined();
    expect(() => pk.macBytes("02:00:00:00:00")).toThrow(RangeError);
  });
});

const unshare = Bun.which("unshare");
const canUnshare = unshare !== null && Bun.spawnSync([unshare, "-rn", "true"]).exitCode === 0;
const setup = [
  "ip link add ta0 type veth peer name ta1", "ip link add tb0 type veth peer name tb1",
  "ip link set ta0 up", "ip link set ta1 up", "ip addr add 192.0.2.1/24 dev ta0", "ip addr add 192.0.2.2/24 dev ta1",
].join(" && ");

test.skipIf(!canUnshare)("ARP requests on a veth: the peer's address, nobody, and a link that is down", () => {
  const r = Bun.spawnSync([unshare!, "-rn", "sh", "-c", `${setup} && exec "$0" "$1"`, process.execPath, `${import.meta.dir}/fixtures/arp-netns.ts`]);
  expect(r.stderr.toString()).toBe("");
  const out = JSON.parse(r.stdout.toString());
  expect(out.found).toMatchObject({ ok: true, mac: out.ta1Mac });
  expect(out.again).toMatchObject({ ok: true, mac: out.ta1Mac });
  expect(out.missing).toMatchObject({ ok: false, reason: "timeout" });
  expect(out.missing.elapsedMs).toBeGreaterThanOrEqual(390);
  expect(out.down.errno).toBe(100); // ENETDOWN
});
