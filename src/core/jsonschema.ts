// The JSON Schemas devservices publishes (`devservices describe`, the board recipe
// schema of docs/schemas/): made from the zod schemas that validate at run time, so
// that other languages build on the same contract (docs/decisions/clients.md).
//
// zod's own export (z.toJSONSchema) with two rules for what zod checks and JSON
// Schema states differently:
// - a request schema is exported as its input (`io: "input"`): what a caller sends;
// - a string that zod trims before matching its pattern (`.trim().regex(...)`) gets
//   a pattern that allows the surrounding white space zod removes, so that the
//   published schema accepts " 12 " where the service does. A string rewritten
//   otherwise before its pattern loses the pattern (the published schema is then
//   looser than the service, never stricter).
// What JSON Schema cannot state (a refine, a bound checked after a transform, a
// preprocess function) is listed in docs/decisions/clients.md and checked by
// test/schemas/.
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

function override(ctx: { zodSchema: z.core.$ZodType; jsonSchema: JsonSchema }) {
  const def = (ctx.zodSchema as any)._zod?.def;
  if (def?.type !== "string" || !Array.isArray(def.checks) || typeof ctx.jsonSchema.pattern !== "string") return;
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
