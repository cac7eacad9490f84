import { describe, expect, test } from "bun:test";
import * as nl from "../../src/ffi/netlink.ts";
import { checkAgainstHeaders, sameNames } from "./cabi.ts";

const consts: Record<string, number> = {
  AF_NETLINK: nl.AF_NETLINK, SOL_NETLINK: nl.SOL_NETLINK, NETLINK_ROUTE: nl.NETLINK_ROUTE,
  NETLINK_EXT_ACK: nl.NETLINK_EXT_ACK, NETLINK_CAP_ACK: nl.NETLINK_CAP_ACK,
  VETH_INFO_PEER: nl.VETH_INFO_PEER,
  NLM_F_REQUEST: nl.NLM_F_REQUEST, NLM_F_MULTI: nl.NLM_F_MULTI, NLM_F_ACK: nl.NLM_F_ACK, NLM_F_DUMP: nl.NLM_F_DUMP,
  NLM_F_EXCL: nl.NLM_F_EXCL, NLM_F_CREATE: nl.NLM_F_CREATE, NLM_F_CAPPED: nl.NLM_F_CAPPED, NLM_F_ACK_TLVS: nl.NLM_F_ACK_TLVS,
  NLMSG_ERROR: nl.NLMSG_ERROR, NLMSG_DONE: nl.NLMSG_DONE, NLMSGERR_ATTR_MSG: nl.NLMSGERR_ATTR_MSG,
  RTM_NEWLINK: nl.RTM_NEWLINK, RTM_DELLINK: nl.RTM_DELLINK, RTM_GETLINK: nl.RTM_GETLINK,
  IFLA_ADDRESS: nl.IFLA_ADDRESS, IFLA_IFNAME: nl.IFLA_IFNAME, IFLA_MTU: nl.IFLA_MTU, IFLA_LINK: nl.IFLA_LINK,
  IFLA_OPERSTATE: nl.IFLA_OPERSTATE, IFLA_LINKINFO: nl.IFLA_LINKINFO, IFLA_INFO_KIND: nl.IFLA_INFO_KIND,
  IFLA_INFO_DATA: nl.IFLA_INFO_DATA, IFLA_VLAN_ID: nl.IFLA_VLAN_ID, IFLA_VLAN_PROTOCOL: nl.IFLA_VLAN_PROTOCOL,
  IFF_UP: nl.IFF_UP, ETH_P_8021Q: nl.ETH_P_8021Q, ETH_P_8021AD: nl.ETH_P_8021AD, NLA_F_NESTED: nl.NLA_F_NESTED,
  NLA_F_NET_BYTEORDER: nl.NLA_F_NET_BYTEORDER, NLMSG_ALIGNTO: nl.NLMSG_ALIGNTO, NLA_ALIGNTO: nl.NLA_ALIGNTO,
  NETLINK_ADD_MEMBERSHIP: nl.NETLINK_ADD_MEMBERSHIP, NETLINK_DROP_MEMBERSHIP: nl.NETLINK_DROP_MEMBERSHIP,
  NETLINK_PKTINFO: nl.NETLINK_PKTINFO, SOCK_NONBLOCK: nl.SOCK_NONBLOCK,
  RTNLGRP_LINK: nl.RTNLGRP_LINK, RTNLGRP_NEIGH: nl.RTNLGRP_NEIGH, RTNLGRP_IPV4_IFADDR: nl.RTNLGRP_IPV4_IFADDR,
  RTNLGRP_IPV4_ROUTE: nl.RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_IFADDR: nl.RTNLGRP_IPV6_IFADDR, RTNLGRP_IPV6_ROUTE: nl.RTNLGRP_IPV6_ROUTE,
  RTMGRP_LINK: nl.RTMGRP_LINK, RTMGRP_NEIGH: nl.RTMGRP_NEIGH, RTMGRP_IPV4_IFADDR: nl.RTMGRP_IPV4_IFADDR,
  RTMGRP_IPV4_ROUTE: nl.RTMGRP_IPV4_ROUTE, RTMGRP_IPV6_IFADDR: nl.RTMGRP_IPV6_IFADDR, RTMGRP_IPV6_ROUTE: nl.RTMGRP_IPV6_ROUTE,
};
checkAgainstHeaders("netlink.ts mirrors linux/netlink.h, linux/rtnetlink.h and linux/if_link.h", {
  headers: ["sys/uio.h", "linux/netlink.h", "linux/rtnetlink.h", "linux/if_link.h", "linux/veth.h", "linux/if_ether.h", "net/if.h"],
  structs: nl.structs,
  consts: sameNames(consts),
});

