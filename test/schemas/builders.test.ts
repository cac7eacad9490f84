// The builders of src/core/jsonschema.ts that state a check in zod and in the
// published JSON Schema from one declaration: integerString (an integer given as a
// string, its bound in the string's pattern, as the camera's handle and the
// peripheral manager's address and size are) and requireOneOf (record's start).
import { expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import { z } from "zod";
import { integerRangePattern, integerString, requireOneOf, toJsonSchema } from "../../src/core/jsonschema";
/** As test/schemas/methods.test.ts compiles what is published. */
const ajvOptions = { strict: true, allowUnionTypes: true } as const;

/** A deterministic sequence (the same cases on every run). */
function lcg(seed: number) {
  let s = seed >>> 0;
  return (n: number) => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0), s % n);
}

test("integerRangePattern matches the spellings of lo..hi and of nothing else, in decimal and hexadecimal, with leading zeros", () => {
  const rand = lcg(30);
  const M = Number.MAX_SAFE_INTEGER;
  const ranges: [number, number][] = [[0, 0], [0, 9], [0, 0x7f], [1, 4096], [0, 65536], [50, 4000000], [1, 0xffffffff], [0, M], [12345, M - 7]];
  for (let i = 0; i < 150; i++) {
    const lo = rand(2) ? 0 : rand(i % 2 ? 300 : 100000);
    ranges.push([lo, lo + rand(i % 3 ? 500 : 100000)]);
  }
  const wrong: string[] = [];
  let checked = 0;
  for (const [lo, hi] of ranges)
    for (const base of [10, 16] as const) {
      const re = new RegExp(`^(?:${integerRangePattern(lo, hi, base)})$`);
      const values = new Set<number>();
      for (const edge of [lo, hi]) for (let d = -40; d <= 40; d++) if (edge + d >= 0 && edge + d <= M) values.add(edge + d);
      for (let k = 0; k < 40; k++) values.add(Math.min(M, Math.floor((hi * 2 + 10) * (rand(1 << 30) / (1 << 30)))));
      for (const v of values)
        for (const s of [v.toString(base), `00${v.toString(base)}`, v.toString(base).toUpperCase()]) {
          checked++;
          if (re.test(s) !== (v >= lo && v <= hi)) wrong.push(`${lo}..${hi} base ${base}: ${s}`);
        }
      // Strings that are no spelling of a number in the base, or of one past the safe integers.
      const digits = base === 16 ? /^[0-9a-fA-F]+$/ : /^[0-9]+$/;
      for (const s of ["", "-1", "1.0", "1e3", "1g", " 1", "0x1", "9007199254740992", "99999999999999999999"]) {
        const v = digits.test(s) ? parseInt(s, base) : NaN;
        if (re.test(s) !== (v >= lo && v <= hi && v <= M)) wrong.push(`${lo}..${hi} base ${base}: ${JSON.stringify(s)}`);
      }
    }
  expect(wrong).toEqual([]);
  expect(checked).toBeGreaterThan(50000);
  expect(() => integerRangePattern(5, 4)).toThrow();
  expect(() => integerRangePattern(-1, 4)).toThrow();
});

test("integerString: zod and the published schema take the same strings, and only those of the integer schema's range", () => {
  const ajv = new Ajv2020(ajvOptions);
  const cases: [z.ZodNumber, { hex?: boolean; trim?: boolean }, string[], string[]][] = [
    [z.number().int().min(0).max(0x7f), { hex: true, trim: true }, ["0", "127", "0127", " 12 ", "0x7f", "0x007F", "\t0x10\n"], ["128", "0x80", "0xfffff", "-1", "1.5", "0X7f", "", "0x", "text"]],
    [z.number().int().positive().max(4096), {}, ["1", "4096", "0001"], ["0", "4097", " 1", "0x1", "00"]],
    [z.number().int(), {}, ["0", "9007199254740991", "0012"], ["9007199254740992", "-1", "1e3"]],
  ];
  for (const [n, opts, good, bad] of cases) {
    const schema = integerString(n, opts);
    const published = toJsonSchema(schema, "input");
    const validate = ajv.compile(published);
    for (const s of [...good, ...bad]) {
      const want = good.includes(s);
      expect({ s, zod: schema.safeParse(s).success, ajv: validate(s) }).toEqual({ s, zod: want, ajv: want });
    }
    expect(schema.parse(good[1]!)).toBe(Number(good[1]!.trim()));
  }
  // An integer schema with a check the pattern cannot state is refused when the schema is built.
  expect(() => integerString(z.number().int().multipleOf(2))).toThrow(TypeError);
  expect(() => integerString(z.number().max(5))).toThrow(TypeError);
});

test("requireOneOf: zod's refine and the published anyOf of required agree", () => {
  const ajv = new Ajv2020(ajvOptions);
  const schema = requireOneOf(z.looseObject({ a: z.object({ x: z.number() }).optional(), b: z.string().optional(), c: z.number() }), ["a", "b"]);
  const validate = ajv.compile(toJsonSchema(schema, "input"));
  const payloads: [unknown, boolean][] = [
    [{ c: 1 }, false],
    [{ c: 1, a: { x: 1 } }, true],
    [{ c: 1, b: "y" }, true],
    [{ c: 1, a: { x: 1 }, b: "y" }, true],
    [{ c: 1, zz: 1 }, false],
    [{ c: 1, a: null }, false],
    [{ a: { x: 1 } }, false],
  ];
  for (const [p, want] of payloads) expect({ p, zod: schema.safeParse(p).success, ajv: validate(p) }).toEqual({ p, zod: want, ajv: want });
});
