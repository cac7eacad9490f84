// The application manager launcher: a stand-in application manager (a separate
// process owning com.vendor.service.applicationmanager) receives `launch` with the
// intent in `params`; when it refuses, or is not on the bus, start fails.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { rmSync } from "node:fs";
import { testEnv, spawnScript, type Env } from "../helpers/harness";
import type { BusClient } from "../../src/bus/client";
import { installApp, tempDir, BROWSER_FILTERS } from "./apps";

const INTENT = "com.vendor.service.intent";
let env: Env;
let apps: string;
let driverApps: string;
let client: BusClient;
const spawned: ReturnType<typeof spawnScript>[] = [];
const appManager = async (...args: string[]) => {
  const s = spawnScript("test/fixtures/intent-appmanager.ts", args, { DEVSERVICES_BUS: env.bus.address });
  spawned.push(s);
  await s.waitFor("READY");
  return s;
};
const launches = (s: ReturnType<typeof spawnScript>) => s.lines.filter((l) => l.startsWith("LAUNCH ")).map((l) => JSON.parse(l.slice(7)));
const start = (launcher: string) =>
  env.start(["intent"], { serviceConfig: { intent: { applicationDirs: [apps], sessions: { driver: [driverApps] }, launcher } } });

beforeAll(async () => {
  env = await testEnv();
  apps = tempDir();
  driverApps = tempDir();
  // No main: only an application manager can start these.
  installApp(apps, { id: "com.example.browser", intentFilters: BROWSER_FILTERS });
  installApp(driverApps, { id: "com.example.navigation", intentFilters: [{ actions: ["view"], uris: ["geo://"] }] });
  client = await env.client();
});
afterAll(async () => {
  for (const s of spawned) if (s.proc.exitCode === null) await s.kill();
  await env?.stop();
  if (apps) rmSync(apps, { recursive: true, force: true });
  if (driverApps) rmSync(driverApps, { recursive: true, force: true });
});

test("launcher applicationmanager: no application manager on the bus -> Failed to start intent", async () => {
  await start("applicationmanager");
  expect(await client.call(INTENT, "start", { intent: { action: "view", uri: "http://example.com" } })).toEqual({
    returnValue: false,
    errorText: "Failed to start intent",
    intentId: 0,
  });
});

test("launcher applicationmanager: launch receives {id, params} with the intent and its ID", async () => {
  await start("applicationmanager");
  const am = await appManager();
  const r = await client.call(INTENT, "start", { intent: { action: "view", uri: "https://example.com/", extra: { tab: "new" } } });
  expect(r).toEqual({ returnValue: true, intentId: expect.any(Number) });
  await am.waitFor("LAUNCH ");
  expect(launches(am)).toEqual([
    { id: "com.example.browser", params: { intent: { action: "view", uri: "https://example.com/", extra: { tab: "new" }, intentId: r.intentId } } },
  ]);

  // A handler under a session is launched in that session.
  const nav = await client.call(INTENT, "start", { sessionId: "driver", intent: { action: "view", uri: "geo://48.1,11.5" } });
  expect(nav.returnValue).toBe(true);
  await am.waitFor((l) => l.includes("com.example.navigation"));
  expect(launches(am)[1]).toEqual({
    id: "com.example.navigation",
    sessionId: "driver",
    params: { intent: { action: "view", uri: "geo://48.1,11.5", intentId: nav.intentId } },
  });
  await am.kill();
});

test("launcher auto uses the application manager when it is on the bus", async () => {
  await start("auto");
  const am = await appManager();
  const r = await client.call(INTENT, "start", { intent: { name: "com.example.browser" } });
  expect(r.returnValue).toBe(true);
  await am.waitFor("LAUNCH ");
  expect(launches(am)[0]).toEqual({ id: "com.example.browser", params: { intent: { name: "com.example.browser", intentId: r.intentId } } });
  await am.kill();
  // Without it, auto runs main, which these apps lack.
  expect(await client.call(INTENT, "start", { intent: { name: "com.example.browser" } })).toEqual({ returnValue: false, errorText: "Failed to start intent", intentId: 0 });
});

test("an application manager that refuses the launch -> Failed to start intent", async () => {
  await start("applicationmanager");
  const am = await appManager("refuse");
  expect(await client.call(INTENT, "start", { intent: { action: "view", uri: "http://example.com" }, subscribe: true })).toEqual({
    returnValue: false,
    errorText: "Failed to start intent",
    intentId: 0,
  });
  expect(launches(am)).toHaveLength(1);
  await am.kill();
});
