// The simple parse of a request schema (src/core/simple-parse.ts) against zod: for
// every method of every service and for schemas made to reach each rule, an input the
// simple parse vouches for is one zod accepts, with the same value (keys, their order,
// undefined values); what it does not vouch for is left to zod.
import { expect, test } from "bun:test";
import { z } from "zod";
import { SERVICES } from "../../src/services";
import { ASK_ZOD, simpleParse } from "../../src/core/simple-parse";
import { parseRequest, type MethodSpec } from "../../src/core/service";
import { PARSE_OPTIONS } from "../../src/core/config";

type Zod = { def: Record<string, any>; values?: Set<unknown>; optin?: string };
const zodOf = (s: unknown) => (s as { _zod: Zod })._zod;

/** Inputs for a schema: valid ones (each optional key absent and present, extra keys), and each part made wrong once. */
function samples(schema: unknown, depth = 0): unknown[] {
  const zod = zodOf(schema);
  const def = zod.def;
  if (depth > 4) return [undefined];
  switch (def.type) {
    case "string":
      return ["x", "", 5, null];
    case "number":
      return [1, -2.5, 0, "1", Number.NaN, Number.POSITIVE_INFINITY];
    case "boolean":
      return [true, false, "true", 0];
    case "unknown":
    case "any":
      return [1, "u", null, { a: 1 }, undefined];
    case "enum":
    case "literal":
      return [...(zod.values ?? []), "not-one-of-them", 12345];
    case "optional":
      return [undefined, ...samples(def.innerType, depth + 1)];
    case "nullable":
      return [null, ...samples(def.innerType, depth + 1)];
    case "default":
      return [undefined, ...samples(def.innerType, depth + 1)];
    case "array": {
      const el = samples(def.element, depth + 1);
      return [[], el.slice(0, 1), el, "not an array"];
    }
    case "object": {
      const shape = def.shape as Record<string, unknown>;
      const keys = Object.keys(shape);
      const first = (k: string) => samples(shape[k], depth + 1)[0];
      const required = Object.fromEntries(keys.filter((k) => zodOf(shape[k]).optin === undefined).map((k) => [k, first(k)]));
      const full = Object.fromEntries(keys.map((k) => [k, samples(shape[k], depth + 1).find((v) => v !== undefined)]));
      const out: unknown[] = [required, full, { ...full, extra: 1, also: "x" }, JSON.parse(`{"__proto__":{"p":1},"${keys[0] ?? "k"}":1}`), [], null, "x"];
      for (const k of keys) {
        for (const v of samples(shape[k], depth + 1)) out.push({ ...full, [k]: v });
        const { [k]: _, ...without } = full;
        out.push(without);
      }
      return out;
    }
  }
  return [undefined, null, 1, "x", {}];
}

/** zod's value and the simple parse's, when it vouches: the same, key order included. */
function agree(schema: z.ZodType, input: unknown): boolean {
  const simple = simpleParse(schema);
  if (!simple) return false;
  const got = simple(input);
  if (got === ASK_ZOD) return false;
  const want = schema.safeParse(input, PARSE_OPTIONS);
  expect(want.success).toBe(true);
  expect(got).toStrictEqual(want.data);
  expect(JSON.stringify(got)).toBe(JSON.stringify(want.data));
  const keys = (v: unknown): unknown => (v && typeof v === "object" ? (Array.isArray(v) ? v.map(keys) : Object.entries(v).map(([k, x]) => [k, keys(x)])) : v);
  expect(keys(got)).toEqual(keys(want.data));
  return true;
}

test("every method's request schema: what the simple parse vouches for, zod accepts with the same value", () => {
  let methods = 0;
  let simpleMethods = 0;
  let vouched = 0;
  // Inputs of simple schemas that zod accepts: the simple parse should vouch for nearly all.
  let acceptedBySimpleSchemas = 0;
  for (const module of Object.values(SERVICES)) {
    const spec = module.spec;
    for (const [name, m] of Object.entries(spec.api) as [string, MethodSpec][]) {
      methods++;
      const schema = m.request();
      const isSimple = !!simpleParse(schema);
      if (isSimple) simpleMethods++;
      for (const input of samples(schema)) {
        if (agree(schema, input)) vouched++;
        if (isSimple && schema.safeParse(input, PARSE_OPTIONS).success) acceptedBySimpleSchemas++;
        // The server's one entry answers as zod does, vouched or not.
        const r = parseRequest(m, input);
        const z2 = schema.safeParse(input, PARSE_OPTIONS);
        expect({ method: `${spec.name}.${name}`, success: r.success }).toEqual({ method: `${spec.name}.${name}`, success: z2.success });
        if (r.success) expect(r.data).toStrictEqual(z2.data);
      }
    }
  }
  // The parse is used: a third of the methods or more are simple, and it vouches for many inputs.
  expect(methods).toBeGreaterThan(100);
  expect(simpleMethods).toBeGreaterThan(methods / 3);
  expect(vouched).toBeGreaterThan(300);
  expect(vouched).toBeGreaterThanOrEqual(acceptedBySimpleSchemas * 0.9);
});