describe("attribute encoding", () => {
  test("nested attributes are padded to 4 bytes and parse back", () => {
    const b = nl.encodeAttrs([
      nl.attr.str(nl.IFLA_IFNAME, "eth0.5"),
      nl.attr.nest(nl.IFLA_LINKINFO, [nl.attr.str(nl.IFLA_INFO_KIND, "vlan"), nl.attr.nest(nl.IFLA_INFO_DATA, [nl.attr.u16(nl.IFLA_VLAN_ID, 5)])]),
    ]);
    expect(b.length % 4).toBe(0);
    // "eth0.5\0" is 7 bytes: 4 + 7 = 11, padded to 12.
    expect(b.readUInt16LE(0)).toBe(11);
    const top = nl.parseAttrs(b);
    expect(top.get(nl.IFLA_IFNAME)!.toString()).toBe("eth0.5\0");
    const info = nl.parseAttrs(top.get(nl.IFLA_LINKINFO)!);
    expect(info.get(nl.IFLA_INFO_KIND)!.toString()).toBe("vlan\0");
    expect(nl.parseAttrs(info.get(nl.IFLA_INFO_DATA)!).get(nl.IFLA_VLAN_ID)!.readUInt16LE(0)).toBe(5);
  });

  test("a VLAN link message decodes", () => {
    const body = Buffer.concat([
      nl.encodeIfinfomsg({ index: 7, flags: nl.IFF_UP, type: 1 }),
      nl.encodeAttrs([
        nl.attr.str(nl.IFLA_IFNAME, "dummy0.42"), nl.attr.u32(nl.IFLA_MTU, 1500), nl.attr.u32(nl.IFLA_LINK, 3),
        nl.attr.nest(nl.IFLA_LINKINFO, [nl.attr.str(nl.IFLA_INFO_KIND, "vlan"),
          nl.attr.nest(nl.IFLA_INFO_DATA, [nl.attr.u16(nl.IFLA_VLAN_ID, 42), nl.attr.be16(nl.IFLA_VLAN_PROTOCOL, nl.ETH_P_8021AD)])]),
      ]),
    ]);
    expect(nl.decodeLink(body)).toEqual({
      index: 7, type: 1, flags: nl.IFF_UP, name: "dummy0.42", mtu: 1500, parentIndex: 3, kind: "vlan", vlanId: 42, vlanProtocol: nl.ETH_P_8021AD,
    });
  });

  test("VLAN ids outside 1..4094 are refused before reaching the kernel", async () => {
    await expect(nl.createVlan("lo", "x", 0)).rejects.toThrow(RangeError);
    await expect(nl.createVlan("lo", "x", 4095)).rejects.toThrow(RangeError);
  });

  test("a message header round-trips, and an error answer carries the errno", () => {
    const m = nl.encodeMessage(nl.RTM_GETLINK, nl.NLM_F_DUMP, 42, nl.encodeIfinfomsg({ index: 3 }));
    const [back] = nl.decodeMessages(m);
    expect(back).toMatchObject({ type: nl.RTM_GETLINK, flags: nl.NLM_F_DUMP | nl.NLM_F_REQUEST, seq: 42, pid: 0 });
    expect(back!.body.readInt32LE(4)).toBe(3);
  });
});

