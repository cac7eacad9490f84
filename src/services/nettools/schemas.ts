// Network tools API (spec part 1, com.vendor.service.nettools, API level 13; the
// `interface` object from level 29). Requests are checked here first; the rules the
// spec words as error rows (host name format, VLAN index and addresses) are checked
// by the handlers so that each gets its row.
import { z } from "zod";
import { base, method, once, type Api } from "../../core/service";
import { group } from "../../core/access";
import type { InvalidRows } from "../../core/errors";
import { E } from "./errors";

/** Root or members of this group may call the privileged methods (configurable: accessGroup). */
export const DEFAULT_GROUP = "devservices-net";

const Response = once(() => z.looseObject(base()));
const PingResponse = once(() => Response().extend({
  ipaddress: z.string().optional(),
  time: z.number().optional().describe("round-trip time in milliseconds"),
  hostname: z.string().optional(),
  bytes: z.number().optional().describe("size of the ICMP reply in bytes"),
  ttl: z.number().optional().describe("TTL (IPv4) or hop limit (IPv6) of the reply"),
}));
/** The message of a missing index. */
export const INDEX_MISSING = "index is required";
/** A VLAN field present with the wrong type (or an interface without its name) is that field's row; a missing one is 102. */
const vlanInvalid: InvalidRows = {
  fields: Object.fromEntries(
    Object.entries({
      index: E.invalidIndex, interface: E.invalidInterface, method: E.invalidMethod,
      address: E.invalidAddress, netmask: E.invalidNetmask, gateway: E.invalidGateway,
    }).map(([field, row]) => [field, { missing: E.schema, invalid: row }]),
  ),
};
const vlanRequest = once(() => ({
  index: z
    .union([z.string(), z.number()], { error: (iss) => (iss.input === undefined ? INDEX_MISSING : "index must be a string or a number") })
    .describe("VLAN ID 1 to 4094, as a string or a number"),
  interface: z.looseObject({ name: z.string().describe("the network interface the VLAN is made on") }),
}));

export const api = {
  arping: method({
    summary: "Broadcasts one ARP request for ipAddress on interface ifName and answers the MAC address that replied.",
    request: () => z.looseObject({ ifName: z.string().min(1), ipAddress: z.string().min(1).describe("IPv4 address (another: arping failed: unreachable network)") }),
    response: () => Response().extend({ foundMacAddress: z.string().optional() }),
  }),
  checkhttp: method({
    summary: "Opens a TCP connection to port 80 of hostUrl (www.<name>.<org|com|net|gov|edu|jp|int|mil>); errors in `errorrText`.",
    request: () => z.looseObject({ hostUrl: z.string() }),
    invalid: { fields: { hostUrl: { missing: E.schema, invalid: E.invalidHostUrl } } },
    response: () => z.looseObject({ returnValue: z.boolean(), errorCode: z.number().optional(), errorrText: z.string().optional() }),
  }),
  createVlan: method({
    summary: "Creates VLAN index on interface.name (named <interface>.<index>) and brings it up; method dhcp starts a DHCP client on it, manual sets address/netmask and an optional gateway.",
    request: () => z.looseObject({
      ...vlanRequest(),
      method: z.string().optional().describe("dhcp or manual"),
      address: z.string().optional().describe("IPv4 address (method manual)"),
      netmask: z.string().optional().describe("dotted netmask, e.g. 255.255.255.0 (method manual)"),
      gateway: z.string().optional().describe("IPv4 gateway in the address's subnet (method manual)"),
    }),
    invalid: vlanInvalid,
    response: () => Response(),
    access: group(DEFAULT_GROUP),
  }),
  deleteVlan: method({
    summary: "Deletes VLAN index of interface.name (and stops the DHCP client createVlan started on it).",
    request: () => z.looseObject(vlanRequest()),
    invalid: vlanInvalid,
    response: () => Response(),
    access: group(DEFAULT_GROUP),
  }),
  gethostname: method({
    summary: "The system host name; with subscribe true, every later change is pushed as {returnValue, hostname}.",
    request: () => z.looseObject({ subscribe: z.boolean().optional() }),
    response: () => Response().extend({ hostname: z.string().optional(), subscribed: z.boolean().optional() }),
    subscribable: true,
  }),
  ping: method({
    summary: "One ICMP echo to hostname (a name or an IPv4 address) through ifName (default: the interface the routing table chooses, the default gateway's for other networks); waits at most 5 s.",
    request: () => z.looseObject({ hostname: z.string().min(1), ifName: z.string().min(1).optional() }),
    response: () => PingResponse(),
  }),
  ping6: method({
    summary: "One ICMPv6 echo to hostname (a name or an IPv6 address) through ifName (default: the interface the routing table chooses, the default gateway's for other networks); waits at most 5 s.",
    request: () => z.looseObject({ hostname: z.string().min(1), ifName: z.string().min(1).optional() }),
    response: () => PingResponse(),
  }),
  resolvehostname: method({
    summary: "Resolves hostname (www.<name>.<org|com|net|gov|edu|jp|int|mil>) to the IPv4 and IPv6 addresses of the families this host has addresses of; answered in resolvedIpAddress (the spec's table) and resolvedIpAddresses (its sample), the same list.",
    request: () => z.looseObject({ hostname: z.string() }),
    invalid: { fields: { hostname: { missing: E.schema, invalid: E.invalidHostname } } },
    response: () => Response().extend({ resolvedIpAddress: z.array(z.string()).optional(), resolvedIpAddresses: z.array(z.string()).optional() }),
  }),
  sethostname: method({
    summary: "Sets the system host name (sethostname(2)) and writes it to the hostname file (atomically).",
    request: () => z.looseObject({ hostname: z.string() }),
    invalid: { fields: { hostname: { missing: E.schema, invalid: E.invalidHostname } } },
    response: () => Response(),
    access: group(DEFAULT_GROUP),
  }),
} satisfies Api;
