// Network interfaces, power states, media mount points, and the groups and modes
// of the device nodes the services open.
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { listLinks } from "../ffi/netlink";
import { PowerMachine } from "../services/power/machine";
import { bounded, listed, missing, mismatch, ok, unchecked, why, type Part } from "./part";
import type { HardwareSectionT } from "./section";
import { exists, nodes, readText, sysfsOf, type ProbeOptions } from "./system";

export async function listInterfaces(o: ProbeOptions): Promise<string[]> {
  return (await bounded(listLinks(), o.timeoutMs, "RTM_GETLINK")).map((l) => l.name);
}

export function checkNetwork(want: HardwareSectionT["network"], here: string[] | Error): Part[] {
  return Object.entries(want).map(([name, n]) => {
    const p = here instanceof Error
      ? unchecked("network", name, `interfaces not listed: ${why(here)}`)
      : here.includes(name)
        ? ok("network", name, `interface ${name} is there`)
        : missing("network", name, `interface ${name} not found (interfaces here: ${listed(here)})`,
          "the recipe's name, or the driver and interface naming (udev/systemd .link files, the device tree's ethernet alias)");
    return { ...p, required: p.required && !n.optional };
  });
}

/** The power2 machine parses, and each action has a way to happen here. */
export function checkPower(section: unknown, garageNetworkName: string, o: ProbeOptions): Part[] {
  let machine: PowerMachine;
  try {
    machine = PowerMachine.parse(section, "recipe");
  } catch (e) {
    return [mismatch("power", "power2", (e as Error).message.replace(/^recipe: /, ""), "the recipe's power2 section (docs/power-states.md)")];
  }
  const states = Object.keys(machine.spec.states);
  const actions = states.filter((s) => machine.action(s));
  // The service asks logind when it owns its name (a systemd system), else calls reboot(2).
  const logind = exists("/run/systemd/system");
  const parts: Part[] = [ok("power", "power2", `${states.length} states from ${machine.initialState}`)];
  for (const s of actions) {
    parts.push(ok("power", s, `${machine.action(s)} by ${logind ? "logind (a systemd system)" : "reboot(2) (no systemd here; the unit grants CAP_SYS_BOOT)"}`));
  }
  if (machine.spec.garage) {
    const wireless = nodes(join(o.sys, "class/net"), /./).filter((n) => exists(join(o.sys, "class/net", n, "wireless")) || exists(join(o.sys, "class/net", n, "phy80211")));
    if (!garageNetworkName) parts.push(ok("power", "garage", "no GarageNetworkName: the garage variant is never entered"));
    else if (wireless.length === 0) parts.push(missing("power", "garage", `GarageNetworkName is '${garageNetworkName}' but no wireless interface is here`, "the Wi-Fi driver and firmware, or leave GarageNetworkName empty"));
    else parts.push(ok("power", "garage", `wireless ${wireless.join(", ")}`));
  }
  return parts;
}

/** Whether a directory is a mount point of this mount namespace. */
function mountPoints(): Set<string> {
  const out = new Set<string>();
  let text = "";
  try {
    text = readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return out;
  }
  for (const line of text.split("\n")) {
    const f = line.split(" ");
    if (f[4]) out.add(f[4].replace(/\\(\d{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8))));
  }
  return out;
}

/** Directories: the media indexer's (must exist) and the hardware section's mounts. */
export function checkMounts(dirs: { path: string; why: string }[], mounts: HardwareSectionT["mounts"]): Part[] {
  const parts: Part[] = [];
  const isDir = (p: string) => {
    try {
      return statSync(p).isDirectory();
    } catch {
      return false;
    }
  };
  for (const d of dirs) {
    parts.push(isDir(d.path) ? ok("mount", d.path, `directory (${d.why})`) : missing("mount", d.path, `no directory ${d.path} (${d.why})`, "create it in the image (tmpfiles.d or the rootfs), or change the service's option"));
  }
  const mounted = mountPoints();
  for (const [path, m] of Object.entries(mounts)) {
    let p: Part;
    if (!isDir(path)) p = missing("mount", path, `no directory ${path}`, "create the mount point in the image, or the recipe's mounts");
    else if (m.mounted && !mounted.has(path)) p = missing("mount", path, `${path} is a directory but nothing is mounted on it`, "fstab, a systemd .mount or automount unit, or the storage's driver");
    else p = ok("mount", path, m.mounted ? `mounted` : "directory");
    parts.push({ ...p, required: p.required && !m.optional });
  }
  return parts;
}

