// The network tools service's VLAN methods against the guest kernel's 8021q driver:
// the shipped binary (dist/devservices serve nettools) on a private bus, a veth pair
// nva <-> nvb, createVlan with method manual (address, netmask, gateway), none and
// dhcp (busybox udhcpc on our side, udhcpd serving a VLAN of the peer), 109 on a
// second create, deleteVlan removing the link, its route and its DHCP client, 110
// on a second delete. Validation rows that need no VLAN are tested on the host
// (test/nettools/vlan.test.ts).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { BusClient } from "../../src/bus/client.ts";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon.ts";
import * as nl from "../../src/ffi/netlink.ts";
import { BINARY, eventually } from "../helpers/harness.ts";
import { guest } from "./vboard.ts";

const ok = { returnValue: true };
const row = (errorCode: number, errorText: string) => ({ returnValue: false, errorCode, errorText });

/** Pids of processes whose command line contains every one of words. */
function processesWith(...words: string[]): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const argv = readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0");
      if (words.every((w) => argv.includes(w))) out.push(Number(d));
    } catch {}
  }
  return out;
}

guest("nettools VLANs in the guest", () => {
  let bus: PrivateBus;
  let service: Subprocess;
  let client: BusClient;
  let udhcpd: Subprocess | undefined;
  let dir: string;
  const sock = new nl.RtNetlink();
  const call = (method: string, payload: Record<string, unknown>) => client.call("nettools", method, payload as any, { timeoutMs: 20000 });
  const addrsOf = async (name: string) => {
    const link = await nl.getLink(name, sock);
    return link ? (await nl.listAddresses(nl.AF_INET, sock)).filter((a) => a.index === link.index).map((a) => `${a.address}/${a.prefixLen}`) : [];
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "nettools-hw-"));
    await nl.createLink({ name: "nva", kind: "veth", peer: "nvb" }, sock);
    await nl.setLinkUp("nva", true, sock);
    await nl.setLinkUp("nvb", true, sock);

    // The peer's DHCP server, on its own VLAN 300 of nvb.
    await nl.createVlan("nvb", "nvb.300", 300, {}, sock);
    await nl.setLinkUp("nvb.300", true, sock);
    await nl.addAddress("nvb.300", { address: "198.51.100.1", prefixLen: 24 }, sock);
    writeFileSync(join(dir, "udhcpd.conf"), [
      "start 198.51.100.20", "end 198.51.100.30", "interface nvb.300", `lease_file ${join(dir, "udhcpd.leases")}`,
      "option subnet 255.255.255.0", "option router 198.51.100.1", "option lease 600",
    ].join("\n") + "\n");
    writeFileSync(join(dir, "udhcpd.leases"), "");
    udhcpd = spawn(["udhcpd", "-f", join(dir, "udhcpd.conf")], { stdout: "ignore", stderr: "ignore" });
    // udhcpc's event script: the lease's address on the VLAN.
    const script = join(dir, "udhcpc.sh");
    writeFileSync(script, '#!/bin/sh\ncase "$1" in bound|renew) ip addr add "$ip/${mask:-24}" dev "$interface" ;; esac\nexit 0\n');
    chmodSync(script, 0o755);

    bus = await startPrivateBus();
    const board = join(dir, "board.json");
    writeFileSync(board, JSON.stringify({
      name: "nettools-guest", backend: "virtual", services: ["nettools"],
      serviceConfig: { nettools: { configFile: null, hostnameFile: join(dir, "hostname"), dhcpClient: "udhcpc", udhcpcScript: script } },
    }));
    mkdirSync(join(dir, "state"));
    service = spawn([BINARY, "serve", "--bus", bus.address, "--board", board, "--state-dir", join(dir, "state"), "nettools"], {
      stdout: "ignore", stderr: "inherit",
    });
    client = await BusClient.connect(bus.address);
    await eventually(() => client.hasOwner("com.vendor.service.nettools"), 20000, 50);
  }, 60000);

  afterAll(async () => {
    client?.close();
    service?.kill();
    await service?.exited;
    udhcpd?.kill();
    await bus?.stop();
    for (const name of ["nva.100", "nva.200", "nva.300", "nvb.300", "nva"]) if (await nl.linkExists(name, sock)) await nl.deleteLink(name, sock);
    sock.close();
  });

  test("createVlan manual: the link, its address and its default route; the same index again is 109 and changes nothing", async () => {
    const req = { index: "100", interface: { name: "nva" }, method: "manual", address: "192.0.2.10", netmask: "255.255.255.0", gateway: "192.0.2.1" };
    expect(await call("createVlan", req)).toEqual(ok);
    const parent = (await nl.getLink("nva", sock))!;
    const vlan = (await nl.getLink("nva.100", sock))!;
    expect(vlan).toMatchObject({ kind: "vlan", vlanId: 100, vlanProtocol: nl.ETH_P_8021Q, parentIndex: parent.index });
    expect(vlan.flags & nl.IFF_UP).toBe(nl.IFF_UP);
    expect(await addrsOf("nva.100")).toEqual(["192.0.2.10/24"]);
    const routes = (await nl.listRoutes(nl.AF_INET, sock)).filter((r) => r.dstLen === 0 && r.oif === vlan.index);
    expect(routes).toEqual([expect.objectContaining({ gateway: "192.0.2.1", priority: 1024 })]);

    expect(await call("createVlan", req)).toEqual(row(109, "VLAN Index already Exist"));
    expect(await call("createVlan", { index: 100, interface: { name: "nva" } })).toEqual(row(109, "VLAN Index already Exist"));
    expect((await nl.getLink("nva.100", sock))!.index).toBe(vlan.index);
    expect(await addrsOf("nva.100")).toEqual(["192.0.2.10/24"]);
  });

  test("createVlan without a method (a number index, as the samples send it): the link is up with no address; a VLAN is no parent", async () => {
    expect(await call("createVlan", { index: 200, interface: { name: "nva" } })).toEqual(ok);
    const vlan = (await nl.getLink("nva.200", sock))!;
    expect(vlan).toMatchObject({ kind: "vlan", vlanId: 200 });
    expect(vlan.flags & nl.IFF_UP).toBe(nl.IFF_UP);
    expect(await addrsOf("nva.200")).toEqual([]);
    expect(await call("createVlan", { index: 5, interface: { name: "nva.200" } })).toEqual(row(104, "Invalid Interface"));
    expect(await nl.linkExists("nva.200.5", sock)).toBe(false);
  });

  test("deleteVlan removes the link and its route; a second delete is 110", async () => {
    expect(await call("deleteVlan", { index: "100", interface: { name: "nva" } })).toEqual(ok);
    expect(await nl.linkExists("nva.100", sock)).toBe(false);
    expect((await nl.listRoutes(nl.AF_INET, sock)).some((r) => r.gateway === "192.0.2.1")).toBe(false);
    expect(await call("deleteVlan", { index: "100", interface: { name: "nva" } })).toEqual(row(110, "VLAN Index does not Exist"));
    expect(await call("deleteVlan", { index: 200, interface: { name: "nva" } })).toEqual(ok);
    expect(await call("deleteVlan", { index: 200, interface: { name: "nva" } })).toEqual(row(110, "VLAN Index does not Exist"));
  });

  test("createVlan dhcp: udhcpc leases an address from the peer's server; deleteVlan stops it", async () => {
    expect(existsSync("/usr/bin/udhcpc") || existsSync("/sbin/udhcpc") || existsSync("/usr/sbin/udhcpc") || existsSync("/bin/udhcpc")).toBe(true);
    expect(await call("createVlan", { index: "300", interface: { name: "nva" }, method: "dhcp" })).toEqual(ok);
    expect((await nl.getLink("nva.300", sock))!).toMatchObject({ kind: "vlan", vlanId: 300 });
    const leased = await eventually(async () => {
      const a = await addrsOf("nva.300");
      return a.length ? a : undefined;
    }, 20000, 200);
    expect(leased![0]).toMatch(/^198\.51\.100\.(2\d|30)\/24$/);
    expect(processesWith("nva.300").length).toBe(1);

    expect(await call("deleteVlan", { index: "300", interface: { name: "nva" } })).toEqual(ok);
    expect(await nl.linkExists("nva.300", sock)).toBe(false);
    await eventually(() => processesWith("nva.300").length === 0, 5000, 100);
  }, 40000);
});
