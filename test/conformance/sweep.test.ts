// The conformance sweep: for every method of the ten services (their method tables,
// src/services/index.ts) joined with the spec's table (./spec-errors.ts):
//   (a) each request field the spec marks optional is optional: the method's schema
//       takes the request without it, and the service answers it, not with its
//       schema failure;
//   (b) every response has boolean returnValue: each first reply and each push the
//       sweep receives, with a push caused for every subscribable method that can
//       push on this host;
//   (c) each error code the spec lists for the method is caused for real, over the
//       bus, against the virtual board's services on a private bus (or, where it
//       cannot be here, the service's error table has it with the spec's text).
// A method without a row, a code without a case, or a response without returnValue
// fails it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually, testEnv, type Env } from "../helpers/harness";
import { SERVICES } from "../../src/services/index";
import { schemaOf, type MethodSpec, type ServiceModule } from "../../src/core/service";
import type { Json } from "../../src/core/errors";
import type { BusClient } from "../../src/bus/client";
import virtual from "../../recipes/boards/virtual.json" with { type: "json" };
import { installApp, BROWSER_FILTERS } from "../intent/apps";
import { SPEC, type Code, type Ctx, type Row, type Sub } from "./spec-errors";
import { E as cameraE } from "../../src/services/camera/errors";
import { E as nettoolsE } from "../../src/services/nettools/errors";
import { E as videooutputE } from "../../src/services/videooutput/errors";

/** The error tables a hardware or elsewhere row is checked against (the services whose rows have such codes). */
const ERROR_TABLES: Record<string, { code: number | null; text: string }[]> = {
  camera2: Object.values(cameraE),
  nettools: Object.values(nettoolsE),
  videooutput: Object.values(videooutputE),
};

const responses: { where: string; message: Json; exempt?: string }[] = [];
let env: Env;
let dir: string;
let plugDir: string;
let captureDir: string;
let apps: string;
let serial = 0;

beforeAll(async () => {
  env = await testEnv();
  dir = mkdtempSync(join(tmpdir(), "conformance-"));
  plugDir = mkdtempSync(join(tmpdir(), "conformance-plug-"));
  captureDir = mkdtempSync(join(tmpdir(), "conformance-pictures-"));
  apps = mkdtempSync(join(tmpdir(), "conformance-apps-"));
  installApp(apps, { id: "com.example.browser", intentFilters: BROWSER_FILTERS });
  await env.start(Object.keys(SERVICES), {
    record: {
      ...virtual.record,
      videoSources: {
        ...(virtual.record as Json).videoSources as Json,
        // The pipeline builds, READY fails: 2.
        missing: "v4l2src device=/nonexistent/video9",
        // Fails after a second of frames: 4.
        failing: "videotestsrc is-live=true ! identity error-after=30",
      },
    },
    serviceConfig: {
      ...(virtual.serviceConfig as Json),
      camera2: { plugDir, captureDir, windows: ["window0"], captureNameTries: 2 },
      record: { startTimeoutMs: 3000, maxSubscribers: 2 },
      power2: { backend: "virtual" },
      nettools: { configFile: null, hostnameSetter: "hostnamed", dhcpClient: "udhcpc", searchPath: "/nonexistent" },
      intent: { applicationDirs: [apps], launcher: "applicationmanager" },
    },
  } as any);
}, 60000);

afterAll(async () => {
  await env?.stop();
  for (const d of [dir, plugDir, captureDir, apps]) if (d) rmSync(d, { recursive: true, force: true });
});

/** A scenario's context: two fresh clients; everything they hold is released when they go. */
async function context(where: string): Promise<{ t: Ctx; close(): Promise<void> }> {
  const clients: Record<"a" | "b", BusClient> = { a: await env.client(), b: await env.client() };
  const subs: Sub[] = [];
  const t: Ctx = {
    dir,
    plugDir,
    captureDir,
    async call(service, method, payload = {}, who = "a") {
      const r = await clients[who].call(service, method, payload, { timeoutMs: 20000 });
      responses.push({ where: `${where}: ${service} ${method}`, message: r, exempt: exemptOf(service, method, false) });
      return r;
    },
    async subscribe(service, method, payload, who = "a") {
      const pushes: Json[] = [];
      const s = await clients[who].subscribe(service, method, payload, (m) => {
        pushes.push(m);
        responses.push({ where: `${where}: ${service} ${method} (push)`, message: m, exempt: exemptOf(service, method, true) });
      }, { timeoutMs: 20000 });
      responses.push({ where: `${where}: ${service} ${method} (first)`, message: s.first, exempt: exemptOf(service, method, false) });
      const sub = { first: s.first, pushes, cancel: () => s.cancel() };
      subs.push(sub);
      return sub;
    },
    until: async (fn, ms = 5000) => void (await eventually(fn, ms, 10)),
    unique: (prefix) => `${prefix}-${process.pid}-${++serial}`,
  };
  return {
    t,
    async close() {
      for (const s of subs) await s.cancel();
      for (const c of Object.values(clients)) {
        c.close();
        env.clients.splice(env.clients.indexOf(c), 1);
      }
      // What they held (camera handles, peripherals, registrations) is released.
      await eventually(() => env.rt!.server.leases.count("") === 0, 5000);
    },
  };
}

