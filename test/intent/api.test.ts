// query, start, sendResult, subscribeResult against the spec's tables: every error
// row, the handler pool kept current from watched directories, and intent lifetime.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testEnv, eventually, type Env, staysTrue } from "../helpers/harness";
import type { BusClient } from "../../src/bus/client";
import { installApp, removeApp, tempDir, BROWSER_FILTERS } from "./apps";

const INTENT = "com.vendor.service.intent";
let env: Env;
let apps: string;
let driverApps: string;
let client: BusClient;
const service = () => env.rt!.services.find((s) => s.module.spec.name === "intent")!.instance as any;
const call = (method: string, payload: Record<string, unknown> | string) => client.call(INTENT, method, payload);
const names = (r: any) => (r.handlers as any[]).map((h) => (h.sessionId ? `${h.name}@${h.sessionId}` : h.name));
// Apps whose main exits at once: the launch succeeds and no result ever comes.
const SILENT = "/bin/true";
const config = (extra: Record<string, unknown> = {}) => ({
  serviceConfig: { intent: { applicationDirs: [apps], sessions: { driver: [driverApps] }, launcher: "exec", reloadDelayMs: 20, ...extra } },
});
const err = (text: string, extra: Record<string, unknown> = {}) => ({ returnValue: false, errorText: text, ...extra });
/** Failures carry the fields the spec requires in every response: start and subscribeResult intentId (0: none), query handlers. */
const NO_INTENT = { intentId: 0 };
const NO_HANDLERS = { handlers: [] };

beforeAll(async () => {
  env = await testEnv();
  apps = tempDir();
  driverApps = tempDir();
  installApp(apps, { id: "com.example.browser", main: SILENT, intentFilters: BROWSER_FILTERS });
  installApp(apps, { id: "com.example.navigation", main: SILENT, intentFilters: [{ actions: ["view"], uris: ["geo://"] }] });
  installApp(driverApps, { id: "com.example.navigation", main: SILENT, intentFilters: [{ actions: ["view"], uris: ["geo://"], priority: 5 }] });
  installApp(apps, {
    id: "com.example.player",
    main: SILENT,
    title: "Player",
    intentFilters: [{ actions: ["view"], mimeTypes: [{ mime: "video/*" }, { extension: "mp3" }] }],
  });
  await env.start(["intent"], config());
  client = await env.client();
});
afterAll(async () => {
  await env?.stop();
  if (apps) rmSync(apps, { recursive: true, force: true });
  if (driverApps) rmSync(driverApps, { recursive: true, force: true });
});

test("query: all handlers, by name (every session), by action and uri, by session", async () => {
  const all = await call("query", {});
  expect(names(all)).toEqual(["com.example.browser", "com.example.navigation", "com.example.navigation@driver", "com.example.player"]);
  expect((all.handlers as any[])[0]).toEqual({ name: "com.example.browser", intentFilters: BROWSER_FILTERS });
  expect(names(await call("query", { intent: { name: "com.example.navigation" } }))).toEqual(["com.example.navigation", "com.example.navigation@driver"]);
  // Priority 5 puts the driver session's navigation first.
  expect(names(await call("query", { intent: { action: "view", uri: "geo://1,2" } }))).toEqual(["com.example.navigation@driver", "com.example.navigation"]);
  expect(names(await call("query", { intent: { action: "view", uri: "file:///media/clip.mp4" } }))).toEqual(["com.example.player"]);
  expect(names(await call("query", { sessionId: "driver" }))).toEqual(["com.example.navigation@driver"]);
  expect(await call("query", { intent: { action: "share" } })).toEqual({ returnValue: true, handlers: [] });
});

test("start: intent IDs are new for every intent, never taken from the request", async () => {
  const a = await call("start", { intent: { action: "view", uri: "http://example.com", intentId: 777 }, intentId: 778 });
  const b = await call("start", { intent: { action: "view", uri: "http://example.com" } });
  expect(a).toEqual({ returnValue: true, intentId: expect.any(Number) });
  expect(b.intentId).toBe((a.intentId as number) + 1);
  expect(a.intentId).not.toBe(777);
  // Without subscribe, subscribeResult says whether the intent is running.
  expect(await call("subscribeResult", { intentId: a.intentId! })).toEqual({ returnValue: true, subscribed: false, intentId: a.intentId });
});

test("intent IDs stay unique across a restart of the service: an ID from before it names no new intent", async () => {
  const before = (await call("start", { intent: { name: "com.example.browser" } })).intentId as number;
  await env.start(["intent"], config());
  const after = (await call("start", { intent: { name: "com.example.browser" } })).intentId as number;
  expect(after).toBeGreaterThan(before);
  expect(await call("subscribeResult", { intentId: before })).toEqual({ ...err("Invalid parameter"), intentId: before });
});

