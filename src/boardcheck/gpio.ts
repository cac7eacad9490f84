// GPIO chips and their lines (GPIO character device, uAPI v2): what the recipe's
// peripheralmanager.gpio pins name, and what `scan` drafts from.
import { join } from "node:path";
import * as gpio from "../ffi/gpio";
import type { PeripheralSectionT } from "../services/peripheralmanager/recipe";
import { at, listed, missing, mismatch, ok, why, type Part } from "./part";
import { nodes, type ProbeOptions } from "./system";

export interface LineSeen { offset: number; name: string; consumer: string; used: boolean }
export interface ChipSeen { path: string; node: string; label: string; lines: LineSeen[]; error?: string }

/** Every /dev/gpiochipN with its label and lines (each line's name and consumer). */
export function listChips(o: ProbeOptions): ChipSeen[] {
  return nodes(o.dev, /^gpiochip\d+$/).map((node) => {
    const path = join(o.dev, node);
    let fd: number;
    try {
      fd = gpio.openChip(path);
    } catch (e) {
      return { path, node, label: "", lines: [], error: why(e) };
    }
    try {
      const info = gpio.chipInfo(fd);
      const lines: LineSeen[] = [];
      for (let i = 0; i < info.lines; i++) {
        const l = gpio.lineInfo(fd, i);
        lines.push({ offset: i, name: l.name, consumer: l.consumer, used: (l.flags & gpio.LineFlag.USED) !== 0n });
      }
      return { path, node, label: info.label, lines };
    } catch (e) {
      return { path, node, label: "", lines: [], error: why(e) };
    } finally {
      gpio.close(fd);
    }
  });
}

const chipText = (c: ChipSeen) => `${c.node} '${c.label}' (${c.lines.length} lines)`;
const lineText = (l: LineSeen) => (l.name ? `${l.offset} '${l.name}'` : `${l.offset}`);

/** One part per pin of the recipe. `consumer` is the service's own (its lines in use are fine). */
export function checkGpio(pins: PeripheralSectionT["gpio"], chips: ChipSeen[], consumer: string): Part[] {
  return Object.entries(pins).map(([pin, p]) => {
    const chip = p.chip!.startsWith("/") ? chips.find((c) => c.path === p.chip) : chips.find((c) => c.label === p.chip);
    if (!chip) {
      return missing("gpio", pin, `chip '${p.chip}' not found (chips here: ${listed(chips.map(chipText))})`,
        p.chip!.startsWith("/") ? "the recipe's chip path, or the device tree/driver that provides the chip" : "the recipe's chip label (gpiochip_info label), or the device tree/driver that provides the chip");
    }
    if (chip.error) return mismatch("gpio", pin, `cannot read ${chip.path}: ${chip.error}`, "the node's group and mode (udev rule) or run the check as the service's user or root");
    let line: LineSeen | undefined;
    if (typeof p.line === "number") {
      line = chip.lines[p.line];
      if (!line) return missing("gpio", pin, `line ${p.line} not on ${chipText(chip)}`, `the recipe's line offset (0-${chip.lines.length - 1})`);
    } else {
      const named = chip.lines.filter((l) => l.name === p.line);
      if (named.length === 0) {
        return missing("gpio", pin, `line '${p.line}' not found on ${chip.node} (lines there: ${listed(chip.lines.filter((l) => l.name).map((l) => `'${l.name}'`))})`,
          "the recipe's line name or the device tree's gpio-line-names");
      }
      if (named.length > 1) return mismatch("gpio", pin, `line name '${p.line}' is on ${named.length} lines of ${chip.node} (${named.map((l) => l.offset).join(", ")})`, "the recipe's line: give its offset");
      line = named[0]!;
    }
    const where = `line ${lineText(line)} on ${chipText(chip)}`;
    if (line.used && line.consumer !== consumer) {
      return at(mismatch("gpio", pin, `${where} is held by '${line.consumer || "the kernel"}'`,
        "free the line (the device tree node or driver that claims it: gpio-leds, gpio-keys, a regulator, a hog) or choose another line"), chip.path);
    }
    return at(ok("gpio", pin, line.used ? `${where}, held by the service (${consumer})` : where), chip.path);
  });
}

/** The draft's pins: every line not held by another consumer, numbered across the chips. */
export function scanGpio(chips: ChipSeen[], consumer: string): PeripheralSectionT["gpio"] {
  const out: PeripheralSectionT["gpio"] = {};
  let n = 0;
  for (const c of chips) {
    if (c.error) continue;
    const labelUnique = c.label !== "" && chips.filter((x) => x.label === c.label).length === 1;
    const chip = labelUnique ? c.label : c.path;
    for (const l of c.lines) {
      if (l.used && l.consumer !== consumer) continue;
      const nameUnique = l.name !== "" && c.lines.filter((x) => x.name === l.name).length === 1;
      out[`gpio${n++}`] = { chip, line: nameUnique ? l.name : l.offset, description: `${c.node} line ${lineText(l)}` };
    }
  }
  return out;
}
