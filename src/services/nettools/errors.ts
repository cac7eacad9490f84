// Network tools errors (spec part 1, "Errors": network tools service): the table as
// data. Texts are the table's; a parenthesis in the table explains a row and is not
// part of its text (docs/decisions/nettools.md).
import type { ErrorRow } from "../../core/errors";

const none = (text: string): ErrorRow => ({ code: null, text });

export const E = {
  arpUnreachable: none("arping failed: unreachable network"),
  arpNotFound: none("arping failed: mac address not found"),
  /** checkhttp's texts travel in the field spelled `errorrText` (spec). */
  invalidHostUrl: none("Invalid hostUrl"),
  httpError: none("Error in http connection"),
  gethostnameFailed: none("Error in calling gethostname"),
  pingPoorNetwork: none("Ping failed: poor network"),
  pingUnknownHost: none("Ping failed: unknown host"),
  pingUnreachable: none("Ping failed: network unreachable"),
  invalidHostname: none("Invalid hostname"),
  resolveFailed: none("Error in resolving hostname"),
  hostnameFile: none("Error in setting the hostname file"),
  sethostnameFailed: none("Error in calling sethostname"),
  /** arping, gethostname, ping, ping6, resolvehostname: code None. */
  unknown: none("Unknown error"),
  // createVlan / deleteVlan, and the general rows.
  invalidMethod: { code: 105, text: "Invalid Method" },
  invalidAddress: { code: 106, text: "Invalid IP address" },
  invalidNetmask: { code: 107, text: "Invalid Netmask" },
  invalidGateway: { code: 108, text: "Invalid Gateway" },
  vlanExists: { code: 109, text: "VLAN Index already Exist" },
  vlanMissing: { code: 110, text: "VLAN Index does not Exist" },
  general: { code: 101, text: "Unknown error" },
  schema: { code: 102, text: "Could not validate json message against schema" },
  invalidIndex: { code: 103, text: "Invalid VLAN Index" },
  invalidInterface: { code: 104, text: "Invalid Interface" },
} as const satisfies Record<string, ErrorRow>;
