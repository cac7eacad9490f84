// The one configuration loader. A service's options are one zod schema; values come
// from the board recipe's section for the service (`serviceConfig.<name>`, the
// context's `config`) and, for services that have one, a `Key=Value` file (by
// default in /etc/devservices). The file's values win over the recipe's, which win
// over the schema's defaults, so a device's file can override its board.
import { existsSync, readFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { z } from "zod";
import { writeDurably } from "./store";

/** The build's identity (scripts/build.ts); absent when run from source. */
declare const DEVSERVICES_BUILD: string | undefined;

/**
 * The options of every zod parse in the product: zod's compiled fast path for an
 * object schema (code generated with `new Function` at the schema's first parse) is
 * not used. For what is read once (a board recipe, a configuration file, an app
 * descriptor) generating it costs more than one parse gains (exec to all ten names
 * owned took about 25 ms longer with it). For a method's payload it was generated at
 * the method's first call after start: about 0.9 ms of that call, in the interpreter
 * the first calls run in; the parse without it costs about 1-2 us more in those calls
 * and 0.04 us more once compiled (docs/performance.md, the cold path).
 */
export const PARSE_OPTIONS = { jitless: true } as const;

// Shared option types: a service's options schema is built at each start (and is
// garbage once the options are read), in the interpreter, so what it costs is the
// start's. Each chained check (`.int()`, `.positive()`, `.min()`) makes a new copy of
// the schema, and each copy is one of zod's objects with some forty closures: about
// 15 us each at start, some 800 of them across the services. A type that several
// options of one schema share (`z.number().int().positive()`) is therefore built once
// in the schema's function and each option adds only its default to it (zod's schemas
// are immutable: `.default()` makes a new one and leaves the shared one as it was).
// The messages are the same: it is the same chain. docs/performance.md.

/** Where configuration files live on a device. */
export const CONFIG_DIR = "/etc/devservices";

/** A file of CONFIG_DIR by name; an absolute path is kept as it is. */
export const configPath = (file: string) => (isAbsolute(file) ? file : join(CONFIG_DIR, file));

export interface KeyValueFormat {
  /**
   * `equals`: `Key=Value` only (a line without `=` is a problem). `loose`: also
   * `name value` and `name: value` (the original file cache daemon's format).
   */
  separator?: "equals" | "loose";
  /** `#` starts a comment anywhere on a line, not only at its start. */
  inlineComments?: boolean;
  /** A value in double quotes loses them. */
  unquote?: boolean;
}

export interface KeyValueEntry {
  key: string;
  value: string;
  /** 1-based line number, for messages. */
  line: number;
}

/**
 * Reads `Key=Value` lines. Blank lines, lines starting with `#` or `;`, and
 * `[section]` headers are skipped. Problems are returned, never thrown.
 */
export function parseKeyValue(text: string, format: KeyValueFormat = {}): { entries: KeyValueEntry[]; problems: string[] } {
  const entries: KeyValueEntry[] = [];
  const problems: string[] = [];
  for (const [i, raw] of text.split("\n").entries()) {
    const line = (format.inlineComments ? raw.replace(/#.*/, "") : raw).trim();
    if (!line || line.startsWith("#") || line.startsWith(";") || line.startsWith("[")) continue;
    let key: string | undefined;
    let value = "";
    if (format.separator === "loose") {
      const m = line.match(/^([A-Za-z][\w.]*)\s*(?:=|:|\s)\s*(.*)$/);
      if (m) [key, value] = [m[1]!, m[2]!.trim()];
    } else {
      const eq = line.indexOf("=");
      if (eq > 0) [key, value] = [line.slice(0, eq).trim(), line.slice(eq + 1).trim()];
    }
    if (!key) {
      problems.push(`line ${i + 1}: expected ${format.separator === "loose" ? "name value" : "Key=Value"}`);
      continue;
    }
    if (format.unquote) value = value.replace(/^"(.*)"$/, "$1");
    entries.push({ key, value, line: i + 1 });
  }
  return { entries, problems };
}

export interface ConfigSource<S extends z.ZodObject<any>> {
  /** The service's short name, for messages. */
  service: string;
  /** Builds the schema of every option with its type and default (not built when the parse is recorded: parseRecorded). */
  schema: () => S;
  /** The board recipe's section for the service (`ctx.config`). */
  section?: Record<string, unknown>;
  /** The `Key=Value` file (a name in CONFIG_DIR or an absolute path); null or absent: none. */
  file?: string | null;
  format?: KeyValueFormat;
  /** The schema keys the file may set; another key in the file is reported as unknown. */
  fileKeys?: readonly string[];
  /**
   * A value in the file that its schema refuses: `throw` stops the service from
   * starting; `default` reports it and keeps the recipe's value or the default.
   * A value in the recipe that its schema refuses always throws.
   */
  onInvalid?: "throw" | "default";
}

export interface LoadedConfig<T> {
  config: T;
  /** The file the values were read from (null: none was read). */
  file: string | null;
  /** A file was named but does not exist. */
  missing: boolean;
  /** What was wrong in the file and was left out (`line N: ...`). */
  problems: string[];
}

/** The file's text, parsed and checked against the keys it may set. */
export function readConfigFile(text: string, o: { format?: KeyValueFormat; fileKeys?: readonly string[] }) {
  const { entries, problems } = parseKeyValue(text, o.format);
  const known: KeyValueEntry[] = [];
  for (const e of entries) {
    if (o.fileKeys && !o.fileKeys.includes(e.key)) problems.push(`line ${e.line}: unknown option ${e.key}`);
    else known.push(e);
  }
  return { entries: known, problems };
}

/** Loads a service's options from its recipe section and file (see ConfigSource). */
export function loadConfig<S extends z.ZodObject<any>>(src: ConfigSource<S>): LoadedConfig<z.output<S>> {
  const path = src.file ? configPath(src.file) : null;
  const found = path !== null && existsSync(path);
  const text = found ? readFileSync(path, "utf8") : "";
  return { ...configFromText(src, found ? text : undefined, path), file: found ? path : null, missing: path !== null && !found };
}

/** The file a recipe section names with `configFile`: a name in CONFIG_DIR or a path; null: none; absent: the service's default. */
export function configFileOf(section: Record<string, unknown>, defaultName: string): string | null {
  return section.configFile === null ? null : typeof section.configFile === "string" ? section.configFile : defaultName;
}

/** loadConfig() with the file's text given (undefined: no file). */
export function configFromText<S extends z.ZodObject<any>>(
  src: ConfigSource<S>,
  text: string | undefined,
  origin: string | null = null,
): { config: z.output<S>; problems: string[] } {
  const section = { ...(src.section ?? {}) };
  const { entries, problems } = text === undefined ? { entries: [], problems: [] } : readConfigFile(text, src);
  const fromFile = new Map<string, KeyValueEntry>();
  for (const e of entries) fromFile.set(e.key, e); // the last line of a key wins
  const merged: Record<string, unknown> = { ...section };
  for (const [k, e] of fromFile) merged[k] = e.value;
  let built: S | undefined;
  const schema = () => (built ??= src.schema());
  for (;;) {
    const r = parseRecorded(`options of ${src.service}`, schema, merged);
    if (r.success) return { config: r.data, problems: problems.sort((a, b) => lineOf(a) - lineOf(b)) };
    const issue = r.error.issues[0]!;
    const key = String(issue.path[0] ?? "");
    const e = fromFile.get(key);
    if (!e) throw new Error(`serviceConfig.${src.service} is invalid: ${z.prettifyError(r.error)}`);
    const what = `${e.key} ${issue.message}, got '${e.value}'`;
    if (src.onInvalid !== "default") throw new Error(`${src.service} configuration${origin ? ` ${origin}` : ""}, line ${e.line}: ${what}`);
    problems.push(`line ${e.line}: ${what}`);
    fromFile.delete(key);
    if (key in section) merged[key] = section[key];
    else delete merged[key];
  }
}

const lineOf = (problem: string) => Number(/^line (\d+)/.exec(problem)?.[1] ?? 0);

// What the start parses: the board recipe, each service's options and its sections of
// the recipe. Their schemas are built for the parse and are garbage after it, and the
// parse itself runs once, in the interpreter: together about a quarter of exec until
// every name is owned (docs/performance.md, "Start"). The inputs are the same at every
// boot of a device until its recipe, a configuration file or the executable changes,
// and each of these schemas is a function of its input alone. So `serve` keeps what
// each parse returned (recordParses) and the next start of the same build, with the
// same state directory, takes it for the same input (compared whole, as text) without
// building the schema. An input whose parse failed, or whose output is not plain data
// (what JSON gives back unchanged), is parsed by zod at every start; so is everything
// when run from source or without a record.
interface ParseRecord {
  file: string;
  /** The build and the state directory the record is for (a schema's defaults may name the directory). */
  stamp: string;
  /** Outputs as JSON, by `what` and the input's JSON. */
  before: Map<string, string>;
  /** The entries of this start: what the file keeps. */
  now: Map<string, string>;
}

let record: ParseRecord | undefined;
const RECORD_FORMAT = 1;

/**
 * Keeps the parses of this process's start in `file` (in the state directory), and
 * takes those of the last start of this build (DEVSERVICES_BUILD) from it. Without a
 * build identity (run from source) nothing is recorded.
 */
export function recordParses(file: string, stateDir: string, build: string | undefined = typeof DEVSERVICES_BUILD === "string" ? DEVSERVICES_BUILD : undefined): void {
  record = undefined;
  if (!build) return;
  const stamp = `${RECORD_FORMAT} ${build} ${stateDir}`;
  const before = new Map<string, string>();
  try {
    const saved = JSON.parse(readFileSync(file, "utf8")) as { stamp?: unknown; entries?: unknown };
    if (saved.stamp === stamp && Array.isArray(saved.entries)) {
      for (const e of saved.entries) if (Array.isArray(e) && typeof e[0] === "string" && typeof e[1] === "string") before.set(e[0], e[1]);
    }
  } catch {
    // None yet, or not readable as a record: every parse is zod's this time.
  }
  record = { file, stamp, before, now: new Map() };
}

/**
 * Writes the record of this start when it differs from the one read (an input that
 * changed, an entry no longer used), durably (core/store.ts), so a reader sees the old
 * or the new record whole; and stops recording. A failure to write costs the next start its
 * shortcut, nothing else: it is returned for a log line.
 */
export function saveParses(): Error | undefined {
  const r = record;
  record = undefined;
  if (!r) return;
  let same = r.now.size === r.before.size;
  for (const [k, v] of r.now) same &&= r.before.get(k) === v;
  if (same) return;
  try {
    writeDurably(r.file, JSON.stringify({ stamp: r.stamp, entries: [...r.now] }), 0o600);
  } catch (e) {
    return e as Error;
  }
}

/**
 * zod's safeParse of `input` by the schema `schema` builds (`what` names the schema,
 * its own key in the record); or, at a start of the same build that parsed the same
 * input before, that parse's output, without building the schema.
 */
export function parseRecorded<S extends z.ZodType>(what: string, schema: () => S, input: unknown): z.ZodSafeParseResult<z.output<S>> {
  const r = record;
  const key = r ? recordKey(what, input) : undefined;
  const seen = r && key !== undefined ? r.before.get(key) : undefined;
  if (r && key !== undefined && seen !== undefined) {
    r.now.set(key, seen);
    return { success: true, data: JSON.parse(seen) } as z.ZodSafeParseResult<z.output<S>>;
  }
  const out = schema().safeParse(input, PARSE_OPTIONS);
  if (r && key !== undefined && out.success) {
    const text = JSON.stringify(out.data);
    if (text !== undefined && Bun.deepEquals(JSON.parse(text), out.data, true)) r.now.set(key, text);
  }
  return out;
}

/** An input's key in the record: the schema's name and the input's JSON; undefined for what is not JSON (a BigInt, a cycle), parsed every time. */
function recordKey(what: string, input: unknown): string | undefined {
  try {
    return `${what}\n${JSON.stringify(input) ?? "undefined"}`;
  } catch {
    return undefined;
  }
}
