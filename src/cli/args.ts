// What every subcommand shares: --help and -h, strict option parsing, usage errors
// (exit 2) that point at the subcommand's own usage, and the values several commands
// take (log level, whole numbers, service names).
import { parseArgs } from "node:util";
import { SERVICES, findService } from "../services";

/** The subcommand being run (main.ts sets it): usage errors name its --help. */
let current: string | undefined;

export function setCommand(name: string | undefined): void {
  current = name;
}

/**
 * Whether argv asks for help: `--help` or `-h` anywhere before `--`. Every subcommand
 * gets it before its own parsing (a value cannot be either: node:util's strict
 * parsing refuses an option value that starts with a dash).
 */
export function wantsHelp(argv: string[]): boolean {
  const end = argv.indexOf("--");
  return (end < 0 ? argv : argv.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

/** A subcommand's usage as `--help` prints it. */
export function usageText(usage: string): string {
  return `Usage: ${usage.trimEnd()}\n`;
}

export type Flags = Record<string, string | boolean | undefined>;
export type OptionSpec = Record<string, { type: "string" | "boolean"; short?: string }>;

/** node:util parseArgs, strict: an unknown option or a missing value is a usage error (exit 2). */
export function cli(argv: string[], options: OptionSpec): { flags: Flags; rest: string[] } {
  try {
    const { values, positionals } = parseArgs({ args: argv, options, strict: true, allowPositionals: true });
    return { flags: values as Flags, rest: positionals };
  } catch (e) {
    usage(String((e as Error).message).replace(/^TypeError \[[A-Z_]+\]: /, "").replace(/\. To specify a positional.*$/s, ""));
  }
}

export function usage(msg: string): never {
  const cmd = current ? `devservices ${current}` : "devservices";
  process.stderr.write(`${cmd}: ${msg}\nTry '${cmd} --help'.\n`);
  process.exit(2);
}

export const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"];

export function logLevel(flags: Flags, fallback: string): string {
  const level = (flags["log-level"] as string | undefined) ?? fallback;
  if (!LOG_LEVELS.includes(level)) usage(`unknown log level '${level}' (one of ${LOG_LEVELS.join(", ")})`);
  return level;
}

/** A whole number of at least `min` from an option, or a usage error naming the option. */
export function wholeNumber(flags: Flags, name: string, label: string, min: number): number | undefined {
  const v = flags[name];
  if (v === undefined) return undefined;
  if (typeof v !== "string" || !/^\d+$/.test(v) || Number(v) < min) usage(`${label} takes a whole number${min > 0 ? ` of at least ${min}` : ""}, got '${v}'`);
  return Number(v);
}

/** The service module for a name, or a usage error that suggests the nearest names. */
export function serviceOrUsage(name: string) {
  const m = findService(name);
  if (m) return m;
  const short = name.replace(/^com\.vendor\.service\./, "");
  const near = Object.keys(SERVICES).filter((n) => n.startsWith(short) || short.startsWith(n) || editDistance(n, short) <= 2);
  usage(`unknown service ${name}${near.length ? ` (did you mean ${near.join(" or ")}?)` : ""}; 'devservices describe' lists them`);
}

export function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
  return d[a.length]![b.length]!;
}

/** Resolves on the first SIGINT or SIGTERM. */
export function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
}
