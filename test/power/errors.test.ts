// Every row of the power service's error table (spec part 2, "Errors").
import { test, expect, beforeAll, afterAll } from "bun:test";
import { powerEnv, POWER, type PowerEnv } from "./setup";
import type { Json } from "../../src/core/errors";
import { eventually } from "../helpers/harness";

let p: PowerEnv;
const err = (code: number, text: string) => ({ returnValue: false, errorCode: code, errorText: text });
const BUSY = err(1, "errorPower2Busy");
const INVALID = err(2, "Invalid JSON format");
const NOT_REGISTERED = err(3, "errorClientNotRegistered");
const ALREADY = err(4, "errorCleintAlreadyRegistered");
const TOO_LATE = err(5, "errorResponseTooLate");
const NO_TIMER = err(6, "errorTimerNotRunning");
const UNKNOWN = err(7, "errorUnknown");

beforeAll(async () => {
  p = await powerEnv();
});
afterAll(() => p.stop());

test("1 errorPower2Busy: while a transition waits for votes, other state changes, registrations and wake locks", async () => {
  const notes: Json[] = [];
  const sub = await p.client.subscribe(POWER, "registerStateTransition", { state: "ActiveState" }, (m) => notes.push(m));
  const clientId = sub.first.clientId as string;
  const pending = p.call("reboot", { reason: "ota" }); // nobody answers: proceeds after 1 s
  await eventually(() => notes.length > 0, 1000, 5);
  expect(await p.call("reboot", { reason: "ota" })).toEqual(BUSY);
  expect(await p.call("shutdown", { reason: "remoteKey" })).toEqual(BUSY);
  expect(await p.call("setState", { state: "GarageModeState", reason: 1 })).toEqual(BUSY);
  expect(await p.call("acquireWakeLock", { clientId, timeout: 10 })).toEqual(BUSY);
  const other = await p.env.client();
  const late = await other.subscribe(POWER, "registerStateTransition", { state: "GarageModeState" }, () => {});
  expect(late.first).toEqual(BUSY);
  expect(await pending).toEqual({ returnValue: true });
  expect(await p.call("setState", { state: "ActiveState", reason: 2 })).toEqual({ returnValue: true });
  await sub.cancel();
});

test("2 Invalid JSON format: malformed JSON or a payload outside the schema, on every method", async () => {
  const cases: [string, Json | string][] = [
    ["reboot", "{reason"],
    ["reboot", {}],
    ["shutdown", { reason: 3 }],
    ["getPowerOnReason", {}],
    ["getState", { subscribe: "yes" }],
    ["setState", { state: "ActiveState", reason: "remoteKey" }],
    ["setState", { state: "ActiveState" }],
    ["setPowerOnReason", { reason: "" }],
    ["respondStateTransitionAck", { state: "ActiveState", ack: true }],
    ["registerStateTransition", {}],
    ["acquireWakeLock", { clientId: "x", timeout: -1 }],
    ["releaseWakeLock", {}],
    ["notifyAlarmExpiry", "[1,2]"],
    ["notifyAlarmExpiry", "not json"],
    ["registerStateTransition", { state: "ActiveState", subscribe: "yes" }],
  ];
  for (const [method, payload] of cases) expect([method, await p.call(method, payload)]).toEqual([method, INVALID]);
});

test("registerStateTransition with the spec's whole request ({state}) registers and subscribes; subscribe false changes nothing", async () => {
  const raw = await p.env.client();
  const pushes: Json[] = [];
  // A plain call: the pushes are unicast signals to this connection, read off the wire.
  const off = raw.conn.onSignal((m) => {
    if (m.member === "Push") pushes.push(JSON.parse(m.body[1] as string));
  });
  const first = await raw.call(POWER, "registerStateTransition", { state: "ActiveState" });
  expect(first).toEqual({ returnValue: true, subscribed: true, clientId: raw.uniqueName, state: "ActiveState" });
  expect(await raw.call(POWER, "registerStateTransition", { state: "GarageModeState", subscribe: false })).toEqual({
    returnValue: true,
    subscribed: true,
    clientId: raw.uniqueName,
    state: "GarageModeState",
  });
  // Registered: told when the device leaves the state.
  expect(await p.call("setState", { state: "GarageModeState", reason: 1 })).toEqual({ returnValue: true });
  expect(await p.call("setState", { state: "ActiveState", reason: 1 })).toEqual({ returnValue: true });
  await eventually(() => pushes.length === 2);
  expect(pushes).toEqual([
    { returnValue: true, state: "ActiveState", nextState: "GarageModeState", token: expect.any(String) },
    { returnValue: true, state: "GarageModeState", nextState: "ActiveState", token: expect.any(String) },
  ]);
  expect(await p.call("acquireWakeLock", { clientId: raw.uniqueName, timeout: 5 })).toEqual({ returnValue: true });
  expect(await p.call("releaseWakeLock", { clientId: raw.uniqueName })).toEqual({ returnValue: true });
  // The registrations last as long as the client's connection.
  const clientId = raw.uniqueName;
  off();
  raw.close();
  await eventually(async () => (await p.call("acquireWakeLock", { clientId, timeout: 5 })).errorCode === 3);
  expect(p.env.rt!.server.stats()).toMatchObject({ leases: 0 });
});

