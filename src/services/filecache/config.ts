// FileCache.conf and the board recipe's serviceConfig.filecache: one loader.
// Options and defaults: docs/services/filecache.md. Values from the file override
// those of the recipe, which override the defaults.
import { existsSync, readFileSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import type { Logger } from "../../core/log";

export const BLOCK = 4096;
export const DEFAULT_CONFIG_FILE = "/etc/devservices/FileCache.conf";

export interface FileCacheConfig {
  /** The file the options were read from (null: none). */
  configFile: string | null;
  cacheDirectory: string;
  metadataFile: string;
  /** Bytes all objects may use together (whole blocks). */
  totalCacheSpace: number;
  copyDirectory: string;
  defaultSize: number;
  defaultCost: number;
  defaultLifetime: number;
}

type Kind = "path" | "bytes" | "int";
const OPTIONS: Record<string, Kind> = {
  cacheDirectory: "path",
  metadataFile: "path",
  totalCacheSpace: "bytes",
  copyDirectory: "path",
  defaultSize: "bytes",
  defaultCost: "int",
  defaultLifetime: "int",
};

const UNITS: Record<string, number> = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** "104857600", "100M", "64 KiB" -> bytes. */
export function parseBytes(v: unknown): number | null {
  if (typeof v === "number") return Number.isSafeInteger(v) && v >= 0 ? v : null;
  if (typeof v !== "string") return null;
  const m = v.trim().match(/^(\d+)\s*([kmgt]?)(i?b)?$/i);
  if (!m) return null;
  const n = Number(m[1]) * UNITS[m[2]!.toLowerCase()]!;
  return Number.isSafeInteger(n) ? n : null;
}

/** Lines of `name value` (or `name = value`); `#` starts a comment. */
export function parseConfFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split("\n")) {
    const line = raw.replace(/#.*/, "").trim();
    if (!line || /^\[.*\]$/.test(line)) continue;
    const m = line.match(/^([A-Za-z][\w.]*)\s*(?:=|:|\s)\s*(.*)$/);
    if (m) out[m[1]!] = m[2]!.trim().replace(/^"(.*)"$/, "$1");
  }
  return out;
}

export function loadConfig(recipe: Record<string, unknown>, stateDir: string, log: Logger): FileCacheConfig {
  const explicit = typeof recipe.configFile === "string" && recipe.configFile !== "";
  const file = explicit ? resolve(recipe.configFile as string) : recipe.configFile === null ? null : DEFAULT_CONFIG_FILE;
  const values: Record<string, unknown> = {};
  for (const k of Object.keys(OPTIONS)) if (recipe[k] !== undefined) values[k] = recipe[k];
  let used: string | null = null;
  if (file && existsSync(file)) {
    const fromFile = parseConfFile(readFileSync(file, "utf8"));
    for (const [k, v] of Object.entries(fromFile)) {
      if (k in OPTIONS) values[k] = v;
      else log.warn({ file, option: k }, "unknown FileCache.conf option ignored");
    }
    used = file;
  } else if (explicit) {
    log.warn({ file }, "FileCache.conf not found; using the recipe's values and the defaults");
  }
  const get = <T>(name: string, kind: Kind, dflt: T): T | string | number => {
    const v = values[name];
    if (v === undefined || v === "") return dflt;
    if (kind === "path") {
      if (typeof v !== "string" || !isAbsolute(v)) throw new Error(`filecache option ${name} must be an absolute path, got ${JSON.stringify(v)}`);
      return v;
    }
    const n = kind === "bytes" ? parseBytes(v) : typeof v === "number" ? v : Number(String(v).trim());
    if (n === null || !Number.isSafeInteger(n) || n < 0) throw new Error(`filecache option ${name} must be a non-negative whole number, got ${JSON.stringify(v)}`);
    return n;
  };
  const cfg: FileCacheConfig = {
    configFile: used,
    cacheDirectory: get("cacheDirectory", "path", join(stateDir, "cache")) as string,
    metadataFile: get("metadataFile", "path", join(stateDir, "filecache.db")) as string,
    totalCacheSpace: Math.floor((get("totalCacheSpace", "bytes", 100 * 1024 * 1024) as number) / BLOCK) * BLOCK,
    copyDirectory: get("copyDirectory", "path", join(stateDir, "copies")) as string,
    defaultSize: get("defaultSize", "bytes", 0) as number,
    defaultCost: get("defaultCost", "int", 1) as number,
    defaultLifetime: get("defaultLifetime", "int", 0) as number,
  };
  if (cfg.defaultCost > 100) throw new Error(`filecache option defaultCost must be 0 to 100, got ${cfg.defaultCost}`);
  return cfg;
}
