// VLANs over rtnetlink with the kernel's 8021q and dummy drivers.
import { afterAll, expect, test } from "bun:test";
import * as nl from "../../src/ffi/netlink.ts";
import { guest } from "./vboard.ts";

guest("VLAN over rtnetlink", () => {
  const sock = new nl.RtNetlink();
  afterAll(() => {
    for (const name of ["hwvl0.100", "hwvl0.200", "hwvl0"]) if (nl.linkExists(name, sock)) nl.deleteLink(name, sock);
    sock.close();
  });

  test("a dummy parent comes up", () => {
    nl.createLink({ name: "hwvl0", kind: "dummy" }, sock);
    nl.setLinkUp("hwvl0", true, sock);
    const link = nl.getLink("hwvl0", sock)!;
    expect(link.kind).toBe("dummy");
    expect(link.flags & nl.IFF_UP).toBe(nl.IFF_UP);
  });

  test("an 802.1Q VLAN is created on it, found and deleted", () => {
    const parent = nl.getLink("hwvl0", sock)!;
    nl.createVlan("hwvl0", "hwvl0.100", 100, {}, sock);
    const vlan = nl.getLink("hwvl0.100", sock);
    expect(vlan).toMatchObject({ kind: "vlan", vlanId: 100, vlanProtocol: nl.ETH_P_8021Q, parentIndex: parent.index });
    expect(nl.listLinks(sock).map((l) => l.name)).toContain("hwvl0.100");
    // The same name again: EEXIST from the kernel.
    expect(() => nl.createVlan("hwvl0", "hwvl0.100", 101, {}, sock)).toThrow(expect.objectContaining({ errno: 17 }));
    nl.deleteLink("hwvl0.100", sock);
    expect(nl.linkExists("hwvl0.100", sock)).toBe(false);
  });

  test("an 802.1ad VLAN keeps its protocol", () => {
    nl.createVlan("hwvl0", "hwvl0.200", 200, { protocol: nl.ETH_P_8021AD }, sock);
    expect(nl.getLink("hwvl0.200", sock)).toMatchObject({ vlanId: 200, vlanProtocol: nl.ETH_P_8021AD });
    nl.deleteLink("hwvl0.200", sock);
  });

  test("a veth pair can be listed by kind", () => {
    nl.createLink({ name: "hwveth0", kind: "veth" }, sock);
    try {
      const kinds = nl.listLinks(sock).filter((l) => l.kind === "veth").map((l) => l.name);
      expect(kinds).toContain("hwveth0");
    } finally {
      nl.deleteLink("hwveth0", sock);
    }
  });
});