/** One udev rule of 70-devservices.rules: nodes of a subsystem whose kernel name matches get a group and mode. */
export interface NodeRule { subsystem: string; kernel: RegExp; kernelText: string; group: string; mode: number }

const glob = (g: string) => new RegExp(`^(?:${g.split("|").map((a) => a.replace(/[.+^${}()\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".")).join("|")})$`);

/** The rules that set GROUP and MODE (SUBSYSTEM== and KERNEL== matches only, as the layer writes them). */
export function parseRules(text: string): NodeRule[] {
  const rules: NodeRule[] = [];
  for (const line of text.split("\n")) {
    if (/^\s*(#|$)/.test(line)) continue;
    const get = (key: string, op: string) => new RegExp(`(?:^|[ ,])${key}${op}"([^"]*)"`).exec(line)?.[1];
    const subsystem = get("SUBSYSTEM", "=="), kernel = get("KERNEL", "=="), group = get("GROUP", "="), mode = get("MODE", "=");
    if (subsystem && kernel && group && mode) rules.push({ subsystem, kernel: glob(kernel), kernelText: kernel, group, mode: parseInt(mode, 8) });
  }
  return rules;
}

/** Where udev reads rules, in its order of precedence. */
export const RULE_DIRS = ["/etc/udev/rules.d", "/run/udev/rules.d", "/usr/lib/udev/rules.d", "/lib/udev/rules.d"];
export const RULES_FILE = "70-devservices.rules";

export function findRules(): string | undefined {
  return RULE_DIRS.map((d) => join(d, RULES_FILE)).find(exists);
}

function groupNames(): Map<number, string> & { names: Set<string> } {
  const m = new Map<number, string>() as Map<number, string> & { names: Set<string> };
  m.names = new Set();
  for (const line of (readText("/etc/group") ?? "").split("\n")) {
    const [name, , gid] = line.split(":");
    if (name && gid !== undefined) {
      if (!m.has(Number(gid))) m.set(Number(gid), name);
      m.names.add(name);
    }
  }
  return m;
}

/** Each node's group and mode against the rule that the units' groups rely on. */
export function checkAccess(paths: string[], rules: NodeRule[], rulesFile: string, o: ProbeOptions): Part[] {
  const groups = groupNames();
  const parts: Part[] = [];
  for (const path of [...new Set(paths)]) {
    const { subsystem, kernel } = sysfsOf(o, path);
    const rule = subsystem && kernel ? rules.find((r) => r.subsystem === subsystem && r.kernel.test(kernel)) : undefined;
    if (!rule) {
      parts.push(unchecked("access", path, `no rule of ${rulesFile} is for this node (${subsystem ?? "no sysfs device"}${kernel ? ` ${kernel}` : ""})`));
      continue;
    }
    let st;
    try {
      st = statSync(path);
    } catch (e) {
      parts.push(unchecked("access", path, `cannot stat: ${why(e)}`));
      continue;
    }
    const group = groups.get(st.gid) ?? String(st.gid);
    const mode = st.mode & 0o777;
    const want = `group ${rule.group} mode ${rule.mode.toString(8).padStart(4, "0")}`;
    const have = `group ${group} mode ${mode.toString(8).padStart(4, "0")}`;
    if (!groups.names.has(rule.group)) {
      parts.push(mismatch("access", path, `${have}; the rule's group ${rule.group} does not exist`, `add the group ${rule.group} to the image (the layer's useradd), so the units' SupplementaryGroups reach the node`));
    } else if (group !== rule.group || (mode & rule.mode) !== rule.mode) {
      parts.push(mismatch("access", path, `${have}, the rule (${subsystem} ${rule.kernelText}) gives ${want}`, `check that udev applied ${rulesFile} (udevadm test, udevadm trigger) and that no later rule overrides it`));
    } else {
      parts.push(ok("access", path, have));
    }
  }
  return parts;
}
