// Every push carries returnValue (the spec's convention 2: every response, the first
// reply and each message pushed on a subscription, has boolean returnValue): the
// pushes of getState, getPowerOnReason and registerStateTransition are
// { returnValue: true, ... } beside the row's subscription message.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { eventually } from "../helpers/harness";
import { powerEnv, POWER, type PowerEnv } from "./setup";
import type { Json } from "../../src/core/errors";

let p: PowerEnv;
beforeAll(async () => {
  p = await powerEnv();
});
afterAll(() => p.stop());

test("pushes of getState, getPowerOnReason and registerStateTransition carry returnValue true", async () => {
  const states: Json[] = [];
  const reasons: Json[] = [];
  const notes: Json[] = [];
  const s1 = await p.client.subscribe(POWER, "getState", { subscribe: true }, (m) => states.push(m));
  const s2 = await p.client.subscribe(POWER, "getPowerOnReason", { subscribe: true }, (m) => reasons.push(m));
  const s3 = await p.client.subscribe(POWER, "registerStateTransition", { state: "ActiveState" }, (m) => notes.push(m));
  // Forced changes: the registered client is told, not asked.
  expect(await p.call("setState", { state: "GarageModeState", reason: 1 })).toEqual({ returnValue: true });
  expect(await p.call("setState", { state: "ActiveState", reason: 1 })).toEqual({ returnValue: true });
  expect(await p.call("setPowerOnReason", { reason: "pushTest" })).toEqual({ returnValue: true });
  await eventually(() => states.length === 2 && reasons.length === 1 && notes.length === 1, 5000);
  for (const s of [s1, s2, s3]) await s.cancel();
  expect(states).toEqual([{ returnValue: true, state: "GarageModeState" }, { returnValue: true, state: "ActiveState" }]);
  expect(reasons).toEqual([{ returnValue: true, reason: "pushTest" }]);
  expect(notes).toEqual([{ returnValue: true, state: "ActiveState", nextState: "GarageModeState", token: expect.any(String) }]);
}, 20000);

test("a vote's push (a reboot asking a registered client) carries returnValue true", async () => {
  const notes: Json[] = [];
  const reg = await p.client.subscribe(POWER, "registerStateTransition", { state: "ActiveState" }, async (m) => {
    notes.push(m);
    await p.call("respondStateTransitionAck", { state: m.state as string, ack: true, token: m.token as string });
  });
  expect(reg.first).toMatchObject({ returnValue: true, subscribed: true });
  expect(await p.call("reboot", { reason: "ota" })).toEqual({ returnValue: true });
  await reg.cancel();
  expect(notes).toEqual([{ returnValue: true, state: "ActiveState", nextState: "RebootTransitionState", token: expect.any(String) }]);
  expect(await p.call("setState", { state: "ActiveState", reason: 2 })).toEqual({ returnValue: true });
}, 20000);
