// Two registered clients in separate processes vote on reboots; the fake logind
// records what reaches the system. Transition timeout: 1 s (power.conf).
import { test, expect, beforeAll, afterAll } from "bun:test";
import { eventually } from "../helpers/harness";
import { powerEnv, POWER, type PowerEnv } from "./setup";

let p: PowerEnv;
let a: Awaited<ReturnType<PowerEnv["registered"]>>;
let b: Awaited<ReturnType<PowerEnv["registered"]>>;
const watcherMessages: unknown[] = [];

const reboots = () => p.logind.lines.filter((l) => l === "Reboot false").length;
const linesOf = (proc: typeof a.proc, prefix: string) =>
  proc.lines.filter((l) => l.startsWith(prefix + " ")).map((l) => JSON.parse(l.slice(prefix.length + 1)));

beforeAll(async () => {
  p = await powerEnv();
  // The n-th notification of each client is answered as its list says.
  [a, b] = await Promise.all([p.registered("ActiveState", "ack,ack,silent,ack"), p.registered("ActiveState", "ack,nack,silent,late:1500")]);
  // Registered for another state: must not hear about leaving ActiveState.
  const sub = await p.client.subscribe(POWER, "registerStateTransition", { state: "ShutdownTransitionState" }, (m) => watcherMessages.push(m));
  expect(sub.first).toMatchObject({ returnValue: true, subscribed: true, state: "ShutdownTransitionState" });
});
afterAll(() => p.stop());

async function backToActive() {
  expect(await p.call("getState")).toEqual({ returnValue: true, state: "RebootState", subscribed: false });
  expect(await p.call("setState", { state: "ActiveState", reason: 2 })).toEqual({ returnValue: true });
}

test("all clients ack: the fake logind receives Reboot", async () => {
  expect(a.clientId).not.toBe(b.clientId);
  const r = await p.call("reboot", { reason: "ota" });
  expect(r).toEqual({ returnValue: true });
  await eventually(() => reboots() === 1);
  for (const c of [a, b]) {
    await eventually(() => linesOf(c.proc, "ANSWERED").length === 1);
    const [n] = linesOf(c.proc, "NOTIFIED");
    expect(n).toEqual({ returnValue: true, state: "ActiveState", nextState: "RebootTransitionState", token: expect.any(String) });
    expect(linesOf(c.proc, "ANSWERED")[0]).toEqual({ returnValue: true });
  }
  expect(linesOf(a.proc, "NOTIFIED")[0].token).toBe(linesOf(b.proc, "NOTIFIED")[0].token);
  expect(watcherMessages).toEqual([]);
  await backToActive();
});

test("one client nacks: no reboot, the caller gets errorPower2Busy, the state stays", async () => {
  const r = await p.call("reboot", { reason: "ota" });
  expect(r).toEqual({ returnValue: false, errorCode: 1, errorText: "errorPower2Busy" });
  await eventually(() => linesOf(b.proc, "ANSWERED").length === 2);
  expect(linesOf(b.proc, "ANSWERED")[1]).toEqual({ returnValue: true });
  expect(reboots()).toBe(1);
  expect(await p.call("getState")).toEqual({ returnValue: true, state: "ActiveState", subscribed: false });
});

test("silence: the reboot proceeds after the configured timeout", async () => {
  const t0 = performance.now();
  expect(await p.call("reboot", { reason: "ota" })).toEqual({ returnValue: true });
  const ms = performance.now() - t0;
  expect(ms).toBeGreaterThanOrEqual(950);
  expect(ms).toBeLessThan(3000);
  await eventually(() => reboots() === 2);
  await eventually(() => linesOf(a.proc, "NOTIFIED").length === 3 && linesOf(b.proc, "NOTIFIED").length === 3);
  expect(linesOf(a.proc, "ANSWERED").length).toBe(2); // silent the third time
  await backToActive();
});

test("a late answer gets errorResponseTooLate; the reboot has proceeded", async () => {
  expect(await p.call("reboot", { reason: "ota" })).toEqual({ returnValue: true });
  await eventually(() => reboots() === 3);
  await eventually(() => linesOf(b.proc, "ANSWERED").length === 3, 3000);
  expect(linesOf(b.proc, "ANSWERED")[2]).toEqual({ returnValue: false, errorCode: 5, errorText: "errorResponseTooLate" });
  expect(linesOf(a.proc, "ANSWERED")[2]).toEqual({ returnValue: true });
  await backToActive();
});
