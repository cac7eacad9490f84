// Nothing leaks across subscribe/cancel cycles: after 1,000 of them the services
// hold no subscription, no catalog entry (topics) and no lease, and neither the
// client's match rules on the daemon (org.freedesktop.DBus.Debug.Stats) nor the
// hosting connection's grow.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { testEnv, type Env } from "../helpers/harness";
import type { BusClient } from "../../src/bus/client";

const CYCLES = 1000;
const FC = "com.vendor.service.filecache";
const TA = "com.vendor.service.testautomation";
const POWER = "com.vendor.service.power2";

let env: Env;
let c: BusClient;
beforeAll(async () => {
  env = await testEnv();
  await env.start(["filecache", "testautomation", "power2"], {
    serviceConfig: { filecache: { configFile: null, totalCacheSpace: 16 * 1024 * 1024 } },
  } as any);
  c = await env.client();
  await c.call(FC, "DefineType", { typeName: "leak", loWatermark: 0, hiWatermark: 8 * 1024 * 1024, size: 100 });
});
afterAll(() => env.stop());

/** The daemon's view of a connection: its match rules now and at their peak. */
async function daemonStats(name: string): Promise<{ matchRules: number; peak: number }> {
  const r = await c.callRaw({
    destination: "org.freedesktop.DBus",
    path: "/org/freedesktop/DBus",
    interface: "org.freedesktop.DBus.Debug.Stats",
    member: "GetConnectionStats",
    signature: "s",
    body: [name],
  });
  expect(r.signature).toBe("a{sv}");
  const stats = r.body[0] as Record<string, { value: unknown }>;
  return { matchRules: Number(stats.MatchRules!.value), peak: Number(stats.PeakMatchRules!.value) };
}

const serverStats = () => env.rt!.server.stats();

/** Runs `cycle` CYCLES times; checks that the service side and the client's match rules are back where they were. */
async function noLeaks(cycle: (i: number) => Promise<void>) {
  const client0 = await daemonStats(c.uniqueName);
  const server0 = await daemonStats(env.rt!.server.uniqueName);
  const before = serverStats();
  await cycle(0);
  const first = await daemonStats(c.uniqueName);
  for (let i = 1; i < CYCLES; i++) await cycle(i);
  const after = serverStats();
  expect({ subscriptions: after.subscriptions, topics: after.topics, leases: after.leases }).toEqual({ subscriptions: 0, topics: 0, leases: 0 });
  expect(after.matchRules).toBe(before.matchRules);
  const client1 = await daemonStats(c.uniqueName);
  const server1 = await daemonStats(env.rt!.server.uniqueName);
  expect(client1.matchRules).toBe(client0.matchRules);
  // While a cycle's two subscriptions are open: at most the rule of their service peer
  // and one per shared topic they attached (test automation's nubs and its events:
  // docs/decisions/fanout.md), so 3 ...
  expect(first.peak).toBeLessThanOrEqual(client0.matchRules + 3);
  // ... and never one more per cycle: the peak after the last cycle is the first one's.
  expect(client1.peak).toBeLessThanOrEqual(first.peak);
  expect(server1.matchRules).toBe(server0.matchRules);
  expect(server1.peak).toBe(server0.peak);
}

test(`file cache: ${CYCLES} cycles of a subscribed insert (a write lease) and a SubscribeCacheObject (a hold lease), cancelled`, async () => {
  await noLeaks(async (i) => {
    const w = await c.subscribe(FC, "InsertCacheObject", { typeName: "leak", fileName: `${i}.bin` }, () => {});
    expect(w.first.subscribed).toBe(true);
    const h = await c.subscribe(FC, "SubscribeCacheObject", { pathName: w.first.pathName }, () => {});
    expect(h.first.subscribed).toBe(true);
    if (i === 0) expect(serverStats()).toMatchObject({ subscriptions: 2, topics: 2, leases: 2 });
    await w.cancel();
    await h.cancel();
    expect((await c.call(FC, "ExpireCacheObject", { pathName: w.first.pathName })).returnValue).toBe(true);
  });
  expect(await c.call(FC, "GetCacheStatus")).toMatchObject({ numObjs: 0, size: 0 });
}, 60000);

test(`test automation: ${CYCLES} stages (a lease and two topic entries each) and event subscriptions, cancelled`, async () => {
  await noLeaks(async (i) => {
    const nub = await c.subscribe(TA, "subscribeToCommands", { appInfo: { id: `com.example.leak${i}` }, name: "n", scene: "s", type: "qml" }, () => {});
    expect(nub.first.subscribed).toBe(true);
    const events = await c.subscribe(TA, "subscribeToEvents", {}, () => {});
    if (i === 0) expect(serverStats()).toMatchObject({ subscriptions: 2, topics: 3, leases: 1 });
    await nub.cancel();
    await events.cancel();
  });
  expect((await c.call(TA, "handleRequest", { command: "getRunningAppsAndStages" })).result).toEqual([]);
}, 60000);

test(`power: ${CYCLES} registrations and state subscriptions, cancelled`, async () => {
  await noLeaks(async () => {
    const reg = await c.subscribe(POWER, "registerStateTransition", { state: "ActiveState" }, () => {});
    expect(reg.first.subscribed).toBe(true);
    const state = await c.subscribe(POWER, "getState", {}, () => {});
    await reg.cancel();
    await state.cancel();
  });
}, 60000);
