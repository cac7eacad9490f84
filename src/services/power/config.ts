// The power service's options (docs/services/power.md), read by the platform's one
// loader (src/core/config.ts): the board recipe's serviceConfig.power2 and the power
// configuration file (spec: "the timeout is a config option in the power
// configuration file, default 15 minutes, format HH:MM:SS"), whose values win.
import { z } from "zod";
import { configFromText, loadConfig, type ConfigSource, type KeyValueFormat } from "../../core/config";

export const DEFAULT_CONFIG_FILE = "/etc/devservices/power.conf";
export const DEFAULT_TRANSITION_TIMEOUT_S = 15 * 60;

/** `HH:MM:SS` to seconds; undefined when the text is not that format. */
export function parseHms(text: string): number | undefined {
  const m = /^(\d{1,3}):([0-5]\d):([0-5]\d)$/.exec(text.trim());
  if (!m) return undefined;
  return Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]);
}

const hms = () => z
  .string()
  .refine((s) => parseHms(s) !== undefined, "must be HH:MM:SS")
  .transform((s) => parseHms(s)!);

/** Every option: the recipe's (lower camel case) and the file's (`Key=Value`). */
export const powerOptions = () => z.object({
  configFile: z.string().default(DEFAULT_CONFIG_FILE),
  backend: z.enum(["auto", "logind", "syscall", "virtual"]).default("auto"),
  logindBus: z.string().optional(),
  netSysfs: z.string().default("/sys/class/net"),
  /** How long a transition waits for client votes before it proceeds, in seconds. */
  TransitionTimeout: hms().default(DEFAULT_TRANSITION_TIMEOUT_S),
  /** The network name the garage variant needs (empty: garage never entered). */
  GarageNetworkName: z.string().default(""),
});
export type PowerOptionsT = z.output<ReturnType<typeof powerOptions>>;

/** What power.conf may set. */
const FILE_KEYS = ["TransitionTimeout", "GarageNetworkName"] as const;
/** `Key=Value`; `#` and `;` comment lines and `[section]` headers are ignored. */
const FORMAT: KeyValueFormat = { separator: "equals" };

export interface PowerConfig {
  /** How long a transition waits for client votes before it proceeds, in seconds. */
  transitionTimeoutS: number;
  /** The network name the garage variant needs (empty: garage never entered). */
  garageNetworkName: string;
}

const source = (section: Record<string, unknown>, file: string | null): ConfigSource<ReturnType<typeof powerOptions>> => ({
  service: "power2",
  schema: powerOptions,
  section,
  file,
  format: FORMAT,
  fileKeys: FILE_KEYS,
  // A bad line of the file is logged and the default kept: the service still starts.
  onInvalid: "default",
});

/** The service's options from its recipe section and the file that section names. */
export function loadPowerOptions(section: Record<string, unknown>) {
  const file = typeof section.configFile === "string" ? section.configFile : DEFAULT_CONFIG_FILE;
  return loadConfig(source(section, file));
}

const fileView = (o: PowerOptionsT): PowerConfig => ({ transitionTimeoutS: o.TransitionTimeout, garageNetworkName: o.GarageNetworkName });

/** The file's text alone: its two options, and its problems (returned, not thrown). */
export function parsePowerConfig(text: string): { config: PowerConfig; problems: string[] } {
  const { config, problems } = configFromText(source({}, null), text);
  return { config: fileView(config), problems };
}

export function loadPowerConfig(file: string): { config: PowerConfig; problems: string[]; found: boolean } {
  const r = loadConfig(source({}, file));
  return { config: fileView(r.config), problems: r.problems, found: r.file !== null };
}
