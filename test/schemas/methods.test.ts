// The JSON Schemas `describe` publishes (src/core/jsonschema.ts) are what other
// languages build on. Each is a valid JSON Schema (ajv, strict mode, draft 2020-12,
// with allowUnionTypes: `type: ["string", "number"]` is standard JSON Schema that
// strict mode only warns about), and ajv on the published request schema and zod
// on the service's own schema accept and refuse the same payloads: those the tests
// and docs send, and bad ones made from them (test/schemas/payloads.ts). There is no
// list of tolerated disagreements: every check a service's schema makes is one the
// exporter publishes (docs/decisions/clients.md), so any disagreement fails.
import { expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import { SERVICES } from "../../src/services";
import { schemaOf, type MethodSpec } from "../../src/core/service";
import { methodJsonSchema } from "../../src/core/jsonschema";
import { mutations, sentPayloads } from "./payloads";

export const ajvOptions = { strict: true, allowUnionTypes: true } as const;

const methods = Object.values(SERVICES).flatMap((m) =>
  Object.entries(m.spec.api as Record<string, MethodSpec>).map(([method, spec]) => ({ service: m.spec.name, method, spec })),
);

test("every method's request and response schema compiles with ajv in strict mode (draft 2020-12, allowUnionTypes)", () => {
  const ajv = new Ajv2020(ajvOptions);
  let n = 0;
  for (const { spec } of methods)
    for (const which of ["request", "response"] as const) {
      const schema = methodJsonSchema(spec, which);
      expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
      expect(ajv.validateSchema(schema)).toBe(true);
      ajv.compile(schema);
      n++;
    }
  expect(n).toBe(methods.length * 2);
});

test("ajv on the published request schema and zod agree on every payload the tests and docs send, and on bad ones made from them", () => {
  const ajv = new Ajv2020(ajvOptions);
  const sent = sentPayloads();
  // The corpus is real: every service has payloads from its tests.
  for (const m of Object.values(SERVICES)) expect(sent.filter((p) => p.service === m.spec.name).length).toBeGreaterThan(3);
  expect(sent.length).toBeGreaterThan(500);
  const all = [...sent, ...mutations(sent)];
  const check = new Map(methods.map(({ service, method, spec }) => [`${service}/${method}`, { zod: schemaOf(spec, "request"), ajv: ajv.compile(methodJsonSchema(spec, "request")) }]));
  const disagree: string[] = [];
  let accepted = 0;
  let refused = 0;
  for (const p of all) {
    const c = check.get(`${p.service}/${p.method}`)!;
    const z = c.zod.safeParse(p.payload).success;
    const a = c.ajv(p.payload);
    if (z && a) accepted++;
    if (!z && !a) refused++;
    if (z !== a) disagree.push(`${p.service}/${p.method} ${JSON.stringify(p.payload)}: zod ${z ? "accepts" : "refuses"}, ajv ${a ? "accepts" : "refuses"} (${p.origin})`);
  }
  expect(disagree).toEqual([]);
  // Both verdicts occur in numbers: the comparison is not between two validators that accept everything.
  expect(accepted).toBeGreaterThan(1000);
  expect(refused).toBeGreaterThan(1000);
});
