// The methods that change the device (sethostname, createVlan, deleteVlan) with the
// default rule, root and devservices-net, checked against uid 65534 without and
// with that group (the shipped binary's `call` through setpriv): refused callers
// change nothing (the kernel's name, the hostname file, the links); members reach
// the method. The methods that change nothing stay open to every caller.
// (hostname.test.ts checks a group configured with accessGroup.)
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { spawn } from "bun";
import { binaryForAnyUser, callAsUser } from "../helpers/harness";
import { testAccounts } from "../layer/accounts";
import { canRun, makeWorld, type World } from "./env";

const skip = canRun();
if (skip) console.warn(`nettools access tests skipped: ${skip}`);

describe.skipIf(skip !== null)("privileged methods: root and devservices-net", () => {
  let w: World;
  let app: string;
  let net: number;
  let links: () => string[];
  beforeAll(async () => {
    net = testAccounts().gids["devservices-net"];
    w = await makeWorld("access", { config: { searchPath: "/nonexistent-nettools" } });
    app = binaryForAnyUser(w.dir);
    links = () => w.inNs(w.S, "ls", "/sys/class/net").split(/\s+/).filter(Boolean).sort();
  }, 60000);
  afterAll(async () => {
    await w?.stop();
    rmSync(w?.dir ?? "/nonexistent", { recursive: true, force: true });
  });

  async function callAs(groups: number[], method: string, payload: object) {
    return callAsUser({ app, bus: w.bus.address, cwd: w.dir, uid: 65534, groups }, `com.vendor.service.nettools/${method}`, payload);
  }
  const denied = (method: string) => `Permission denied: ${method} is for root and the service's access group`;

  test("without devservices-net: sethostname, createVlan and deleteVlan are refused with their failure rows; nothing changes", async () => {
    const name = (await w.call("gethostname")).hostname;
    const file = readFileSync(w.hostnameFile, "utf8");
    const before = links();
    const vlan = { index: 7, interface: { name: "s0" }, method: "manual", address: "198.18.7.10", netmask: "255.255.255.0" };
    expect(await callAs([], "sethostname", { hostname: "nobody-was-here" })).toEqual({ returnValue: false, errorText: "Error in calling sethostname", reason: denied("sethostname") });
    expect(await callAs([], "createVlan", vlan)).toEqual({ returnValue: false, errorCode: 101, errorText: "Unknown error", reason: denied("createVlan") });
    expect(await callAs([], "deleteVlan", { index: 7, interface: { name: "s0" } })).toEqual({ returnValue: false, errorCode: 101, errorText: "Unknown error", reason: denied("deleteVlan") });
    expect((await w.call("gethostname")).hostname).toBe(name);
    expect(readFileSync(w.hostnameFile, "utf8")).toBe(file);
    expect(links()).toEqual(before);
  }, 30000);

  test("with devservices-net: the same calls reach the methods (the name and the file change; the VLAN rows are the method's own)", async () => {
    expect(await callAs([net], "sethostname", { hostname: "net-member" })).toEqual({ returnValue: true });
    expect((await w.call("gethostname")).hostname).toBe("net-member");
    expect(readFileSync(w.hostnameFile, "utf8")).toBe("net-member\n");
    // No VLAN of index 9: the method's own 110, not a refusal.
    expect(await callAs([net], "deleteVlan", { index: 9, interface: { name: "s0" } })).toEqual({ returnValue: false, errorCode: 110, errorText: "VLAN Index does not Exist" });
    // createVlan reaches the kernel: made (where it has 802.1Q) or its refusal (101 without a permission reason).
    const made = await callAs([net], "createVlan", { index: 8, interface: { name: "s0" } });
    if (made.returnValue) {
      expect(links()).toContain("s0.8");
      expect(await callAs([], "deleteVlan", { index: 8, interface: { name: "s0" } })).toMatchObject({ reason: denied("deleteVlan") });
      expect(links()).toContain("s0.8");
      expect(await callAs([net], "deleteVlan", { index: 8, interface: { name: "s0" } })).toEqual({ returnValue: true });
    } else {
      expect(made).toEqual({ returnValue: false, errorCode: 101, errorText: "Unknown error" });
    }
    expect(links()).not.toContain("s0.8");
  }, 30000);

  test("the methods that change nothing are open to every caller", async () => {
    for (const [method, payload] of [
      ["arping", { ifName: "s0", ipAddress: "192.0.2.2" }],
      ["ping6", { hostname: "2001:db8::2" }],
      ["resolvehostname", { hostname: "www.example.com" }],
      ["checkhttp", { hostUrl: "www.example.com" }],
    ] as const) {
      const r = await callAs([], method, payload);
      expect(r.returnValue).toBe(true);
    }
  }, 30000);
});