test("launch parameters longer than one program argument may be: refused with the reason, nothing started", async () => {
  const started = service().inspect().intents;
  const r = await call("start", { intent: { name: "com.example.browser", extra: { blob: "x".repeat(200_000) } } });
  expect(r).toEqual({ ...err("Failed to start intent"), ...NO_INTENT, reason: expect.stringMatching(/^launch parameters of \d+ bytes exceed the 131071 bytes a program argument may hold$/) });
  expect(service().inspect().intents).toBe(started);
  // Just under the limit still launches.
  const fits = await call("start", { intent: { name: "com.example.browser", extra: { blob: "x".repeat(120_000) } } });
  expect(fits.returnValue).toBe(true);
});

test("sendResult is accepted only from the handler's process: another caller is refused and nothing is pushed", async () => {
  // The handler's process (exec launcher) is known; this test's client is not it.
  // Results from the handler itself, reaching every subscriber: handler.test.ts.
  const got: any[] = [];
  const started = await client.subscribe(INTENT, "start", { intent: { action: "view", uri: "file:///media/song.mp3" } }, (m) => got.push(["start", m]));
  const id = started.first.intentId as number;
  const other = await client.subscribe(INTENT, "subscribeResult", { intentId: id }, (m) => got.push(["other", m]));
  expect(other.first).toEqual({ returnValue: true, subscribed: true, intentId: id });
  expect(await call("sendResult", { intentId: id, result: "playing" })).toEqual({
    returnValue: false, errorText: "Invalid parameter", reason: `intent ${id} was routed to com.example.player; results are accepted from it only`,
  });
  await staysTrue(() => got.length === 0, 50, "a refused result reaches no subscriber");
  expect(got).toEqual([]);
  await started.cancel();
  await other.cancel();
});

test("error: Invalid parameter (bad JSON, wrong types, unknown intent ID)", async () => {
  const invalid = err("Invalid parameter");
  expect(await call("start", "{not json")).toEqual({ ...invalid, ...NO_INTENT });
  expect(await call("start", { intent: "view" })).toEqual({ ...invalid, ...NO_INTENT });
  expect(await call("start", { intent: { action: 5 } })).toEqual({ ...invalid, ...NO_INTENT });
  expect(await call("start", { intent: { action: "view" }, subscribe: "yes" })).toEqual({ ...invalid, ...NO_INTENT });
  expect(await call("query", { intent: { uri: ["http://x"] } })).toEqual({ ...invalid, ...NO_HANDLERS });
  expect(await call("sendResult", { intentId: "1" })).toEqual(invalid);
  expect(await call("sendResult", { intentId: 1.5 })).toEqual(invalid);
  expect(await call("sendResult", { intentId: 999999, result: "x" })).toEqual(invalid);
  expect(await call("sendResult", { intentId: 1, result: 7 })).toEqual(invalid);
  expect(await call("subscribeResult", { intentId: 999999, subscribe: true })).toEqual({ ...invalid, intentId: 999999 });
  // intentId is a Number (spec): accepted as one, but a fraction names no running intent.
  expect(await call("subscribeResult", { intentId: 1.5 })).toEqual({ ...invalid, intentId: 1.5 });
  expect(await call("subscribeResult", { intentId: 1e300 })).toEqual({ ...invalid, intentId: 1e300 });
});

test("error: Failed to parse intent (no intent, or neither name nor action)", async () => {
  const parse = err("Failed to parse intent");
  expect(await call("start", {})).toEqual({ ...parse, ...NO_INTENT });
  expect(await call("start", { intent: {} })).toEqual({ ...parse, ...NO_INTENT });
  expect(await call("start", { intent: { uri: "http://example.com", mimeType: "text/html" } })).toEqual({ ...parse, ...NO_INTENT });
  expect(await call("start", { intent: { name: "", action: "" } })).toEqual({ ...parse, ...NO_INTENT });
  expect(await call("query", { intent: { uri: "http://example.com" } })).toEqual({ ...parse, ...NO_HANDLERS });
});

test("error: Cannot find session", async () => {
  expect(await call("start", { sessionId: "passenger", intent: { action: "view", uri: "geo://1,2" } })).toEqual({ ...err("Cannot find session"), ...NO_INTENT });
  expect(await call("query", { sessionId: "passenger" })).toEqual({ ...err("Cannot find session"), ...NO_HANDLERS });
});

test("error: Cannot find handler", async () => {
  const none = err("Cannot find handler");
  expect(await call("start", { intent: { action: "view", uri: "ftp://example.com/" } })).toEqual({ ...none, ...NO_INTENT });
  expect(await call("start", { intent: { action: "share" } })).toEqual({ ...none, ...NO_INTENT });
  expect(await call("start", { intent: { name: "com.example.unknown" } })).toEqual({ ...none, ...NO_INTENT });
  // The session has no browser.
  expect(await call("start", { sessionId: "driver", intent: { action: "view", uri: "http://example.com" } })).toEqual({ ...none, ...NO_INTENT });
});