test("3 errorClientNotRegistered: votes and wake locks from clients not registered", async () => {
  expect(await p.call("respondStateTransitionAck", { state: "ActiveState", ack: true, token: "x" })).toEqual(NOT_REGISTERED);
  const sub = await p.client.subscribe(POWER, "registerStateTransition", { state: "GarageModeState" }, () => {});
  // Registered, but for another state.
  expect(await p.call("respondStateTransitionAck", { state: "ActiveState", ack: true, token: "x" })).toEqual(NOT_REGISTERED);
  expect(await p.call("acquireWakeLock", { clientId: ":1.12345", timeout: 5 })).toEqual(NOT_REGISTERED);
  expect(await p.call("releaseWakeLock", { clientId: ":1.12345" })).toEqual(NOT_REGISTERED);
  await sub.cancel();
  // The registration ended with its subscription.
  expect(await p.call("acquireWakeLock", { clientId: sub.first.clientId, timeout: 5 })).toEqual(NOT_REGISTERED);
});

test("4 errorCleintAlreadyRegistered: the same client registers for the same state twice", async () => {
  const first = await p.client.subscribe(POWER, "registerStateTransition", { state: "ActiveState" }, () => {});
  expect(first.first).toEqual({ returnValue: true, subscribed: true, clientId: p.client.uniqueName, state: "ActiveState" });
  const second = await p.client.subscribe(POWER, "registerStateTransition", { state: "ActiveState" }, () => {});
  expect(second.first).toEqual(ALREADY);
  // Another state is fine.
  const third = await p.client.subscribe(POWER, "registerStateTransition", { state: "GarageModeState" }, () => {});
  expect(third.first.returnValue).toBe(true);
  await first.cancel();
  await third.cancel();
  // Cancelled: registering again works.
  const again = await p.client.subscribe(POWER, "registerStateTransition", { state: "ActiveState" }, () => {});
  expect(again.first.returnValue).toBe(true);
  await again.cancel();
});

test("5 errorResponseTooLate: an answer with no vote open, with another token, or a second answer", async () => {
  const notes: Json[] = [];
  const sub = await p.client.subscribe(POWER, "registerStateTransition", { state: "ActiveState" }, (m) => notes.push(m));
  expect(await p.call("respondStateTransitionAck", { state: "ActiveState", ack: true, token: "none" })).toEqual(TOO_LATE);
  const voter = await p.registered("ActiveState", "silent");
  const pending = p.call("reboot", { reason: "ota" });
  await eventually(() => notes.length > 0, 1000, 5);
  const token = notes[0]!.token as string;
  expect(await p.call("respondStateTransitionAck", { state: "ActiveState", ack: true, token: token + "x" })).toEqual(TOO_LATE);
  expect(await p.call("respondStateTransitionAck", { state: "ActiveState", ack: true, token })).toEqual({ returnValue: true });
  expect(await p.call("respondStateTransitionAck", { state: "ActiveState", ack: false, token })).toEqual(TOO_LATE);
  expect(await pending).toEqual({ returnValue: true }); // the silent voter timed out
  expect(await p.call("respondStateTransitionAck", { state: "ActiveState", ack: true, token })).toEqual(TOO_LATE);
  await p.call("setState", { state: "ActiveState", reason: 2 });
  await voter.proc.kill();
  await sub.cancel();
});

test("6 errorTimerNotRunning: releasing or expiring a wake lock that is not held", async () => {
  const sub = await p.client.subscribe(POWER, "registerStateTransition", { state: "ActiveState" }, () => {});
  const clientId = sub.first.clientId as string;
  expect(await p.call("releaseWakeLock", { clientId })).toEqual(NO_TIMER);
  expect(await p.call("notifyAlarmExpiry", { clientId })).toEqual(NO_TIMER);
  await sub.cancel();
});

test("7 errorUnknown: states the board does not have, and transitions it does not define", async () => {
  expect(await p.call("setState", { state: "NoSuchState", reason: 1 })).toEqual(UNKNOWN);
  const sub = await p.client.subscribe(POWER, "registerStateTransition", { state: "NoSuchState" }, () => {});
  expect(sub.first).toEqual(UNKNOWN);
  // PowerOffState has no way out but setState.
  expect(await p.call("setState", { state: "PowerOffState", reason: 2 })).toEqual({ returnValue: true });
  await p.logind.waitFor("PowerOff false");
  expect(await p.call("reboot", { reason: "ota" })).toEqual(UNKNOWN);
  expect(await p.call("shutdown", { reason: "remoteKey" })).toEqual(UNKNOWN);
  expect(await p.call("setState", { state: "ActiveState", reason: 2 })).toEqual({ returnValue: true });
});

test("7 errorUnknown: the system refuses the action; the device stays where it was", async () => {
  const q = await powerEnv({ logindEnv: { FAKE_LOGIND_FAIL: "Reboot" } });
  try {
    expect(await q.call("reboot", { reason: "ota" })).toEqual(UNKNOWN);
    await q.logind.waitFor("Reboot false");
    expect(await q.call("getState")).toEqual({ returnValue: true, state: "ActiveState", subscribed: false });
    expect(await q.call("setState", { state: "RebootState", reason: 2 })).toEqual(UNKNOWN);
    expect(await q.call("getState")).toEqual({ returnValue: true, state: "ActiveState", subscribed: false });
  } finally {
    await q.stop();
  }
});
