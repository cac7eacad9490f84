// ping and ping6 against a peer namespace (test/nettools/env.ts): replies with time,
// bytes and TTL, names from the service's /etc/hosts, the spec's failure texts
// (unknown host, network unreachable: no route and a neighbour that never answers,
// poor network: a timeout), and ten concurrent pings waiting their 5 s on the event
// source while gethostname answers in milliseconds.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { canRun, makeWorld, type World } from "./env";

const skip = canRun();
if (skip) console.warn(`nettools ping tests skipped: ${skip}`);

describe.skipIf(skip !== null)("ping and ping6", () => {
  let w: World;
  beforeAll(async () => {
    w = await makeWorld("ping");
  }, 60000);
  afterAll(() => w?.stop());

  test("ping: an IPv4 address answers with its time, size and TTL", async () => {
    const r = await w.call("ping", { hostname: "192.0.2.2" });
    expect(r).toMatchObject({ returnValue: true, ipaddress: "192.0.2.2", hostname: "192.0.2.2", bytes: 64, ttl: 64 });
    expect(r.time).toBeGreaterThan(0);
    expect(r.time).toBeLessThan(1000);
    expect(Object.keys(r).sort()).toEqual(["bytes", "hostname", "ipaddress", "returnValue", "time", "ttl"]);
  });

  test("without ifName the routing table chooses: the host's own addresses and loopback answer too", async () => {
    for (const [method, host] of [["ping", "127.0.0.1"], ["ping", "192.0.2.1"], ["ping6", "::1"], ["ping6", "2001:db8::1"]] as const) {
      expect(await w.call(method, { hostname: host })).toMatchObject({ returnValue: true, ipaddress: host, bytes: 64 });
    }
    // Bound to the gateway's interface, the host's own loopback address is out of reach.
    expect((await w.call("ping", { hostname: "127.0.0.1", ifName: "s0" })).returnValue).toBe(false);
  }, 15000);

  test("ping: a host name resolves (IPv4) and the name is echoed", async () => {
    expect(await w.call("ping", { hostname: "peer.test" })).toMatchObject({ returnValue: true, ipaddress: "192.0.2.2", hostname: "peer.test", ttl: 64 });
    // www.example.com has an IPv6 address too: ping takes the IPv4 one.
    expect(await w.call("ping", { hostname: "www.example.com", ifName: "s0" })).toMatchObject({ returnValue: true, ipaddress: "192.0.2.2" });
  });

  test("ping6: an IPv6 address and a name answer with the hop limit", async () => {
    const r = await w.call("ping6", { hostname: "2001:db8::2" });
    expect(r).toMatchObject({ returnValue: true, ipaddress: "2001:db8::2", hostname: "2001:db8::2", bytes: 64, ttl: 64 });
    expect(r.time).toBeLessThan(1000);
    expect(await w.call("ping6", { hostname: "peer6.test", ifName: "s0" })).toMatchObject({ returnValue: true, ipaddress: "2001:db8::2", hostname: "peer6.test" });
    expect(await w.call("ping6", { hostname: "2001:0DB8:0::2" })).toMatchObject({ returnValue: true, ipaddress: "2001:db8::2" });
  });

  test("unknown host: a name nobody resolves, and the other family's literal", async () => {
    const unknown = { returnValue: false, errorText: "Ping failed: unknown host" };
    expect(await w.call("ping", { hostname: "nosuchhost.invalid" })).toEqual(unknown);
    expect(await w.call("ping6", { hostname: "nosuchhost.invalid" })).toEqual(unknown);
    expect(await w.call("ping", { hostname: "2001:db8::2" })).toEqual(unknown); // ping is IPv4 only
    expect(await w.call("ping6", { hostname: "192.0.2.2" })).toEqual(unknown);
    expect(await w.call("ping6", { hostname: "www.closed.net" })).toEqual(unknown); // no IPv6 address
  });

  test("network unreachable: no route, a missing interface, a neighbour that never answers", async () => {
    const unreachable = { returnValue: false, errorText: "Ping failed: network unreachable" };
    expect(await w.call("ping", { hostname: "203.0.113.1" })).toEqual(unreachable);
    expect(await w.call("ping", { hostname: "192.0.2.2", ifName: "nosuch0" })).toEqual(unreachable);
    expect(await w.call("ping6", { hostname: "2001:db8::2", ifName: "nosuch0" })).toEqual(unreachable);
    // s1 is down: nothing leaves through it.
    expect(await w.call("ping", { hostname: "192.0.2.2", ifName: "s1" })).toEqual(unreachable);
    // 192.0.2.99 is on the link but nobody has it: the kernel gives up after its 3
    // ARP probes and reports host unreachable, before the 5 s are over.
    const t0 = performance.now();
    const [v4, v6] = await Promise.all([w.call("ping", { hostname: "192.0.2.99" }), w.call("ping6", { hostname: "2001:db8::99" })]);
    expect(v4).toEqual(unreachable);
    expect(v6).toEqual(unreachable);
    expect(performance.now() - t0).toBeLessThan(5000);
  }, 15000);

  test("poor network: no answer within 5 s (the peer drops what it cannot route)", async () => {
    const t0 = performance.now();
    const [v4, v6] = await Promise.all([w.call("ping", { hostname: "198.51.100.1" }), w.call("ping6", { hostname: "2001:db8:1::1" })]);
    const ms = performance.now() - t0;
    expect(v4).toEqual({ returnValue: false, errorText: "Ping failed: poor network" });
    expect(v6).toEqual({ returnValue: false, errorText: "Ping failed: poor network" });
    expect(ms).toBeGreaterThanOrEqual(4950);
    expect(ms).toBeLessThan(6500);
  }, 15000);

  test("ten concurrent pings wait their 5 s each while gethostname answers in milliseconds", async () => {
    const other = await w.client();
    const t0 = performance.now();
    const pings = Array.from({ length: 10 }, () => w.call("ping", { hostname: "198.51.100.1" }).then((r) => ({ r, ms: performance.now() - t0 })));
    const latencies: number[] = [];
    let settled = false;
    const all = Promise.all(pings).then((v) => ((settled = true), v));
    while (!settled && performance.now() - t0 < 4500) {
      const t = performance.now();
      const r = await other.call("nettools", "gethostname", {});
      latencies.push(performance.now() - t);
      expect(r.returnValue).toBe(true);
      await Bun.sleep(25);
    }
    const results = await all;
    for (const { r, ms } of results) {
      expect(r).toEqual({ returnValue: false, errorText: "Ping failed: poor network" });
      expect(ms).toBeGreaterThanOrEqual(4950);
      expect(ms).toBeLessThan(7000);
    }
    latencies.sort((a, b) => a - b);
    expect(latencies.length).toBeGreaterThan(50);
    expect(latencies[Math.floor(latencies.length / 2)]!).toBeLessThan(10);
    // The tail bounded loosely, as in the platform test (a blocked loop would hold a call for 5 s).
    expect(latencies[Math.floor(latencies.length * 0.95)]!).toBeLessThan(100);
    expect(latencies.at(-1)!).toBeLessThan(1000);
  }, 20000);

  test("a request without hostname fails its schema (general code 102)", async () => {
    const schema = { returnValue: false, errorCode: 102, errorText: "Could not validate json message against schema" };
    expect(await w.call("ping", {})).toEqual(schema);
    expect(await w.call("ping6", { hostname: 6 })).toEqual(schema);
    expect(await w.call("ping", "{not json")).toEqual(schema);
  });
});
