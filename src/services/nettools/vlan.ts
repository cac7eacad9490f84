// createVlan and deleteVlan over rtnetlink (src/ffi/netlink.ts): validation in the
// order of the spec's codes, the VLAN link <interface>.<index>, a manual address
// and gateway (RTM_NEWADDR, RTM_NEWROUTE), and the DHCP client for method dhcp,
// started without a shell (an argument array) and stopped by its pid file.
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { ErrorRow } from "../../core/errors";
import { readJsonStore, writeJsonStore, StoreTooNew, type JsonFormat } from "../../core/store";
import * as nl from "../../ffi/netlink";
import { E } from "./errors";
import { sameSubnet } from "./net";

/** IFNAMSIZ - 1: the longest link name. */
const IFNAME_MAX = 15;

/** A VLAN index: an integer 1 to 4094, given as a number or a string of digits. */
export function parseIndex(v: unknown): number | undefined {
  const n = typeof v === "number" ? v : typeof v === "string" && /^\s*\d{1,4}\s*$/.test(v) ? Number(v) : NaN;
  return Number.isInteger(n) && n >= 1 && n <= 4094 ? n : undefined;
}

/** Link names a VLAN can be made on: what the kernel accepts, without a leading '-' (it would read as an option to a DHCP client). */
export const validIfName = (s: string) => /^[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,14}$/.test(s) && s !== "." && s !== "..";

const ipv4 = (s: unknown): Buffer | undefined => {
  if (typeof s !== "string") return undefined;
  const b = nl.addressBytes(s);
  return b?.length === 4 ? b : undefined;
};

/** Prefix length of a contiguous dotted netmask (255.255.255.0 -> 24); undefined otherwise. */
export function netmaskPrefix(mask: unknown): number | undefined {
  const b = ipv4(mask);
  if (!b) return undefined;
  const v = b.readUInt32BE(0);
  const prefix = 32 - Math.log2((~v >>> 0) + 1);
  return Number.isInteger(prefix) && prefix >= 1 ? prefix : undefined;
}

export interface ManualConfig {
  address: string;
  prefixLen: number;
  broadcast?: string;
  gateway?: string;
}

export interface VlanRequest {
  index: number;
  ifName: string;
  method?: "dhcp" | "manual";
  manual?: ManualConfig;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; row: ErrorRow };

/**
 * The request's own rules, before the kernel is asked anything: index (103), the
 * interface name (104), method (105), then for manual: address (106), netmask
 * (107), gateway (108). address, netmask and gateway belong to method manual only.
 */
export function checkCreate(req: { index: unknown; interface: { name: string }; method?: string; address?: string; netmask?: string; gateway?: string }): Checked<VlanRequest> {
  const index = parseIndex(req.index);
  if (index === undefined) return { ok: false, row: E.invalidIndex };
  const ifName = req.interface.name;
  if (!validIfName(ifName) || `${ifName}.${index}`.length > IFNAME_MAX) return { ok: false, row: E.invalidInterface };
  const method = req.method;
  if (method !== undefined && method !== "dhcp" && method !== "manual") return { ok: false, row: E.invalidMethod };
  const hasManual = req.address !== undefined || req.netmask !== undefined || req.gateway !== undefined;
  if (method !== "manual") {
    if (hasManual) return { ok: false, row: E.invalidMethod };
    return { ok: true, value: { index, ifName, method } };
  }
  const address = ipv4(req.address);
  if (!address || !usableHost(address)) return { ok: false, row: E.invalidAddress };
  const prefixLen = netmaskPrefix(req.netmask);
  if (prefixLen === undefined) return { ok: false, row: E.invalidNetmask };
  if (prefixLen <= 30 && (isNetworkOrBroadcast(address, prefixLen))) return { ok: false, row: E.invalidAddress };
  const manual: ManualConfig = { address: nl.addressText(address), prefixLen };
  if (prefixLen <= 30) manual.broadcast = broadcastOf(address, prefixLen);
  if (req.gateway !== undefined) {
    const gw = ipv4(req.gateway);
    if (!gw || !usableHost(gw) || gw.equals(address) || !sameSubnet(gw, address, prefixLen) || (prefixLen <= 30 && isNetworkOrBroadcast(gw, prefixLen))) {
      return { ok: false, row: E.invalidGateway };
    }
    manual.gateway = nl.addressText(gw);
  }
  return { ok: true, value: { index, ifName, method, manual } };
}

/** deleteVlan's own rules: index (103), interface name (104). */
export function checkDelete(req: { index: unknown; interface: { name: string } }): Checked<{ index: number; ifName: string }> {
  const index = parseIndex(req.index);
  if (index === undefined) return { ok: false, row: E.invalidIndex };
  if (!validIfName(req.interface.name)) return { ok: false, row: E.invalidInterface };
  return { ok: true, value: { index, ifName: req.interface.name } };
}

/** Not 0.0.0.0/8, loopback, multicast, reserved or broadcast. */
function usableHost(a: Buffer): boolean {
  const first = a[0]!;
  return first !== 0 && first !== 127 && first < 224;
}

function isNetworkOrBroadcast(a: Buffer, prefixLen: number): boolean {
  const v = a.readUInt32BE(0);
  const host = prefixLen === 0 ? 0xffffffff : (~(0xffffffff << (32 - prefixLen)) >>> 0);
  return (v & host) === 0 || (v & host) >>> 0 === host;
}

