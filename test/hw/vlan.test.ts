// VLANs over rtnetlink with the kernel's 8021q and dummy drivers.
import { afterAll, expect, test } from "bun:test";
import * as nl from "../../src/ffi/netlink.ts";
import { collect, guest } from "./vboard.ts";

guest("VLAN over rtnetlink", () => {
  const sock = new nl.RtNetlink();
  afterAll(async () => {
    for (const name of ["hwvl0.100", "hwvl0.200", "hwvl0.300", "hwvl0"]) if (await nl.linkExists(name, sock)) await nl.deleteLink(name, sock);
    sock.close();
  });

  test("a dummy parent comes up", async () => {
    await nl.createLink({ name: "hwvl0", kind: "dummy" }, sock);
    await nl.setLinkUp("hwvl0", true, sock);
    const link = (await nl.getLink("hwvl0", sock))!;
    expect(link.kind).toBe("dummy");
    expect(link.flags & nl.IFF_UP).toBe(nl.IFF_UP);
  });

  test("an 802.1Q VLAN is created on it, found and deleted", async () => {
    const parent = (await nl.getLink("hwvl0", sock))!;
    await nl.createVlan("hwvl0", "hwvl0.100", 100, {}, sock);
    const vlan = await nl.getLink("hwvl0.100", sock);
    expect(vlan).toMatchObject({ kind: "vlan", vlanId: 100, vlanProtocol: nl.ETH_P_8021Q, parentIndex: parent.index });
    expect((await nl.listLinks(sock)).map((l) => l.name)).toContain("hwvl0.100");
    // The same name again: EEXIST from the kernel.
    await expect(nl.createVlan("hwvl0", "hwvl0.100", 101, {}, sock)).rejects.toThrow(expect.objectContaining({ errno: 17 }));
    await nl.deleteLink("hwvl0.100", sock);
    expect(await nl.linkExists("hwvl0.100", sock)).toBe(false);
  });

  test("an 802.1ad VLAN keeps its protocol", async () => {
    await nl.createVlan("hwvl0", "hwvl0.200", 200, { protocol: nl.ETH_P_8021AD }, sock);
    expect(await nl.getLink("hwvl0.200", sock)).toMatchObject({ vlanId: 200, vlanProtocol: nl.ETH_P_8021AD });
    await nl.deleteLink("hwvl0.200", sock);
  });

  test("link notifications report a VLAN's creation and removal", async () => {
    const added: nl.LinkEvent[] = [];
    const removed = collect<nl.LinkEvent>((push) => nl.watchLinks((ev) => {
      if (ev.link.name !== "hwvl0.300") return;
      if (ev.type === nl.RTM_DELLINK) push(ev);
      else added.push(ev);
    }), 1);
    await nl.createVlan("hwvl0", "hwvl0.300", 300, {}, sock);
    await nl.deleteLink("hwvl0.300", sock);
    expect((await removed)[0]!.link.name).toBe("hwvl0.300");
    expect(added[0]).toMatchObject({ type: nl.RTM_NEWLINK, link: { name: "hwvl0.300", kind: "vlan", vlanId: 300 } });
  });

  test("a veth pair can be listed by kind", async () => {
    await nl.createLink({ name: "hwveth0", kind: "veth" }, sock);
    try {
      const kinds = (await nl.listLinks(sock)).filter((l) => l.kind === "veth").map((l) => l.name);
      expect(kinds).toContain("hwveth0");
    } finally {
      await nl.deleteLink("hwveth0", sock);
    }
  });
});
