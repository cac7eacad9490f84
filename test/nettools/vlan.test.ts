// createVlan and deleteVlan on the host: every row decided before a VLAN is made
// (codes 102-108 and 110), and the kernel's refusal (101) where the host kernel has
// no 802.1Q, with nothing left behind. Creating, finding and deleting real VLANs
// (and 109) runs in the virtual-board guest: test/hw/nettools.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { canRun, makeWorld, type World } from "./env";

const skip = canRun();
if (skip) console.warn(`nettools VLAN tests skipped: ${skip}`);

const row = (errorCode: number, errorText: string) => ({ returnValue: false, errorCode, errorText });
const R = {
  101: row(101, "Unknown error"),
  102: row(102, "Could not validate json message against schema"),
  103: row(103, "Invalid VLAN Index"),
  104: row(104, "Invalid Interface"),
  105: row(105, "Invalid Method"),
  106: row(106, "Invalid IP address"),
  107: row(107, "Invalid Netmask"),
  108: row(108, "Invalid Gateway"),
  110: row(110, "VLAN Index does not Exist"),
};
const s0 = { name: "s0" };
const manual = { index: 7, interface: s0, method: "manual", address: "198.18.7.10", netmask: "255.255.255.0" };

describe.skipIf(skip !== null)("createVlan and deleteVlan: validation on the host", () => {
  let w: World;
  let links: () => string[];
  beforeAll(async () => {
    w = await makeWorld("vlan", { config: { searchPath: "/nonexistent-nettools" } });
    links = () => w.inNs(w.S, "ls", "/sys/class/net").split(/\s+/).filter(Boolean).sort();
  }, 60000);
  afterAll(() => w?.stop());

  test("102: index or interface missing, or a payload that is not JSON", async () => {
    expect(await w.call("createVlan", { interface: s0 })).toEqual(R[102]);
    expect(await w.call("createVlan", { index: 5 })).toEqual(R[102]);
    expect(await w.call("deleteVlan", { interface: s0 })).toEqual(R[102]);
    expect(await w.call("deleteVlan", { index: "5" })).toEqual(R[102]);
    expect(await w.call("createVlan", "{index: 5")).toEqual(R[102]);
    expect(await w.call("deleteVlan", "[]")).toEqual(R[102]);
  });

  test("103: an index outside 1..4094 or not a whole number", async () => {
    for (const index of [0, 4095, -1, 12.5, "0", "4095", "abc", "", "12.5", "1e3", true, null, [5]]) {
      expect(await w.call("createVlan", { index, interface: s0 })).toEqual(R[103]);
      expect(await w.call("deleteVlan", { index, interface: s0 })).toEqual(R[103]);
    }
  });

  test("104: an interface that is missing, not an object, not Ethernet, or too long a name for its VLAN", async () => {
    for (const iface of [{ name: "nosuch0" }, { name: "lo" }, {}, { name: 5 }, "s0", { name: "-s0" }, { name: "" }, { name: "abcdefghijklmn" }]) {
      expect(await w.call("createVlan", { index: 5, interface: iface })).toEqual(R[104]);
    }
    for (const iface of [{ name: "nosuch0" }, {}, "s0", { name: "a/b" }]) {
      expect(await w.call("deleteVlan", { index: 5, interface: iface })).toEqual(R[104]);
    }
  });

  test("105: a method other than dhcp or manual, or addresses without manual", async () => {
    for (const extra of [{ method: "static" }, { method: "DHCP" }, { method: 1 }, { method: "dhcp", address: "198.18.7.10" }, { netmask: "255.255.255.0" }, { gateway: "198.18.7.1" }]) {
      expect(await w.call("createVlan", { index: 5, interface: s0, ...extra })).toEqual(R[105]);
    }
  });

  test("106, 107, 108: manual address, netmask and gateway", async () => {
    for (const address of [undefined, "198.18.7", "300.1.1.1", "2001:db8::7", "198.18.7.0", "198.18.7.255", "224.0.0.1", "127.0.0.1", "0.0.0.0", 5]) {
      expect(await w.call("createVlan", { ...manual, address })).toEqual(R[106]);
    }
    for (const netmask of [undefined, "255.0.255.0", "24", "/24", "0.0.0.0", "255.255.255.256", 24]) {
      expect(await w.call("createVlan", { ...manual, netmask })).toEqual(R[107]);
    }
    for (const gateway of ["198.18.8.1", "198.18.7.10", "198.18.7.255", "gateway", "2001:db8::1", "", 1]) {
      expect(await w.call("createVlan", { ...manual, gateway })).toEqual(R[108]);
    }
  });

  test("110: deleting a VLAN that is not there", async () => {
    expect(await w.call("deleteVlan", { index: 5, interface: s0 })).toEqual(R[110]);
    expect(await w.call("deleteVlan", { index: "4094", interface: { name: "s1" } })).toEqual(R[110]);
  });

  test("101: method dhcp with no DHCP client installed; nothing is created", async () => {
    const before = links();
    const r = await w.call("createVlan", { index: 5, interface: s0, method: "dhcp" });
    expect(r).toEqual({ ...R[101], reason: "no DHCP client installed (udhcpc or dhclient)" });
    expect(links()).toEqual(before);
  });

  // This kernel may have no 802.1Q: the kernel's refusal is 101, and no link is left.
  const hasVlan = !skip && Bun.spawnSync(["unshare", "-n", "sh", "-c", "ip link add d0 type veth peer name d1 && ip link add link d0 name d0.9 type vlan id 9"]).exitCode === 0;
  test.skipIf(hasVlan)("101: a kernel without 802.1Q refuses; nothing is left behind", async () => {
    const before = links();
    expect(await w.call("createVlan", { index: 5, interface: s0 })).toEqual(R[101]);
    expect(await w.call("createVlan", manual)).toEqual(R[101]);
    expect(links()).toEqual(before);
    expect(w.log.some((l) => l.includes("createVlan failed"))).toBe(true);
  });
});
