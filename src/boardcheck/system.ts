// Where the probes look: the device directory and sysfs (roots that tests may move),
// and the time one probe may take.
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { basename, join } from "node:path";

export interface ProbeOptions {
  /** Device nodes (default /dev). */
  dev: string;
  /** sysfs (default /sys). */
  sys: string;
  /** The longest one probe waits for the kernel or a device (I2C address, netlink), in ms. */
  timeoutMs: number;
}

export const DEFAULT_TIMEOUT_MS = 2000;
export const defaults = (o: Partial<ProbeOptions> = {}): ProbeOptions => ({ dev: "/dev", sys: "/sys", timeoutMs: DEFAULT_TIMEOUT_MS, ...o });

/** Node names in a directory that match, in natural order (gpiochip2 before gpiochip10). */
export function nodes(dir: string, match: RegExp): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.filter((n) => match.test(n)).sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
}

export function readText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return undefined;
  }
}

/** The sysfs device of a character node: its subsystem and kernel name (as udev matches them). */
export function sysfsOf(o: ProbeOptions, path: string): { subsystem?: string; kernel?: string } {
  try {
    const st = statSync(path);
    if (!st.isCharacterDevice()) return {};
    const rdev = st.rdev;
    // dev_t as glibc's major()/minor() split it.
    const major = (Math.floor(rdev / 256) & 0xfff) | (Math.floor(rdev / 2 ** 32) & ~0xfff);
    const minor = (rdev & 0xff) | (Math.floor(rdev / 4096) & ~0xff & 0xfffff);
    const dir = join(o.sys, "dev/char", `${major}:${minor}`);
    if (!existsSync(dir)) return {};
    const subsystem = existsSync(join(dir, "subsystem")) ? basename(realpathSync(join(dir, "subsystem"))) : undefined;
    return { subsystem, kernel: basename(realpathSync(dir)) };
  } catch {
    return {};
  }
}

export const exists = (p: string) => existsSync(p);
