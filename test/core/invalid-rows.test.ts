// A request that fails its schema is answered with the row its method's table
// declares (MethodSpec.invalid: by field, by reason: missing, range, invalid; else
// the service's default), written as the service writes rows (ServiceSpec.answer),
// with the method's failureFields under it; without a row, the service's badRequest
// gets the value's description, never the validator's text layout.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { z } from "zod";
import { testEnv, type Env } from "../helpers/harness";
import { BusServer } from "../../src/bus/server";
import { BusClient } from "../../src/bus/client";
import { defineService, method } from "../../src/core/service";
import { answer, ok, type Json } from "../../src/core/errors";

const BUS_NAME = "com.vendor.service.invalidrowstest";
const MISSING = { code: 10, text: "level is required" };
const LEVEL = { code: 11, text: "level must be a number" };
const OTHER = { code: 12, text: "invalid request" };
const res = z.looseObject({ returnValue: z.boolean() });
let seen: Json | undefined;

const service = defineService({
  spec: {
    name: "invalidrowstest",
    busName: BUS_NAME,
    description: "invalid rows test service",
    api: {
      set: method({
        summary: "Rows by field and reason.",
        request: () => z.looseObject({ level: z.number().min(0).max(10), mode: z.enum(["a", "b"]), deep: z.looseObject({ x: z.string() }).optional() }),
        response: () => res,
        invalid: {
          fields: { level: { missing: MISSING, range: (v) => ({ code: 13, text: `level out of range (${v.field})` }), invalid: LEVEL } },
          default: OTHER,
        },
      }),
      plain: method({ summary: "No rows: badRequest answers.", request: () => z.looseObject({ n: z.number(), m: z.string() }), response: () => res }),
    },
    invalid: { default: (v) => (v.method === "plain" ? undefined : OTHER) },
    answer: (_m, row) => answer(row, { textField: "errorMessage" }),
    badRequest: (_m, p) => {
      seen = p as Json;
      return { errorMessage: `bad: ${p.message}` };
    },
    internalError: () => ({ errorMessage: "internal" }),
    failureFields: (m) => (m === "set" ? { level: -1 } : {}),
  },
  create: () => ({ handlers: { set: () => ok(), plain: () => ok() } }),
});

let env: Env;
let server: BusServer;
let c: BusClient;
beforeAll(async () => {
  env = await testEnv();
  server = await BusServer.connect(env.bus.address);
  await server.host(service.spec, await service.create({} as Parameters<typeof service.create>[0]));
  c = await env.client();
});
afterAll(async () => {
  await server?.close();
  await env?.stop();
});

test("the method's rows: a missing field, one past its bound, one of the wrong type, another field; failureFields under them", async () => {
  const call = (p: Json) => c.call(BUS_NAME, "set", p);
  expect(await call({ mode: "a" })).toEqual({ returnValue: false, level: -1, errorCode: 10, errorMessage: "level is required" });
  expect(await call({ level: 11, mode: "a" })).toEqual({ returnValue: false, level: -1, errorCode: 13, errorMessage: "level out of range (level)" });
  expect(await call({ level: "x", mode: "a" })).toEqual({ returnValue: false, level: -1, errorCode: 11, errorMessage: "level must be a number" });
  expect(await call({ level: 1, mode: "c" })).toEqual({ returnValue: false, level: -1, errorCode: 12, errorMessage: "invalid request" });
  expect(await call({ level: 1 })).toEqual({ returnValue: false, level: -1, errorCode: 12, errorMessage: "invalid request" });
  expect(await call({ level: 1, mode: "a" })).toEqual({ returnValue: true });
});

test("without a row the service's badRequest answers, with the value described: path, field, missing, range and its one sentence", async () => {
  expect(await c.call(BUS_NAME, "plain", { m: "x" })).toEqual({ returnValue: false, errorMessage: "bad: Invalid input: expected number, received undefined" });
  expect(seen).toMatchObject({ kind: "schema", missing: "n", path: ["n"], invalid: { method: "plain", field: "n", missing: "n", range: false, path: ["n"] } });
  expect(await c.call(BUS_NAME, "plain", { n: 1, m: 2 })).toEqual({ returnValue: false, errorMessage: "bad: Invalid input: expected string, received number" });
  expect(String(seen!.message)).not.toContain("✖");
  expect(seen).toMatchObject({ invalid: { field: "m", range: false } });
  expect((seen!.invalid as Json).missing).toBeUndefined();
});
