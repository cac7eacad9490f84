// The JSON Schemas devservices publishes (`devservices describe`, the board recipe
// schema of docs/schemas/): made from the zod schemas that validate at run time, so
// that other languages build on the same contract (docs/decisions/clients.md).
//
// zod's own export (z.toJSONSchema) with three rules for what zod checks and JSON
// Schema states differently:
// - a request schema is exported as its input (`io: "input"`): what a caller sends;
// - `startsWith`, `endsWith` and `includes` are published as their pattern alone
//   (zod also writes them as a `format`, which JSON Schema does not define);
// - a string that zod trims before matching its pattern (`.trim().regex(...)`) gets
//   a pattern that allows the surrounding white space zod removes, so that the
//   published schema accepts " 12 " where the service does. A string rewritten
//   otherwise before its pattern loses the pattern (the published schema is then
//   looser than the service, never stricter).
// JSON Schema cannot state a check written as code (a refine, a bound checked after
// a transform, a preprocess function), so the services' schemas write such checks
// with the builders below, which make the zod check and the JSON Schema that states
// it from one declaration: `integerString` (an integer given as a string, its bound
// in the string's pattern) and `requireOneOf` (an object needing one of some
// fields). test/schemas/ checks that zod and the publication agree, with no
// exception list.
import { z } from "zod";
import { schemaOf, type MethodSpec } from "./service";

/** Options for ajv (or another validator) to compile what is published here: draft 2020-12, `type` may be a list. */
export const JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema";

type JsonSchema = Record<string, unknown>;

/** How a string check rewrites its value before the checks after it (`trim`, `toLowerCase`...), probed on samples. */
function rewrite(check: any): "trim" | "other" | undefined {
  const def = check?._zod?.def;
  if (def?.check !== "overwrite" || typeof def.tx !== "function") return undefined;
  const samples = [" \t a B \n", "x", "  ", "Ab"];
  try {
    return samples.every((s) => def.tx(s) === s.trim()) ? "trim" : "other";
  } catch {
    return "other";
  }
}

/** A pattern as it must read on the untrimmed string. */
function untrimmed(pattern: string): string | undefined {
  const anchored = /^\^(.*)\$$/s.exec(pattern);
  return anchored ? `^\\s*(?:${anchored[1]})\\s*$` : undefined;
}

/** zod's names for string checks it publishes as a pattern, which are no JSON Schema format (strict validators refuse an unknown format). */
const PATTERN_FORMATS = new Set(["starts_with", "ends_with", "includes"]);

function override(ctx: { zodSchema: z.core.$ZodType; jsonSchema: JsonSchema }) {
  const def = (ctx.zodSchema as any)._zod?.def;
  if (def?.type !== "string" || !Array.isArray(def.checks) || typeof ctx.jsonSchema.pattern !== "string") return;
  if (typeof ctx.jsonSchema.format === "string" && PATTERN_FORMATS.has(ctx.jsonSchema.format)) delete ctx.jsonSchema.format;
  const kinds = def.checks.map(rewrite).filter(Boolean);
  if (!kinds.length) return;
  const pattern = kinds.every((k: string) => k === "trim") ? untrimmed(ctx.jsonSchema.pattern) : undefined;
  if (pattern) ctx.jsonSchema.pattern = pattern;
  else delete ctx.jsonSchema.pattern;
}

/** A zod schema as a published JSON Schema: `input` for what a caller sends, `output` for what it gets. */
export function toJsonSchema(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  return z.toJSONSchema(schema, { io, unrepresentable: "any", override }) as JsonSchema;
}

/** A method's request schema (what a caller may send) or response schema, as describe prints them. */
export function methodJsonSchema(spec: MethodSpec, which: "request" | "response"): JsonSchema {
  return toJsonSchema(schemaOf(spec, which), which === "request" ? "input" : "output");
}

// ---- Builders for checks JSON Schema states -----------------------------------------

const DIGITS = "0123456789abcdef";

/** A character class of the digits a..b of a base (hexadecimal letters in both cases). */
function digitClass(a: number, b: number): string {
  if (a === b) return a < 10 ? String(a) : `[${DIGITS[a]}${DIGITS[a]!.toUpperCase()}]`;
  const parts: string[] = [];
  const span = (x: number, y: number, upper = false) => {
    const c = (d: number) => (upper ? DIGITS[d]!.toUpperCase() : DIGITS[d]!);
    parts.push(x === y ? c(x) : `${c(x)}-${c(y)}`);
  };
  if (a <= 9) span(a, Math.min(b, 9));
  if (b >= 10) {
    span(Math.max(a, 10), b);
    span(Math.max(a, 10), b, true);
  }
  return `[${parts.join("")}]`;
}

