// The file cache's options (docs/services/filecache.md): FileCache.conf and the
// board recipe's serviceConfig.filecache, read by the platform's one loader
// (src/core/config.ts). Values from the file override those of the recipe, which
// override the defaults.
import { isAbsolute, join, resolve } from "node:path";
import { z } from "zod";
import { loadConfig as loadServiceConfig, parseKeyValue, type KeyValueFormat } from "../../core/config";
import type { Logger } from "../../core/log";
import { TYPE_GROUP } from "./schemas";

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
  /** Longest fileName (InsertCacheObject) and copy name (CopyCacheObject) in UTF-8 bytes. */
  maxFileNameBytes: number;
  /** Besides root, members of this group may define, change and delete types ("*": any caller). */
  typeGroup: string;
  /** Bytes kept in a file beside the metadata, given up when its file system is full so removals can be stored (0: none). */
  metadataReserve: number;
  /** Milliseconds between tries of what a full or failing disk left undone (metadata to store, sizes to check, the reserve to make). */
  storageRetryInterval: number;
}

/** The metadata's reserve by default: 1 MiB (docs/decisions/filecache.md, "A full disk: removals"). */
export const DEFAULT_RESERVE = 1024 * 1024;

/** The group of DefineType, ChangeType and DeleteType by default (docs/services/filecache.md). */
export const DEFAULT_TYPE_GROUP = TYPE_GROUP;

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

/** `name value` (or `name = value`) lines; `#` starts a comment anywhere. */
const FORMAT: KeyValueFormat = { separator: "loose", inlineComments: true, unquote: true };

/** Lines of `name value` (or `name = value`); `#` starts a comment. */
export function parseConfFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of parseKeyValue(text, FORMAT).entries) out[e.key] = e.value;
  return out;
}

/** An empty value means "not set": the recipe's value or the default applies. */
const unsetIfEmpty = (v: unknown) => (v === "" ? undefined : v);
const wholeNumber = "must be a non-negative whole number";
const bytesOf = (v: unknown) => (v === "" || v === undefined ? undefined : (parseBytes(v) ?? v));
const numberOf = (v: unknown) => (v === "" || v === undefined ? undefined : typeof v === "string" ? Number(v.trim()) : v);

/** The option types, built once for each schema and shared by its options (core/config.ts, "Shared option types"). */
function optionTypes() {
  const absolute = z.string().refine(isAbsolute, "must be an absolute path");
  const whole = z.number(wholeNumber).int(wholeNumber).nonnegative(wholeNumber);
  return {
    path: (dflt: string) => z.preprocess(unsetIfEmpty, absolute.default(dflt)),
    bytes: (dflt: number) => z.preprocess(bytesOf, whole.default(dflt)),
    int: (dflt: number, max?: number, min = 0) => {
      let n = whole;
      if (min > 0) n = n.min(min, `must be ${min} to ${max}`);
      if (max !== undefined) n = n.max(max, `must be ${min} to ${max}`);
      return z.preprocess(numberOf, n.default(dflt));
    },
  };
}

/** Every option, with the defaults under the service's state directory. */
export const fileCacheOptions = (stateDir: string) => {
  const { path, bytes, int } = optionTypes();
  return z.object({
    configFile: z.string().nullable().optional(),
    cacheDirectory: path(join(stateDir, "cache")),
    metadataFile: path(join(stateDir, "filecache.db")),
    totalCacheSpace: bytes(100 * 1024 * 1024),
    copyDirectory: path(join(stateDir, "copies")),
    defaultSize: bytes(0),
    defaultCost: int(1, 100),
    defaultLifetime: int(0),
    // NAME_MAX: no Linux file system holds a longer name, so a larger value could never be copied.
    maxFileNameBytes: int(255, 255, 1),
    typeGroup: z.preprocess(unsetIfEmpty, z.string().default(DEFAULT_TYPE_GROUP)),
    metadataReserve: bytes(DEFAULT_RESERVE),
    storageRetryInterval: int(1000, 3_600_000, 10),
  });
};

/** What FileCache.conf may set (`configFile` is the recipe's alone). */
const FILE_KEYS = [
  "cacheDirectory",
  "metadataFile",
  "totalCacheSpace",
  "copyDirectory",
  "defaultSize",
  "defaultCost",
  "defaultLifetime",
  "maxFileNameBytes",
  "typeGroup",
  "metadataReserve",
  "storageRetryInterval",
] as const;

export function loadConfig(recipe: Record<string, unknown>, stateDir: string, log: Logger): FileCacheConfig {
  const explicit = typeof recipe.configFile === "string" && recipe.configFile !== "";
  const file = explicit ? resolve(recipe.configFile as string) : recipe.configFile === null ? null : DEFAULT_CONFIG_FILE;
  const r = loadServiceConfig({
    service: "filecache",
    schema: () => fileCacheOptions(stateDir),
    section: recipe,
    file,
    format: FORMAT,
    fileKeys: FILE_KEYS,
    // A value the service cannot use stops it from starting: it owns the directories.
    onInvalid: "throw",
  });
  for (const p of r.problems) log.warn({ file: r.file }, `FileCache.conf: ${p}; ignored`);
  if (r.missing && explicit) log.warn({ file }, "FileCache.conf not found; using the recipe's values and the defaults");
  const o = r.config;
  return {
    configFile: r.file,
    cacheDirectory: o.cacheDirectory,
    metadataFile: o.metadataFile,
    totalCacheSpace: Math.floor(o.totalCacheSpace / BLOCK) * BLOCK,
    copyDirectory: o.copyDirectory,
    defaultSize: o.defaultSize,
    defaultCost: o.defaultCost,
    defaultLifetime: o.defaultLifetime,
    maxFileNameBytes: o.maxFileNameBytes,
    typeGroup: o.typeGroup,
    metadataReserve: o.metadataReserve,
    storageRetryInterval: o.storageRetryInterval,
  };
}