function broadcastOf(a: Buffer, prefixLen: number): string {
  const host = (~(0xffffffff << (32 - prefixLen)) >>> 0);
  const b = Buffer.alloc(4);
  b.writeUInt32BE((a.readUInt32BE(0) | host) >>> 0);
  return nl.addressText(b);
}

/** The VLAN of that index on that parent (by kind, parent and id, whatever its name). */
export async function findVlan(parentIndex: number, index: number, sock: nl.RtNetlink): Promise<nl.Link | undefined> {
  return (await nl.listLinks(sock)).find((l) => l.kind === "vlan" && l.parentIndex === parentIndex && l.vlanId === index);
}

// DHCP clients.

export type DhcpClientName = "udhcpc" | "dhclient";

/** The DHCP client to run: the configured one, or the first of udhcpc and dhclient found; null: none installed (or none configured). */
export function findDhcpClient(choice: "auto" | DhcpClientName | "none", searchPath: string): { name: DhcpClientName; path: string } | null {
  if (choice === "none") return null;
  const PATH = [searchPath, process.env.PATH ?? ""].filter(Boolean).join(":");
  for (const name of choice === "auto" ? (["udhcpc", "dhclient"] as const) : [choice]) {
    const path = Bun.which(name, { PATH });
    if (path) return { name, path };
  }
  return null;
}

/**
 * The layout of the DHCP clients' files in the state directory (docs/services/nettools.md,
 * "State"), recorded in dhcp-state.json. Format 1: `dhcp-<link>.pid` (the pid of the
 * client started for the link, written by the client) and `dhclient-<link>.leases`
 * (dhclient's leases); the product before versions had the same files and no record.
 */
export const DHCP_FORMAT: JsonFormat = { what: "the DHCP clients' state", version: 1, steps: {} };
export const DHCP_STATE_FILE = "dhcp-state.json";

export class DhcpClients {
  private recorded = false;

  /** Throws StoreTooNew when a newer binary's layout is found (a rollback): its pid files are neither read nor removed. */
  constructor(private dir: string, private log: { info: (o: object, m: string) => void; warn: (o: object, m: string) => void }) {
    try {
      this.recorded = readJsonStore(join(dir, DHCP_STATE_FILE), DHCP_FORMAT).value !== undefined;
    } catch (e) {
      if (e instanceof StoreTooNew) throw e;
      // An unreadable record: the files are format 1's (the only one there has been); it is written again.
      log.warn({ err: e, file: join(dir, DHCP_STATE_FILE) }, "DHCP clients' state record unreadable; written again");
    }
  }

  /** Records the layout's format before the first client's files are made. */
  private record() {
    if (this.recorded) return;
    writeJsonStore(join(this.dir, DHCP_STATE_FILE), DHCP_FORMAT, {});
    this.recorded = true;
  }

  private pidFile(vlan: string) {
    return join(this.dir, `dhcp-${vlan}.pid`);
  }

  /** The argument vector of the client for a link (no shell is involved). */
  argv(client: { name: DhcpClientName; path: string }, vlan: string, udhcpcScript: string): string[] {
    const pid = this.pidFile(vlan);
    if (client.name === "udhcpc") {
      // -f: stays in the foreground (our child, reparented if the service exits); -p: pid file for deleteVlan.
      return [client.path, "-f", "-i", vlan, "-p", pid, ...(udhcpcScript ? ["-s", udhcpcScript] : [])];
    }
    // -nw: daemonizes at once; its own pid and lease files.
    return [client.path, "-nw", "-pf", pid, "-lf", join(this.dir, `dhclient-${vlan}.leases`), vlan];
  }

  /** Starts the client on vlan; resolves once it runs (or rejects when it exits at once). */
  async start(client: { name: DhcpClientName; path: string }, vlan: string, udhcpcScript: string): Promise<number> {
    mkdirSync(this.dir, { recursive: true });
    this.record();
    const argv = this.argv(client, vlan, udhcpcScript);
    const proc = Bun.spawn(argv, { stdin: "ignore", stdout: "ignore", stderr: "ignore" });
    proc.unref();
    // A client that cannot start (bad option, no such link) exits within moments.
    const early = await Promise.race([proc.exited.then((code) => ({ code })), Bun.sleep(200).then(() => null)]);
    if (early && (client.name === "udhcpc" || early.code !== 0)) {
      throw new Error(`${client.name} exited with status ${early.code} at once`);
    }
    this.log.info({ vlan, argv, pid: proc.pid }, "DHCP client started");
    return proc.pid;
  }

  /** Stops the client started for vlan, if its pid file names a live process that is one. */
  stop(vlan: string): boolean {
    const file = this.pidFile(vlan);
    if (!existsSync(file)) return false;
    let stopped = false;
    try {
      const pid = Number(readFileSync(file, "utf8").trim());
      if (Number.isInteger(pid) && pid > 1) {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        if (cmdline.includes(vlan)) {
          process.kill(pid, "SIGTERM");
          stopped = true;
          this.log.info({ vlan, pid }, "DHCP client stopped");
        }
      }
    } catch (e) {
      this.log.warn({ vlan, err: e }, "DHCP client not stopped");
    }
    rmSync(file, { force: true });
    rmSync(join(this.dir, `dhclient-${vlan}.leases`), { force: true });
    return stopped;
  }
}
