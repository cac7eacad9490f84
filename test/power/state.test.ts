// getState and getPowerOnReason with their subscriptions, the power-on reason kept
// across restarts, and the virtual board's backend.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { eventually, testEnv, type Env, staysTrue } from "../helpers/harness";
import { powerEnv, POWER, type PowerEnv } from "./setup";
import type { Json } from "../../src/core/errors";

let p: PowerEnv;
beforeAll(async () => {
  p = await powerEnv();
});
afterAll(() => p.stop());

test("getState: the initial state, and every change pushed to subscribers", async () => {
  expect(await p.call("getState")).toEqual({ returnValue: true, state: "ActiveState", subscribed: false });
  const seen: Json[] = [];
  const sub = await p.client.subscribe(POWER, "getState", {}, (m) => seen.push(m));
  expect(sub.first).toEqual({ returnValue: true, state: "ActiveState", subscribed: true });
  expect(await p.call("reboot", { reason: "ota" })).toEqual({ returnValue: true });
  expect(await p.call("setState", { state: "ActiveState", reason: 2 })).toEqual({ returnValue: true });
  await eventually(() => seen.length === 3);
  expect(seen).toEqual([{ returnValue: true, state: "RebootTransitionState" }, { returnValue: true, state: "RebootState" }, { returnValue: true, state: "ActiveState" }]);
  // Forcing the current state changes nothing and pushes nothing.
  expect(await p.call("setState", { state: "ActiveState", reason: 2 })).toEqual({ returnValue: true });
  await sub.cancel();
  expect(seen.length).toBe(3);
});

test("setState forces a state: the clients registered for the state left are told, not asked", async () => {
  const notes: Json[] = [];
  const reg = await p.client.subscribe(POWER, "registerStateTransition", { state: "ActiveState" }, (m) => notes.push(m));
  // A silent voter in another process does not hold a forced change up.
  const silent = await p.registered("ActiveState", "silent");
  const t0 = performance.now();
  expect(await p.call("setState", { state: "GarageModeState", reason: 1 })).toEqual({ returnValue: true });
  expect(performance.now() - t0).toBeLessThan(500);
  expect(await p.call("getState")).toMatchObject({ state: "GarageModeState" });
  await eventually(() => notes.length === 1);
  expect(notes).toEqual([{ returnValue: true, state: "ActiveState", nextState: "GarageModeState", token: expect.any(String) }]);
  await silent.proc.waitFor('NOTIFIED {"returnValue":true,"state":"ActiveState","nextState":"GarageModeState"');
  // Told, not asked: an answer is too late.
  expect(await p.call("respondStateTransitionAck", { state: "ActiveState", ack: false, token: notes[0]!.token as string })).toEqual({
    returnValue: false,
    errorCode: 5,
    errorText: "errorResponseTooLate",
  });
  // Nobody is registered for GarageModeState: going back tells no one.
  expect(await p.call("setState", { state: "ActiveState", reason: 1.5 })).toEqual({ returnValue: true });
  await staysTrue(() => notes.length === 1, 100, "going back to ActiveState tells no one");
  await silent.proc.kill();
  await reg.cancel();
});

test("shutdown goes through ShutdownTransitionState; its registered clients are asked too; logind gets PowerOff", async () => {
  const notes: Json[] = [];
  const reg = await p.client.subscribe(POWER, "registerStateTransition", { state: "ShutdownTransitionState" }, async (m) => {
    notes.push(m);
    await p.call("respondStateTransitionAck", { state: m.state as string, ack: true, token: m.token as string });
  });
  expect(await p.call("shutdown", { reason: "remoteKey" })).toEqual({ returnValue: true });
  await p.logind.waitFor("PowerOff false");
  expect(notes).toEqual([{ returnValue: true, state: "ShutdownTransitionState", nextState: "PowerOffState", token: expect.any(String) }]);
  expect(await p.call("getState")).toMatchObject({ state: "PowerOffState" });
  expect(await p.call("setState", { state: "ActiveState", reason: 2 })).toEqual({ returnValue: true });
  await reg.cancel();
});

test("a registered client that leaves during a vote no longer holds it up", async () => {
  const voter = await p.registered("ActiveState", "silent");
  const t0 = performance.now();
  const pending = p.call("reboot", { reason: "ota" });
  await voter.proc.waitFor("NOTIFIED");
  await voter.proc.kill("SIGKILL");
  expect(await pending).toEqual({ returnValue: true });
  expect(performance.now() - t0).toBeLessThan(900); // the 1 s timeout did not run out
  expect(await p.call("setState", { state: "ActiveState", reason: 2 })).toEqual({ returnValue: true });
});

test("the power-on reason: default, set, pushed, saved, and kept across a restart", async () => {
  expect(await p.call("getPowerOnReason", { subscribe: false })).toEqual({ returnValue: true, subscribed: false, reason: "unknown" });
  const seen: Json[] = [];
  const sub = await p.client.subscribe(POWER, "getPowerOnReason", {}, (m) => seen.push(m));
  expect(sub.first).toEqual({ returnValue: true, subscribed: true, reason: "unknown" });
  expect(await p.call("setPowerOnReason", { reason: "remoteKey" })).toEqual({ returnValue: true });
  await eventually(() => seen.length === 1);
  expect(seen).toEqual([{ returnValue: true, reason: "remoteKey" }]);
  const file = join(p.env.stateDir, "power2", "power-on-reason.json");
  expect(existsSync(file)).toBe(true);
  expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ version: 1, reason: "remoteKey" });

  await p.restart();
  await sub.ended; // the old service ended it
  expect(await p.call("getPowerOnReason", { subscribe: false })).toEqual({ returnValue: true, subscribed: false, reason: "remoteKey" });
  expect(await p.call("getState")).toMatchObject({ state: "ActiveState" });
});

test("the virtual board: reboot comes back to the initial state, shutdown stays off, nothing reaches the host", async () => {
  const env: Env = await testEnv();
  try {
    await env.start(["power2"]);
    const c = await env.client();
    expect(await c.call(POWER, "reboot", { reason: "ota" })).toEqual({ returnValue: true });
    expect(await c.call(POWER, "getState")).toMatchObject({ state: "ActiveState" });
    expect(await c.call(POWER, "shutdown", { reason: "remoteKey" })).toEqual({ returnValue: true });
    expect(await c.call(POWER, "getState")).toMatchObject({ state: "PowerOffState" });
    expect(await c.call(POWER, "setState", { state: "ActiveState", reason: 2 })).toEqual({ returnValue: true });
  } finally {
    await env.stop();
  }
});
