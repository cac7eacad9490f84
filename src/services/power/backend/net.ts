// "Wireless network on" for the garage variant: a wireless interface (one with a
// `wireless` or `phy80211` entry in sysfs) whose operstate is up.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export function wirelessUp(netSysfs = "/sys/class/net"): boolean {
  let names: string[];
  try {
    names = readdirSync(netSysfs);
  } catch {
    return false;
  }
  for (const name of names) {
    const dir = join(netSysfs, name);
    if (!existsSync(join(dir, "wireless")) && !existsSync(join(dir, "phy80211"))) continue;
    try {
      if (readFileSync(join(dir, "operstate"), "utf8").trim() === "up") return true;
    } catch {
      /* interface vanished while we looked */
    }
  }
  return false;
}
