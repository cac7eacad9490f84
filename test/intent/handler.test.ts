// End to end with real handler applications (separate processes): installed by
// dropping a descriptor into a watched directory, launched by the exec launcher,
// answering with sendResult; results reach the start subscriber and subscribeResult.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { existsSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { testEnv, spawnScript, eventually, type Env } from "../helpers/harness";
import type { BusClient } from "../../src/bus/client";
import { installApp, handlerMain, tempDir, BROWSER_FILTERS } from "./apps";

const INTENT = "com.vendor.service.intent";
let env: Env;
let apps: string;
let work: string;
let client: BusClient;
const spawned: ReturnType<typeof spawnScript>[] = [];
const script = (...a: Parameters<typeof spawnScript>) => {
  const s = spawnScript(...a);
  spawned.push(s);
  return s;
};
const service = () => env.rt!.services.find((s) => s.module.spec.name === "intent")!.instance as any;
const records = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)) : []);

beforeAll(async () => {
  env = await testEnv();
  apps = tempDir();
  work = tempDir("intent-work-");
  await env.start(["intent"], { serviceConfig: { intent: { applicationDirs: [apps], launcher: "exec", reloadDelayMs: 20 } } });
  client = await env.client();
});
afterAll(async () => {
  for (const s of spawned) if (s.proc.exitCode === null) await s.kill();
  await env?.stop();
  if (apps) rmSync(apps, { recursive: true, force: true });
  if (work) rmSync(work, { recursive: true, force: true });
});

test("an app dropped into the watched directory handles a view intent; start and subscribeResult subscribers both get its result", async () => {
  const record = join(work, "browser.jsonl");
  const go = join(work, "browser.go");
  const before = Date.now();
  installApp(apps, { id: "com.example.browser", main: "bin/browser", intentFilters: BROWSER_FILTERS }, handlerMain({ record, waitFile: go }));
  // The service sees the new app without a restart.
  await eventually(async () => ((await client.call(INTENT, "query", { intent: { name: "com.example.browser" } })).handlers as unknown[]).length === 1, 1000);
  const visibleMs = Date.now() - before;

  const results: any[] = [];
  const sub = await client.subscribe(INTENT, "start", { intent: { action: "view", uri: "https://example.com/news?id=1" } }, (m) => results.push(m));
  expect(sub.first).toEqual({ returnValue: true, subscribed: true, intentId: expect.any(Number) });
  const intentId = sub.first.intentId as number;

  // A second component, in its own process, follows the same intent.
  const watcher = script("test/fixtures/intent-result-watcher.ts", [String(intentId)], { DEVSERVICES_BUS: env.bus.address });
  const subscribed = JSON.parse((await watcher.waitFor("SUBSCRIBED ")).slice("SUBSCRIBED ".length));
  expect(subscribed).toEqual({ returnValue: true, subscribed: true, intentId });

  // The app was launched with the intent (and its ID) as one JSON argument and the bus address.
  const launched = (await eventually(() => records(record)[0]));
  expect(launched.argc).toBe(5); // --record F --wait-file G, then the launch parameters
  expect(launched.params).toEqual({ intent: { action: "view", uri: "https://example.com/news?id=1", intentId } });
  expect(launched.appId).toBe("com.example.browser");
  expect(launched.bus).toBe(env.bus.address);

  writeFileSync(go, "");
  const expected = {
    returnValue: true,
    subscribed: true,
    intentId,
    result: "viewed https://example.com/news?id=1",
    intent: { extra: { handledBy: "com.example.browser", pid: launched.pid } },
    from: "com.example.browser",
  };
  await eventually(() => results.length === 1, 5000);
  expect(results[0]).toEqual(expected);
  const pushed = await watcher.waitFor("RESULT ", 5000);
  expect(JSON.parse(pushed.slice("RESULT ".length))).toEqual(expected);
  // The app's own sendResult call was answered with its intent ID.
  await eventually(() => records(record).length === 2);
  expect(records(record)[1].sendResult).toEqual({ returnValue: true, intentId });
  await sub.cancel();
  await watcher.kill();
  console.log(`new app visible as a handler after ${visibleMs} ms`);
});

test("a requester that disconnects is dropped; the others still get the result", async () => {
  const record = join(work, "viewer.jsonl");
  const go = join(work, "viewer.go");
  installApp(apps, { id: "com.example.viewer", main: "viewer", intentFilters: [{ actions: ["view"], uris: ["geo://"] }] }, handlerMain({ record, waitFile: go }));
  await eventually(async () => ((await client.call(INTENT, "query", { intent: { action: "view", uri: "geo://1,2" } })).handlers as unknown[]).length === 1, 1000);

  const requester = script("test/fixtures/intent-requester.ts", [JSON.stringify({ action: "view", uri: "geo://1,2" })], { DEVSERVICES_BUS: env.bus.address });
  const first = JSON.parse((await requester.waitFor("STARTED ")).slice("STARTED ".length));
  expect(first).toMatchObject({ returnValue: true, subscribed: true });
  const intentId = first.intentId;
  const results: any[] = [];
  const sub = await client.subscribe(INTENT, "subscribeResult", { intentId }, (m) => results.push(m));
  expect(sub.first).toEqual({ returnValue: true, subscribed: true, intentId });
  await eventually(() => service().inspect().perIntent[intentId] === 2);

  await requester.kill("SIGKILL");
  await eventually(() => service().inspect().perIntent[intentId] === 1);

  writeFileSync(go, "");
  await eventually(() => results.length === 1, 5000);
  expect(results[0]).toMatchObject({ intentId, from: "com.example.viewer", result: "viewed geo://1,2" });
  await sub.cancel();
  await eventually(() => service().inspect().perIntent[intentId] === 0);
});

test("a handler whose main cannot run: Failed to start intent, and the intent is gone", async () => {
  installApp(apps, { id: "com.example.broken", main: "missing-binary", intentFilters: [{ actions: ["edit"] }] });
  installApp(apps, { id: "com.example.nomain", intentFilters: [{ actions: ["share"] }] });
  await eventually(async () => ((await client.call(INTENT, "query", {})).handlers as unknown[]).length === 4, 1000);
  const before = service().inspect();
  expect(await client.call(INTENT, "start", { intent: { action: "edit" }, subscribe: true })).toEqual({ returnValue: false, errorText: "Failed to start intent", intentId: 0 });
  expect(await client.call(INTENT, "start", { intent: { action: "share" } })).toEqual({ returnValue: false, errorText: "Failed to start intent", intentId: 0 });
  expect(service().inspect().intents).toBe(before.intents);
  expect(service().inspect().subscribers).toBe(before.subscribers);
});
