// The service in this process (no namespaces): its nine methods on the bus, and
// responses checked against their own schemas (the harness runs with
// --check-responses) for a success and a failure of each kind that needs no peer.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { hostname } from "node:os";
import { testEnv, type Env } from "../helpers/harness";

let env: Env;
beforeAll(async () => {
  env = await testEnv();
  await env.start(["nettools"], { serviceConfig: { nettools: { configFile: null } } });
});
afterAll(() => env.stop());

test("busctl introspect lists the nine methods", async () => {
  const out = await Bun.$`busctl --address=${env.bus.address} introspect com.vendor.service.nettools /com/vendor/service/nettools com.vendor.service.nettools`.text();
  const methods = out.split("\n").filter((l) => l.includes(" method ")).map((l) => l.trim().split(/\s+/)[0]);
  expect(methods.sort()).toEqual([
    ".arping", ".checkhttp", ".createVlan", ".deleteVlan", ".gethostname", ".ping", ".ping6", ".resolvehostname", ".sethostname",
  ]);
});

test("responses match their schemas", async () => {
  const c = await env.client();
  const call = (m: string, p: object) => c.call("nettools", m, p as any);
  expect(await call("gethostname", {})).toEqual({ returnValue: true, hostname: hostname() });
  const sub = await c.subscribe("nettools", "gethostname", { subscribe: true }, () => {});
  expect(sub.first).toEqual({ returnValue: true, hostname: hostname(), subscribed: true });
  await sub.cancel();
  if (process.getuid?.() === 0) {
    expect(await call("ping", { hostname: "127.0.0.1", ifName: "lo" })).toMatchObject({ returnValue: true, ipaddress: "127.0.0.1", ttl: 64, bytes: 64 });
    expect(await call("ping6", { hostname: "::1", ifName: "lo" })).toMatchObject({ returnValue: true, ipaddress: "::1" });
  }
  expect(await call("ping", { hostname: "nosuchhost.invalid" })).toEqual({ returnValue: false, errorText: "Ping failed: unknown host" });
  expect(await call("arping", { ifName: "lo", ipAddress: "127.0.0.1" })).toEqual({ returnValue: false, errorText: "arping failed: unreachable network" });
  // An address ARP cannot ask for (IPv6, not an address): arping's own failure, not the schema's 102.
  expect(await call("arping", { ifName: "lo", ipAddress: "::1" })).toEqual({ returnValue: false, errorText: "arping failed: unreachable network" });
  expect(await call("arping", { ifName: "lo", ipAddress: "not-an-address" })).toEqual({ returnValue: false, errorText: "arping failed: unreachable network" });
  expect(await call("resolvehostname", { hostname: "localhost" })).toEqual({ returnValue: false, errorText: "Invalid hostname" });
  expect(await call("checkhttp", { hostUrl: "localhost" })).toEqual({ returnValue: false, errorrText: "Invalid hostUrl" });
  expect(await call("createVlan", { index: 0, interface: { name: "lo" } })).toEqual({ returnValue: false, errorCode: 103, errorText: "Invalid VLAN Index" });
  expect(await call("deleteVlan", { index: 1, interface: { name: "lo" } })).toEqual({ returnValue: false, errorCode: 110, errorText: "VLAN Index does not Exist" });
  expect(await call("sethostname", { hostname: "-" })).toEqual({ returnValue: false, errorText: "Error in calling sethostname" });
});
