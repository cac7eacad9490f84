// arping, resolvehostname and checkhttp against a peer namespace (test/nettools/env.ts),
// with every row of their error tables.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { canRun, makeWorld, type World } from "./env";

const skip = canRun();
if (skip) console.warn(`nettools tools tests skipped: ${skip}`);
const SCHEMA = { returnValue: false, errorCode: 102, errorText: "Could not validate json message against schema" };

describe.skipIf(skip !== null)("arping, resolvehostname, checkhttp", () => {
  let w: World;
  beforeAll(async () => {
    w = await makeWorld("tools");
  }, 60000);
  afterAll(() => w?.stop());

  describe("arping", () => {
    test("the peer's address is resolved to its MAC address", async () => {
      expect(await w.call("arping", { ifName: "s0", ipAddress: "192.0.2.2" })).toEqual({ returnValue: true, foundMacAddress: w.peerMac });
      // p0 holds 192.0.2.3 too (one interface, one MAC: how an address conflict shows).
      expect(await w.call("arping", { ifName: "s0", ipAddress: "192.0.2.3" })).toEqual({ returnValue: true, foundMacAddress: w.peerMac });
    });

    test("an address nobody holds: mac address not found, after the timeout", async () => {
      const t0 = performance.now();
      expect(await w.call("arping", { ifName: "s0", ipAddress: "192.0.2.99" })).toEqual({ returnValue: false, errorText: "arping failed: mac address not found" });
      expect(performance.now() - t0).toBeGreaterThanOrEqual(990); // arpTimeoutMs of the test board
    });

    test("an interface that is missing, down or not Ethernet: unreachable network", async () => {
      const unreachable = { returnValue: false, errorText: "arping failed: unreachable network" };
      expect(await w.call("arping", { ifName: "nosuch0", ipAddress: "192.0.2.2" })).toEqual(unreachable);
      expect(await w.call("arping", { ifName: "s1", ipAddress: "192.0.2.2" })).toEqual(unreachable);
      expect(await w.call("arping", { ifName: "lo", ipAddress: "127.0.0.1" })).toEqual(unreachable);
    });

    test("a request without ipAddress fails its schema", async () => {
      expect(await w.call("arping", { ifName: "s0" })).toEqual(SCHEMA);
    });

    test("an IPv6 or unparsable ipAddress (the payload matches the schema): arping's own failure, unreachable network", async () => {
      const unreachable = { returnValue: false, errorText: "arping failed: unreachable network" };
      expect(await w.call("arping", { ifName: "s0", ipAddress: "2001:db8::2" })).toEqual(unreachable);
      expect(await w.call("arping", { ifName: "s0", ipAddress: "peer.test" })).toEqual(unreachable);
      expect(await w.call("arping", { ifName: "s0", ipAddress: "192.0.2.256" })).toEqual(unreachable);
    });
  });

  describe("resolvehostname", () => {
    test("IPv4 and IPv6 addresses, in resolvedIpAddress (the spec's table) and resolvedIpAddresses (its sample)", async () => {
      const r = await w.call("resolvehostname", { hostname: "www.example.com" });
      expect(r.returnValue).toBe(true);
      expect([...r.resolvedIpAddresses].sort()).toEqual(["192.0.2.2", "2001:db8::2"]);
      expect(r.resolvedIpAddress).toEqual(r.resolvedIpAddresses);
      expect(Object.keys(r).sort()).toEqual(["resolvedIpAddress", "resolvedIpAddresses", "returnValue"]);
      expect(await w.call("resolvehostname", { hostname: "WWW.Closed.NET" })).toEqual({
        returnValue: true,
        resolvedIpAddress: ["192.0.2.3"],
        resolvedIpAddresses: ["192.0.2.3"],
      });
    });

    test("the host-name rule is enforced before anything else", async () => {
      const invalid = { returnValue: false, errorText: "Invalid hostname" };
      for (const hostname of ["example.com", "peer.test", "www.example.xyz", "www.example.com.", "www..com", "ww.example.com", "www.-x.org", "", "192.0.2.2"]) {
        expect(await w.call("resolvehostname", { hostname })).toEqual(invalid);
      }
      expect(await w.call("resolvehostname", { hostname: 7 })).toEqual(invalid);
      for (const hostname of ["www.a.org", "www.a.net", "www.a.gov", "www.a.edu", "www.a.jp", "www.a.int", "www.a.mil"]) {
        expect((await w.call("resolvehostname", { hostname })).errorText).toBe("Error in resolving hostname");
      }
    });

    test("a name nobody resolves", async () => {
      expect(await w.call("resolvehostname", { hostname: "www.unknown.org" })).toEqual({ returnValue: false, errorText: "Error in resolving hostname" });
    });

    test("no hostname: schema error", async () => {
      expect(await w.call("resolvehostname", {})).toEqual(SCHEMA);
    });
  });

  describe("checkhttp", () => {
    test("a TCP connection to port 80 of the host", async () => {
      expect(await w.call("checkhttp", { hostUrl: "www.example.com" })).toEqual({ returnValue: true });
    });

    test("refused, unanswered and unresolved hosts: Error in http connection, in errorrText", async () => {
      const error = { returnValue: false, errorrText: "Error in http connection" };
      expect(await w.call("checkhttp", { hostUrl: "www.closed.net" })).toEqual(error);
      expect(await w.call("checkhttp", { hostUrl: "www.unknown.org" })).toEqual(error);
      const t0 = performance.now();
      expect(await w.call("checkhttp", { hostUrl: "www.silent.org" })).toEqual(error);
      const ms = performance.now() - t0;
      expect(ms).toBeGreaterThanOrEqual(1490); // httpTimeoutMs of the test board
      expect(ms).toBeLessThan(3000);
    });

    test("the host-name rule: Invalid hostUrl", async () => {
      const invalid = { returnValue: false, errorrText: "Invalid hostUrl" };
      for (const hostUrl of ["example.com", "http://www.example.com", "www.example.com/", "www.example.com:80", "www.example", "192.0.2.2"]) {
        expect(await w.call("checkhttp", { hostUrl })).toEqual(invalid);
      }
      expect(await w.call("checkhttp", { hostUrl: ["www.example.com"] })).toEqual(invalid);
    });

    test("no hostUrl: schema error, in errorrText", async () => {
      expect(await w.call("checkhttp", {})).toEqual({ returnValue: false, errorCode: 102, errorrText: "Could not validate json message against schema" });
    });
  });
});