test("error: 'intentId' is required parameter", async () => {
  const required = err("'intentId' is required parameter");
  expect(await call("sendResult", { result: "done" })).toEqual(required);
  expect(await call("subscribeResult", { subscribe: true })).toEqual({ ...required, intentId: 0 });
  expect(await call("subscribeResult", {})).toEqual({ ...required, intentId: 0 });
});

test("the pool follows the directories: install, bad descriptor, fix, remove, a directory created later", async () => {
  const pool = async () => names(await call("query", {}));
  installApp(apps, { id: "com.example.gallery", main: SILENT, intentFilters: [{ actions: ["view"], mimeTypes: ["image/*"] }] });
  await eventually(async () => (await pool()).includes("com.example.gallery"), 1000);

  // A descriptor with bad JSON is skipped; everything else keeps working.
  mkdirSync(join(apps, "com.example.bad"));
  writeFileSync(join(apps, "com.example.bad", "appinfo.json"), '{"id": "com.example.bad", "intentFilters": [');
  const gen = service().inspect().generation;
  await eventually(() => service().inspect().generation > gen, 1000);
  expect(await pool()).toEqual(["com.example.browser", "com.example.gallery", "com.example.navigation", "com.example.navigation@driver", "com.example.player"]);
  expect((await call("start", { intent: { action: "view", uri: "file:///pics/a.png" } })).returnValue).toBe(true);
  // A descriptor without an id is skipped too.
  installApp(apps, { id: "com.example.noid" });
  writeFileSync(join(apps, "com.example.noid", "appinfo.json"), JSON.stringify({ intentFilters: [] }));
  writeFileSync(join(apps, "com.example.bad", "appinfo.json"), JSON.stringify({ id: "com.example.bad", main: SILENT }));
  await eventually(async () => (await pool()).includes("com.example.bad"), 1000);
  expect(await pool()).not.toContain("com.example.noid");

  removeApp(apps, "com.example.gallery");
  removeApp(apps, "com.example.bad");
  await eventually(async () => !(await pool()).includes("com.example.gallery") && !(await pool()).includes("com.example.bad"), 1000);
  expect(await call("start", { intent: { action: "view", uri: "file:///pics/a.png" } })).toEqual({ ...err("Cannot find handler"), ...NO_INTENT });
});

test("an application directory that appears after the start is picked up", async () => {
  const parent = tempDir();
  const later = join(parent, "not-yet");
  await env.start(["intent"], config({ applicationDirs: [apps, later] }));
  expect(names(await call("query", { intent: { name: "com.example.late" } }))).toEqual([]);
  installApp(later, { id: "com.example.late", main: SILENT, intentFilters: [] });
  await eventually(async () => names(await call("query", { intent: { name: "com.example.late" } })).length === 1, 2500);
  rmSync(parent, { recursive: true, force: true });
});

test("with nothing configured, <state-dir>/applications is watched", async () => {
  await env.start(["intent"], { serviceConfig: { intent: { launcher: "exec" } } });
  const dir = join(env.stateDir, "applications");
  mkdirSync(dir, { recursive: true });
  installApp(dir, { id: "com.example.local", main: SILENT, intentFilters: [{ actions: ["view"], uris: ["app://com.example.local/"] }] });
  await eventually(async () => names(await call("query", { intent: { action: "view", uri: "app://com.example.local/home" } })).length === 1, 2500);
  expect((await call("start", { intent: { action: "view", uri: "app://com.example.local/home" } })).returnValue).toBe(true);
});

test("an intent whose handler never answers ends after its lifetime; the oldest goes when too many run", async () => {
  await env.start(["intent"], config({ intentLifetimeMs: 300, maxIntents: 3 }));
  const s = await client.subscribe(INTENT, "start", { intent: { name: "com.example.browser" } }, () => {});
  const id = s.first.intentId as number;
  // Activity (subscribeResult, or a sendResult of its handler) keeps it alive.
  await Bun.sleep(200);
  expect((await call("subscribeResult", { intentId: id })).returnValue).toBe(true);
  await Bun.sleep(200);
  expect((await call("subscribeResult", { intentId: id })).returnValue).toBe(true);
  // Then silence: it ends, its subscribers are told, its ID is refused.
  await s.ended;
  expect(await call("sendResult", { intentId: id })).toEqual(err("Invalid parameter"));
  expect(service().inspect()).toMatchObject({ intents: 0, subscribers: 0 });
  // The result subscription left the platform's catalog with the intent.
  expect(env.rt!.server.stats()).toMatchObject({ subscriptions: 0, topics: 0, leases: 0 });

  const ids: number[] = [];
  for (let i = 0; i < 4; i++) ids.push((await call("start", { intent: { name: "com.example.browser" } })).intentId as number);
  expect(service().inspect().intents).toBe(3);
  expect(await call("subscribeResult", { intentId: ids[0]! })).toEqual({ ...err("Invalid parameter"), intentId: ids[0] });
  expect((await call("subscribeResult", { intentId: ids[3]! })).returnValue).toBe(true);
  await eventually(() => service().inspect().intents === 0, 1500);
});