/** The known deviation (of the row of that service and method) that exempts a response from the returnValue check. */
function exemptOf(service: string, method: string, push: boolean): string | undefined {
  const entry = Object.entries(SERVICES).find(([n, m]) => n === service || m.spec.busName === service || (m.instances && service.startsWith("com.vendor.pipeline.record.")));
  const row = entry ? SPEC[entry[0]]?.[method] : undefined;
  return row?.deviations?.returnValue ?? (push ? row?.deviations?.pushReturnValue : undefined);
}

const errorTextOf = (r: Json) => (r.errorText ?? r.errorrText ?? r.errorMessage) as string | undefined;
const busNameOf = (name: string, m: ServiceModule<any>) => (m.instances ? "com.vendor.pipeline.record.main" : m.spec.busName);

/** Runs a scenario with fresh clients, then releases what it held. */
async function scenario<T>(where: string, fn: (t: Ctx) => Promise<T>): Promise<T> {
  const c = await context(where);
  try {
    return await fn(c.t);
  } finally {
    await c.close();
  }
}

describe("the spec's table has a row for every method, and no row for a method the services lack", () => {
  test("rows and method tables agree", () => {
    const methods = Object.entries(SERVICES).flatMap(([name, m]) => Object.keys(m.spec.api).map((k) => `${name} ${k}`)).sort();
    const rows = Object.entries(SPEC).flatMap(([name, r]) => Object.keys(r).map((k) => `${name} ${k}`)).sort();
    expect(rows).toEqual(methods);
  });
});

for (const [name, module] of Object.entries(SERVICES)) {
  describe(name, () => {
    for (const [method, spec] of Object.entries(module.spec.api as Record<string, MethodSpec>)) {
      const row: Row | undefined = SPEC[name]?.[method];
      test(`${method}`, async () => {
        // A method added without a row fails here.
        expect({ method: `${name} ${method}`, row: row !== undefined }).toEqual({ method: `${name} ${method}`, row: true });
        expect(row!.section).toMatch(/^Part [123], /);
        const bus = busNameOf(name, module);

        // (a) the spec's optional request fields.
        const request = schemaOf(spec, "request");
        for (const field of row!.optional ?? []) {
          await scenario(`${name} ${method} without ${field}`, async (t) => {
            const payload = (await row!.base?.(t, field)) ?? {};
            expect({ field, inPayload: field in payload }).toEqual({ field, inPayload: false });
            const parsed = request.safeParse(payload);
            expect({ field, accepted: parsed.success, issues: parsed.success ? [] : parsed.error.issues.map((i) => i.message) }).toEqual({ field, accepted: true, issues: [] });
            const r = await t.call(bus, method, payload);
            if (!row!.deviations?.returnValue) expect({ field, answer: r, returnValue: typeof r.returnValue }).toEqual({ field, answer: r, returnValue: "boolean" });
            const schemaFailure = { returnValue: false, ...module.spec.badRequest(method, { kind: "schema", message: "", missing: field, path: [field] }) };
            if (r.returnValue === false && !row!.sameAnswerAsSchemaFailure) expect({ field, answer: r }).not.toEqual({ field, answer: schemaFailure });
            await row!.after?.(t);
          });
        }

        // (b) pushes: every subscribable method causes one here, or says why it cannot.
        if (spec.subscribable || spec.alwaysSubscribes) {
          expect({ method, pushOrReason: !!row!.push || !!row!.noPush }).toEqual({ method, pushOrReason: true });
          if (row!.push) {
            await scenario(`${name} ${method} push`, async (t) => {
              const s = await t.subscribe(bus, method, await row!.push!.payload(t));
              expect({ first: s.first.returnValue, subscribed: s.first.subscribed }).toEqual({ first: true, subscribed: true });
              await row!.push!.trigger(t, s.first);
              await t.until(() => s.pushes.length > 0, 10000);
              if (!row!.deviations?.pushReturnValue)
                for (const m of s.pushes) expect({ push: m, returnValue: typeof m.returnValue }).toEqual({ push: m, returnValue: "boolean" });
              await row!.push!.after?.(t);
            });
          }
        } else expect(row!.push === undefined && row!.noPush === undefined).toBe(true);

        // (c) the spec's error codes.
        for (const code of row!.errors ?? []) await checkCode(name, method, code);
      }, 90000);
    }
  });
}

async function checkCode(name: string, method: string, code: Code) {
  const label = `${name} ${method} ${code.code ?? "None"} ${code.text ?? ""}`;
  if ("cause" in code) {
    const r = await scenario(label, code.cause);
    const got = { label, returnValue: r.returnValue, errorCode: r.errorCode, text: errorTextOf(r)?.startsWith(code.text ?? "") ? code.text : errorTextOf(r) };
    expect(got).toEqual({ label, returnValue: false, errorCode: code.code ?? undefined, text: code.text });
  } else if ("hardware" in code || "elsewhere" in code) {
    expect(("hardware" in code ? code.hardware : code.elsewhere).length).toBeGreaterThan(20);
    const table = ERROR_TABLES[name] ?? [];
    expect({ label, inTable: table.some((e) => e.code === code.code && (code.text === undefined || e.text === code.text)) }).toEqual({ label, inTable: true });
  } else {
    // A known deviation: named in the row; the report lists it.
    expect(code.deviation.length).toBeGreaterThan(20);
  }
}

test("every response the sweep received has a boolean returnValue", () => {
  expect(responses.length).toBeGreaterThan(100);
  const without = responses.filter((r) => typeof r.message.returnValue !== "boolean" && !r.exempt);
  expect(without).toEqual([]);
});