/** Alternatives matching the fixed-width digit strings lo..hi (same length, digits of `base`). */
function sameWidth(lo: number[], hi: number[], base: number): string[] {
  let i = 0;
  while (i < lo.length && lo[i] === hi[i]) i++;
  const prefix = lo.slice(0, i).map((d) => digitClass(d, d)).join("");
  if (i === lo.length) return [prefix];
  const rest = lo.length - i - 1;
  const any = rest ? `${digitClass(0, base - 1)}${rest > 1 ? `{${rest}}` : ""}` : "";
  const loRest = lo.slice(i + 1), hiRest = hi.slice(i + 1);
  const loFull = loRest.every((d) => d === 0), hiFull = hiRest.every((d) => d === base - 1);
  const from = loFull ? lo[i]! : lo[i]! + 1, to = hiFull ? hi[i]! : hi[i]! - 1;
  const out: string[] = [];
  if (!loFull) for (const alt of sameWidth(loRest, loRest.map(() => base - 1), base)) out.push(`${prefix}${digitClass(lo[i]!, lo[i]!)}${alt}`);
  if (from <= to) out.push(`${prefix}${digitClass(from, to)}${any}`);
  if (!hiFull) for (const alt of sameWidth(hiRest.map(() => 0), hiRest, base)) out.push(`${prefix}${digitClass(hi[i]!, hi[i]!)}${alt}`);
  return out;
}

const digitsOf = (n: number, base: number, width: number) => n.toString(base).padStart(width, "0").split("").map((c) => parseInt(c, base));

/** A regular expression (no anchors) matching the spellings in `base` of the integers lo..hi (0 <= lo <= hi), leading zeros allowed. */
export function integerRangePattern(lo: number, hi: number, base: 10 | 16 = 10): string {
  if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi) || lo < 0 || lo > hi) throw new RangeError(`no pattern for the integers ${lo}..${hi}`);
  const alts: string[] = [];
  for (let width = lo.toString(base).length; width <= hi.toString(base).length; width++) {
    const a = Math.max(lo, width === 1 ? 0 : base ** (width - 1)), b = Math.min(hi, base ** width - 1);
    alts.push(...sameWidth(digitsOf(a, base, width), digitsOf(b, base, width), base));
  }
  return `0*(?:${alts.join("|")})`;
}

/** The integers an integer schema takes: its bounds from its own JSON Schema (exclusive bounds made inclusive). */
function integerBounds(n: z.ZodNumber): [number, number] {
  const j = z.toJSONSchema(n) as { type?: string; minimum?: number; maximum?: number; exclusiveMinimum?: number; exclusiveMaximum?: number };
  const other = Object.keys(j).filter((k) => !["$schema", "type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "description"].includes(k));
  if (j.type !== "integer" || other.length) throw new TypeError(`integerString takes an integer schema with bounds only (has ${j.type}${other.length ? `, ${other.join(", ")}` : ""})`);
  const lo = Math.max(0, j.minimum ?? -Infinity, j.exclusiveMinimum !== undefined ? j.exclusiveMinimum + 1 : -Infinity);
  const hi = Math.min(Number.MAX_SAFE_INTEGER, j.maximum ?? Infinity, j.exclusiveMaximum !== undefined ? j.exclusiveMaximum - 1 : Infinity);
  return [lo, hi];
}

/**
 * An integer given as a string, read as the integer schema `n` (whose only checks
 * are its bounds): decimal digits, or with `hex` also `0x` and hexadecimal digits;
 * leading zeros allowed; `trim`: surrounding white space removed first. The string's
 * pattern takes only the spellings of the integers `n` takes, so the published
 * schema states the bound zod checks (`"0xfffff"` is refused by both for a 7-bit
 * address). Negative numbers have no string form.
 */
export function integerString(n: z.ZodNumber, opts: { hex?: boolean; trim?: boolean; message?: string } = {}) {
  const [lo, hi] = integerBounds(n);
  const forms = [integerRangePattern(lo, hi, 10), ...(opts.hex ? [`0x${integerRangePattern(lo, hi, 16)}`] : [])];
  const pattern = new RegExp(`^(?:${forms.join("|")})$`);
  const base = opts.trim ? z.string().trim() : z.string();
  return base.regex(pattern, opts.message ?? `an integer from ${lo} to ${hi}${opts.hex ? " (decimal or 0x hexadecimal)" : ""}`).transform(Number).pipe(n);
}

/**
 * An object schema that needs at least one of `keys` present (after parsing: a key
 * with a default is always present): the refine zod runs, and the same rule
 * published as `anyOf` of `required` (JSON Schema's form of it). Each branch names
 * its key under `properties` too (with no constraint: the object's own `properties`
 * state the value), as ajv's strict mode wants a required key defined beside it.
 */
export function requireOneOf<T extends z.ZodObject<any>>(schema: T, keys: readonly (keyof z.input<T> & string)[], message = `at least one of ${keys.join(", ")}`) {
  return schema
    .refine((r: Record<string, unknown>) => keys.some((k) => r[k] !== undefined), { message })
    .meta({ anyOf: keys.map((k) => ({ required: [k], properties: { [k]: true } })) });
}