test("RTM_GETLINK in the test's own namespace lists the loopback link", async () => {
  const links = await nl.listLinks();
  const lo = links.find((l) => l.name === "lo");
  expect(lo).toBeDefined();
  expect(lo!.flags & nl.IFF_LOOPBACK).toBe(nl.IFF_LOOPBACK);
  expect(await nl.getLink("lo")).toMatchObject({ index: lo!.index, name: "lo" });
  expect((await nl.getLink(lo!.index))?.name).toBe("lo");
});

test("concurrent requests on one socket are matched to their answers; a closed socket refuses more", async () => {
  const s = new nl.RtNetlink();
  try {
    const [all, lo, none] = await Promise.all([nl.listLinks(s), nl.getLink("lo", s), nl.getLink("nosuchlink9", s)]);
    expect(all.map((l) => l.name)).toContain("lo");
    expect(lo?.name).toBe("lo");
    expect(none).toBeUndefined();
  } finally {
    s.close();
  }
  await expect(nl.listLinks(s)).rejects.toThrow(/EBADF|Bad file/);
});

test("a request with no answer is rejected after its timeout; an ack resolves with no messages", async () => {
  const s = new nl.RtNetlink();
  try {
    // NLMSG_NOOP is acked only when asked to be.
    expect(await s.request("NOOP+ACK", nl.NLMSG_NOOP, nl.NLM_F_ACK, Buffer.alloc(0))).toEqual([]);
    const t0 = Date.now();
    await expect(s.request("NOOP", nl.NLMSG_NOOP, 0, Buffer.alloc(0), { timeoutMs: 100 })).rejects.toMatchObject({ errno: 110 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90);
    // The socket goes on serving requests.
    expect((await nl.getLink("lo", s))?.name).toBe("lo");
  } finally {
    s.close();
  }
});

// Changing links needs a namespace of our own; where user namespaces are not allowed this is skipped.
const unshare = Bun.which("unshare");
const canUnshare = unshare !== null && Bun.spawnSync([unshare, "-rn", "true"]).exitCode === 0;
if (!canUnshare) console.warn("netlink.test.ts: unshare -rn is not allowed here; namespace tests skipped");

test.skipIf(!canUnshare)("in a fresh network namespace: link up, notifications, lookups and kernel errors", () => {
  const r = Bun.spawnSync([unshare!, "-rn", process.execPath, `${import.meta.dir}/fixtures/netlink-netns.ts`]);
  expect(r.stderr.toString()).toBe("");
  const out = JSON.parse(r.stdout.toString());
  // The multicast subscription saw lo come up (RTM_NEWLINK on RTNLGRP_LINK).
  expect(out.events).toContainEqual({ type: nl.RTM_NEWLINK, name: "lo", up: true });
  expect(out.concurrent).toEqual([1, "lo", true]);
  expect(out.links).toEqual(["lo"]);
  expect(out.upBefore).toBe(false);
  expect(out.upAfter).toBe(true);
  expect(out.missing).toBe(true);
  expect(out.deleteMissing).toBe(19); // ENODEV
  // Loopback cannot carry VLANs, and a kernel without 8021q does not know the kind.
  expect(out.vlanOnLoopback).toBe(95); // EOPNOTSUPP
  expect(out.extAck).not.toBe("");
  // A veth pair (VETH_INFO_PEER); deleting one end deletes both.
  expect(out.veth).toEqual(["veth", "veth", true, true]);
  expect(out.vethGone).toEqual(["lo"]);
});

const addrConsts: Record<string, number> = {
  RTM_NEWADDR: nl.RTM_NEWADDR, RTM_DELADDR: nl.RTM_DELADDR, RTM_GETADDR: nl.RTM_GETADDR,
  RTM_NEWROUTE: nl.RTM_NEWROUTE, RTM_DELROUTE: nl.RTM_DELROUTE, RTM_GETROUTE: nl.RTM_GETROUTE,
  AF_INET: nl.AF_INET, AF_INET6: nl.AF_INET6,
  IFA_ADDRESS: nl.IFA_ADDRESS, IFA_LOCAL: nl.IFA_LOCAL, IFA_LABEL: nl.IFA_LABEL, IFA_BROADCAST: nl.IFA_BROADCAST,
  RTA_DST: nl.RTA_DST, RTA_OIF: nl.RTA_OIF, RTA_GATEWAY: nl.RTA_GATEWAY, RTA_PRIORITY: nl.RTA_PRIORITY,
  RTA_PREFSRC: nl.RTA_PREFSRC, RTA_TABLE: nl.RTA_TABLE,
  RT_TABLE_MAIN: nl.RT_TABLE_MAIN, RTPROT_KERNEL: nl.RTPROT_KERNEL, RTPROT_BOOT: nl.RTPROT_BOOT, RTPROT_STATIC: nl.RTPROT_STATIC,
  RT_SCOPE_UNIVERSE: nl.RT_SCOPE_UNIVERSE, RT_SCOPE_LINK: nl.RT_SCOPE_LINK, RT_SCOPE_HOST: nl.RT_SCOPE_HOST,
  RTN_UNICAST: nl.RTN_UNICAST, RTN_BLACKHOLE: nl.RTN_BLACKHOLE, RTN_UNREACHABLE: nl.RTN_UNREACHABLE,
};
checkAgainstHeaders("netlink.ts mirrors linux/if_addr.h and the rtmsg of linux/rtnetlink.h", {
  headers: ["linux/netlink.h", "linux/rtnetlink.h", "linux/if_addr.h"],
  structs: nl.structs,
  consts: sameNames(addrConsts),
});

describe("address text", () => {
  test("IPv4 and IPv6 parse to bytes and print back (RFC 5952)", () => {
    expect(nl.addressBytes("192.0.2.1")).toEqual(Buffer.from([192, 0, 2, 1]));
    for (const bad of ["192.0.2", "192.0.2.256", "01.2.3.4", "1.2.3.4.5", "a.b.c.d", "", "1::2::3", "12345::", "::g", "1:2:3:4:5:6:7:8:9"]) {
      expect(nl.addressBytes(bad)).toBeUndefined();
    }
    for (const [text, back] of [
      ["2001:db8::1", "2001:db8::1"], ["::", "::"], ["::1", "::1"], ["fe80::", "fe80::"],
      ["2001:0db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"], ["::ffff:192.0.2.1", "::ffff:c000:201"], ["1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"],
    ]) expect(nl.addressText(nl.addressBytes(text!)!)).toBe(back!);
  });
});

test.skipIf(!canUnshare)("in a fresh network namespace: addresses and routes added, listed and deleted", () => {
  const r = Bun.spawnSync([unshare!, "-rn", process.execPath, `${import.meta.dir}/fixtures/netlink-addr-netns.ts`]);
  expect(r.stderr.toString()).toBe("");
  const out = JSON.parse(r.stdout.toString());
  expect(out.v4).toEqual([{ index: out.index, family: nl.AF_INET, prefixLen: 24, scope: nl.RT_SCOPE_UNIVERSE, address: "192.0.2.10", peer: "192.0.2.10", broadcast: "192.0.2.255", label: "ta0" }]);
  expect(out.v6).toEqual([{ index: out.index, family: nl.AF_INET6, prefixLen: 64, scope: nl.RT_SCOPE_UNIVERSE, address: "2001:db8::10", peer: "2001:db8::10" }]);
  expect(out.again).toBe(17); // EEXIST
  expect(out.noDefault).toBeNull();
  expect(out.def).toMatchObject({ family: nl.AF_INET, dstLen: 0, gateway: "192.0.2.1", oif: out.index, table: nl.RT_TABLE_MAIN, protocol: nl.RTPROT_STATIC, type: nl.RTN_UNICAST });
  expect(out.routeAgain).toBe(17);
  expect(out.routes).toContainEqual({ dst: "198.51.100.0", dstLen: 24, gateway: "192.0.2.2", priority: 50, protocol: nl.RTPROT_STATIC });
  expect(out.routes).toContainEqual({ dst: "192.0.2.0", dstLen: 24, gateway: null, priority: null, protocol: nl.RTPROT_KERNEL });
  expect(out.afterDelete).toBeNull();
  expect(out.v4After).toEqual([]);
});
