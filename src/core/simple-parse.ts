// A request schema's success, without zod's machinery, for the schemas made only of
// plain parts. zod stays the one source of truth: this gives the value zod's parse
// gives for an input it accepts, and for anything else says "ask zod" (which then
// answers the failure with its own issues, or accepts what this was too strict for).
//
// Why: in the first calls after start the code runs in the interpreter, where zod's
// parse of even a one-field payload is its deepest step (docs/performance.md, the cold
// path). The parts here are closures made once per schema, when the method's schema is
// first built: nothing is generated or compiled at a call.
//
// Supported, each without checks, refinements, coercion, defaults or transforms:
// string, number, boolean, unknown, any, enum, literal, optional (of a part without a
// default), array, and object (plain, loose or strict) with string keys other than
// __proto__. Anything else makes the whole schema unsupported. How zod treats these
// (zod/v4/core/schemas.js): an object is a non-null, non-array object; a shape key is
// present when `key in input`; an absent key is dropped when its part is optional and
// refused otherwise; a present key whose value comes out undefined is kept as undefined;
// a loose object copies every other enumerable key but `__proto__`, a strict one
// refuses them (and `__proto__`), a plain one drops them; a number is finite.
// test/core/simple-parse.test.ts holds this against zod for every method's schema.
import type { z } from "zod";

/** "Ask zod": the input is not one this can vouch for. */
export const ASK_ZOD: unique symbol = Symbol("ask zod");

/** A schema's parse for inputs it accepts: zod's output, or ASK_ZOD. */
export type SimpleParse = (input: unknown) => unknown;

type Internals = {
  def: { type: string; checks?: unknown[]; coerce?: boolean; [k: string]: any };
  traits: Set<string>;
  optin?: string;
  optout?: string;
  values?: Set<unknown>;
};
const internals = (s: unknown): Internals => (s as { _zod: Internals })._zod;

/** The parse of a schema made only of the parts above, or undefined when it has any other. */
export function simpleParse(schema: z.ZodType): SimpleParse | undefined {
  return part(schema, 0);
}

function part(schema: unknown, depth: number): SimpleParse | undefined {
  if (depth > 16) return undefined;
  const zod = internals(schema);
  const def = zod.def;
  if (def.checks?.length || zod.traits.has("$ZodCheck") || def.coerce) return undefined;
  switch (def.type) {
    case "string":
      return (v) => (typeof v === "string" ? v : ASK_ZOD);
    case "number":
      return (v) => (typeof v === "number" && Number.isFinite(v) ? v : ASK_ZOD);
    case "boolean":
      return (v) => (typeof v === "boolean" ? v : ASK_ZOD);
    case "unknown":
    case "any":
      return (v) => v;
    case "enum":
    case "literal": {
      const values = zod.values;
      if (!(values instanceof Set)) return undefined;
      return (v) => (values.has(v) ? v : ASK_ZOD);
    }
    case "optional": {
      if (zod.traits.has("$ZodExactOptional") || internals(def.innerType).optin !== undefined) return undefined;
      const inner = part(def.innerType, depth + 1);
      if (!inner) return undefined;
      return (v) => (v === undefined ? undefined : inner(v));
    }
    case "array": {
      const element = part(def.element, depth + 1);
      if (!element) return undefined;
      return (v) => {
        if (!Array.isArray(v)) return ASK_ZOD;
        const out = new Array(v.length);
        for (let i = 0; i < v.length; i++) {
          const r = element(v[i]);
          if (r === ASK_ZOD) return ASK_ZOD;
          out[i] = r;
        }
        return out;
      };
    }
    case "object":
      return object(def, depth);
  }
  return undefined;
}

function object(def: Internals["def"], depth: number): SimpleParse | undefined {
  const shape = def.shape as Record<string, unknown>;
  if (Object.getOwnPropertySymbols(shape).length) return undefined;
  const keys = Object.keys(shape);
  if (keys.includes("__proto__")) return undefined;
  const catchall = def.catchall === undefined ? "strip" : internals(def.catchall).def.type;
  if (catchall !== "strip") {
    const c = internals(def.catchall);
    if (c.def.checks?.length || c.traits.has("$ZodCheck")) return undefined;
    if (catchall !== "unknown" && catchall !== "any" && catchall !== "never") return undefined;
  }
  const fields: { key: string; parse: SimpleParse; optional: boolean }[] = [];
  for (const key of keys) {
    const zod = internals(shape[key]);
    // Required (neither in nor out optional), or plain optional: nothing else.
    const optional = zod.optin === "optional" && zod.optout === "optional";
    if (!optional && (zod.optin !== undefined || zod.optout !== undefined)) return undefined;
    const parse = part(shape[key], depth + 1);
    if (!parse) return undefined;
    fields.push({ key, parse, optional });
  }
  const keySet = new Set(keys);
  return (v) => {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return ASK_ZOD;
    const input = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (let i = 0; i < fields.length; i++) {
      const { key, parse, optional } = fields[i]!;
      const present = key in input;
      if (!present) {
        if (optional) continue;
        return ASK_ZOD;
      }
      const r = parse(input[key]);
      if (r === ASK_ZOD) return ASK_ZOD;
      out[key] = r;
    }
    if (catchall === "strip") return out;
    for (const key in input) {
      if (keySet.has(key)) continue;
      if (catchall === "never") return ASK_ZOD;
      if (key === "__proto__") continue;
      out[key] = input[key];
    }
    return out;
  };
}
