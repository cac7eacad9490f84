// The power configuration file (spec: "the timeout is a config option in the power
// configuration file, default 15 minutes, format HH:MM:SS"). Format and options:
// docs/services/power.md.
import { existsSync, readFileSync } from "node:fs";

export const DEFAULT_CONFIG_FILE = "/etc/devservices/power.conf";
export const DEFAULT_TRANSITION_TIMEOUT_S = 15 * 60;

export interface PowerConfig {
  /** How long a transition waits for client votes before it proceeds, in seconds. */
  transitionTimeoutS: number;
  /** The network name the garage variant needs (empty: garage never entered). */
  garageNetworkName: string;
}

/** `HH:MM:SS` to seconds; undefined when the text is not that format. */
export function parseHms(text: string): number | undefined {
  const m = /^(\d{1,3}):([0-5]\d):([0-5]\d)$/.exec(text.trim());
  if (!m) return undefined;
  return Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]);
}

/**
 * Reads `Key=Value` lines (`#` and `;` comments and `[section]` headers are
 * ignored). Problems are returned, not thrown: the service keeps the defaults.
 */
export function parsePowerConfig(text: string): { config: PowerConfig; problems: string[] } {
  const config: PowerConfig = { transitionTimeoutS: DEFAULT_TRANSITION_TIMEOUT_S, garageNetworkName: "" };
  const problems: string[] = [];
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";") || line.startsWith("[")) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) {
      problems.push(`line ${i + 1}: expected Key=Value`);
      continue;
    }
    const key = line.slice(0, eq).trim();
    const value = line.slice(eq + 1).trim();
    if (key === "TransitionTimeout") {
      const s = parseHms(value);
      if (s === undefined) problems.push(`line ${i + 1}: TransitionTimeout must be HH:MM:SS, got '${value}'`);
      else config.transitionTimeoutS = s;
    } else if (key === "GarageNetworkName") {
      config.garageNetworkName = value;
    } else {
      problems.push(`line ${i + 1}: unknown option ${key}`);
    }
  }
  return { config, problems };
}

export function loadPowerConfig(file: string): { config: PowerConfig; problems: string[]; found: boolean } {
  if (!existsSync(file)) return { ...parsePowerConfig(""), found: false };
  return { ...parsePowerConfig(readFileSync(file, "utf8")), found: true };
}
