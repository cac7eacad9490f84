// The network tools service's options (docs/services/nettools.md), read by the
// platform's one loader (src/core/config.ts): the board recipe's
// serviceConfig.nettools and the Key=Value file nettools.conf (in /etc/devservices
// unless configFile names another; null: none), whose values win.
import { z } from "zod";
import { configFileOf, loadConfig } from "../../core/config";
import { DEFAULT_GROUP } from "./schemas";

const ms = (def: number) => z.coerce.number().int().positive().default(def);

export const nettoolsOptions = () => z.object({
  /** The Key=Value file (a name in /etc/devservices or an absolute path); null: no file. */
  configFile: z.string().nullable().default("nettools.conf"),
  /** Besides root, members of this group may call sethostname, createVlan and deleteVlan. */
  accessGroup: z.string().min(1).default(DEFAULT_GROUP),
  /** Where sethostname saves the name (setter syscall; systemd-hostnamed keeps /etc/hostname itself). */
  hostnameFile: z.string().min(1).default("/etc/hostname"),
  /** How sethostname sets the name: sethostname(2) and the file (syscall), systemd-hostnamed, or the syscall where the process holds CAP_SYS_ADMIN and hostnamed otherwise (auto). */
  hostnameSetter: z.enum(["auto", "syscall", "hostnamed"]).default("auto"),
  /** ICMP sockets: raw first and ping sockets where raw is refused (auto), or one kind only. */
  icmpSocket: z.enum(["auto", "raw", "dgram"]).default("auto"),
  /** How long ping and ping6 wait for the reply (spec: at most 5 s). */
  pingTimeoutMs: ms(5000).refine((v) => v <= 5000, "at most 5000 (spec: at most 5 seconds)"),
  /** How long arping waits for the reply. */
  arpTimeoutMs: ms(2000),
  /** How long checkhttp waits for the TCP connection (name resolution included). */
  httpTimeoutMs: ms(5000),
  /** The DHCP client createVlan starts for method dhcp: the first installed of udhcpc and dhclient (auto), one of them, or none. */
  dhcpClient: z.enum(["auto", "udhcpc", "dhclient", "none"]).default("auto"),
  /** udhcpc's event script (-s); empty: udhcpc's own default. */
  udhcpcScript: z.string().default(""),
  /** Metric of the default route that createVlan adds for a manual gateway. */
  gatewayMetric: z.coerce.number().int().min(0).default(1024),
  /** Where DHCP clients are looked up (before the process's PATH). */
  searchPath: z.string().default("/usr/sbin:/usr/bin:/sbin:/bin"),
});
export type NettoolsOptionsT = z.output<ReturnType<typeof nettoolsOptions>>;

const FILE_KEYS = [
  "accessGroup", "hostnameFile", "hostnameSetter", "icmpSocket", "pingTimeoutMs", "arpTimeoutMs", "httpTimeoutMs",
  "dhcpClient", "udhcpcScript", "gatewayMetric", "searchPath",
] as const;

export function loadNettoolsOptions(section: Record<string, unknown>) {
  return loadConfig({
    service: "nettools",
    schema: nettoolsOptions,
    section,
    file: configFileOf(section, "nettools.conf"),
    format: { separator: "equals" },
    fileKeys: FILE_KEYS,
    // A bad line of the file is reported and the recipe's value or the default kept.
    onInvalid: "default",
  });
}