test("objects: loose copies other keys but __proto__, strict refuses them, plain drops them; absent and undefined keys as zod has them", () => {
  const shape = () => ({ s: z.string(), o: z.number().optional(), u: z.unknown(), e: z.enum(["a", "b"]), l: z.literal(3), a: z.array(z.boolean()) });
  const base = { s: "x", u: null, e: "a", l: 3, a: [true] };
  for (const schema of [z.looseObject(shape()), z.strictObject(shape()), z.object(shape())]) {
    expect(simpleParse(schema)).toBeDefined();
    const inputs: unknown[] = [
      base,
      { ...base, o: 2 },
      { ...base, o: undefined },
      { ...base, extra: [1, { y: 2 }] },
      JSON.parse('{"__proto__":{"polluted":1},"s":"x","u":1,"e":"b","l":3,"a":[]}'),
      { ...base, u: undefined },
    ];
    for (const input of inputs) agree(schema, input);
  }
  // Vouched for, or not, as zod decides.
  const loose = z.looseObject(shape());
  const simple = simpleParse(loose)!;
  expect(simple({ ...base, o: 2, extra: 1 })).toEqual({ ...base, o: 2, extra: 1 });
  expect(simple({ ...base, o: undefined })).toHaveProperty("o", undefined);
  expect(Object.keys(simple(base) as object)).not.toContain("o");
  expect(simple({ s: "x", e: "a", l: 3, a: [] })).toBe(ASK_ZOD); // u is required
  expect(simple({ ...base, o: Number.NaN })).toBe(ASK_ZOD);
  expect(simple({ ...base, o: Number.POSITIVE_INFINITY })).toBe(ASK_ZOD);
  expect(simple({ ...base, e: "c" })).toBe(ASK_ZOD);
  expect(simpleParse(z.strictObject(shape()))!({ ...base, extra: 1 })).toBe(ASK_ZOD);
  expect(simpleParse(z.strictObject(shape()))!(JSON.parse('{"__proto__":1,"s":"x","u":1,"e":"a","l":3,"a":[]}'))).toBe(ASK_ZOD);
  expect(Object.getPrototypeOf(simple(JSON.parse('{"__proto__":{"p":1},"s":"x","u":1,"e":"a","l":3,"a":[]}')))).toBe(Object.prototype);
  // A key found on the prototype is present to zod (`key in input`): its value is checked.
  expect(simpleParse(z.looseObject({ toString: z.string().optional() }))!({})).toBe(ASK_ZOD);
  expect(z.looseObject({ toString: z.string().optional() }).safeParse({}).success).toBe(false);
});

test("a schema with a check, a refinement, a default, a transform, a union or null is left to zod", () => {
  for (const schema of [
    z.looseObject({ n: z.number().int() }),
    z.looseObject({ s: z.string().min(1) }),
    z.looseObject({ s: z.string().refine((x) => x !== "no") }),
    z.looseObject({ s: z.string().default("d") }),
    z.looseObject({ s: z.string().optional().default("d") }),
    z.looseObject({ s: z.string().transform((x) => x.length) }),
    z.looseObject({ s: z.union([z.string(), z.number()]) }),
    z.looseObject({ s: z.string().nullable() }),
    z.looseObject({ s: z.email() }),
    z.looseObject({}).refine(() => true),
    z.looseObject({ n: z.coerce.number() }),
    z.looseObject({ a: z.array(z.string()).max(3) }),
  ]) {
    expect(simpleParse(schema)).toBeUndefined();
  }
});

test("the server's parse of a request: the simple one for ping, zod's issues for a wrong one", () => {
  const ping = SERVICES.testautomation!.spec.api.ping as MethodSpec;
  expect(simpleParse(ping.request())).toBeDefined();
  expect(parseRequest(ping, { Message: "hi", more: 1 })).toEqual({ success: true, data: { Message: "hi", more: 1 } });
  const wrong = parseRequest(ping, { Message: 5 });
  expect(wrong.success).toBe(false);
  expect(wrong.error?.issues[0]).toMatchObject({ code: "invalid_type", expected: "string", path: ["Message"] });
});
