// Wake locks: they hold every state change, take logind's inhibitor while any
// exists, expire, and belong to the registered client they were acquired for (not
// to the connection that called): they die with that client's connection.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { eventually, spawnScript, staysTrue } from "../helpers/harness";
import { powerEnv, POWER, type PowerEnv } from "./setup";

let p: PowerEnv;
const BUSY = { returnValue: false, errorCode: 1, errorText: "errorPower2Busy" };
/** Inhibitors taken (one per kind each time: shutdown, sleep, idle): counted by the shutdown one. */
const inhibits = () => p.logind.lines.filter((l) => l.startsWith("Inhibit shutdown ")).length;
/** Inhibitors released, counted by the shutdown one (all three go together). */
const releases = () => p.logind.lines.filter((l) => l === "INHIBITOR RELEASED shutdown").length;

beforeAll(async () => {
  p = await powerEnv();
});
afterAll(() => p.stop());

async function register(state = "ActiveState") {
  const sub = await p.client.subscribe(POWER, "registerStateTransition", { state }, () => {});
  return { clientId: sub.first.clientId as string, cancel: () => sub.cancel() };
}

test("a held lock blocks every state change; its holder's SIGKILL releases it and logind's inhibitor", async () => {
  const holder = await p.registered("ActiveState", "", 600);
  expect(JSON.parse(holder.proc.lines.find((l) => l.startsWith("LOCKED"))!.slice(7))).toEqual({ returnValue: true });
  // one inhibitor per kind (logind authorizes a combined one as the lid switch's)
  for (const what of ["shutdown", "sleep", "idle"]) await p.logind.waitFor(`Inhibit ${what} devservices power2 block`);
  expect(await p.call("reboot", { reason: "ota" })).toEqual(BUSY);
  expect(await p.call("shutdown", { reason: "remoteKey" })).toEqual(BUSY);
  expect(await p.call("setState", { state: "PowerOffState", reason: 2 })).toEqual(BUSY);
  expect(p.logind.lines.some((l) => l.startsWith("Reboot") || l.startsWith("PowerOff"))).toBe(false);
  expect(releases()).toBe(0);

  await holder.proc.kill("SIGKILL");
  await p.logind.waitFor("INHIBITOR RELEASED");
  // The lock went with its holder: the reboot runs at once (nobody is registered any more).
  await eventually(async () => (await p.call("reboot", { reason: "ota" })).returnValue === true);
  await p.logind.waitFor("Reboot false");
  expect(await p.call("setState", { state: "ActiveState", reason: 2 })).toEqual({ returnValue: true });
});

test("a one-shot caller (devservices call) acquires a lock for a registered client: the lock outlives the caller, not the client", async () => {
  // docs/services/power.md, as printed: a registered client kept open with -i, then one-shot calls.
  const cli = (...args: string[]) => spawnScript("src/main.ts", ["call", "--bus", p.env.bus.address, ...args]);
  const oneShot = async (method: string, payload: object) => {
    const c = cli(`com.vendor.service.power2/${method}`, JSON.stringify(payload));
    const line = await c.waitFor("{");
    expect(await c.proc.exited).toBe(0); // its connection is closed
    return JSON.parse(line);
  };
  const registrant = cli("-i", "com.vendor.service.power2/registerStateTransition", '{"state":"ActiveState","subscribe":true}');
  const first = JSON.parse(await registrant.waitFor("clientId"));
  expect(first).toEqual({ returnValue: true, subscribed: true, clientId: expect.stringMatching(/^:1\./), state: "ActiveState" });
  const clientId = first.clientId as string;
  const before = inhibits();
  const released = releases();

  expect(await oneShot("acquireWakeLock", { clientId, timeout: 600 })).toEqual({ returnValue: true });
  await eventually(() => inhibits() === before + 1);
  // The caller is gone; the lock is the client's and still holds.
  await staysTrue(() => releases() === released && inhibits() === before + 1, 100, "the lock outlives the one-shot caller");
  expect(await p.call("reboot", { reason: "ota" })).toEqual(BUSY);
  expect(await p.call("setState", { state: "GarageModeState", reason: 1 })).toEqual(BUSY);
  expect(releases()).toBe(released);
  expect(p.env.rt!.server.stats().leases).toBe(1);
  // Another one-shot caller may release it, as the spec's releaseWakeLock says.
  expect(await oneShot("releaseWakeLock", { clientId })).toEqual({ returnValue: true });
  await eventually(() => releases() === released + 1);
  expect(await oneShot("acquireWakeLock", { clientId, timeout: 600 })).toEqual({ returnValue: true });
  await eventually(() => inhibits() === before + 2);
  expect(await p.call("shutdown", { reason: "remoteKey" })).toEqual(BUSY);

  // The registered client's SIGKILL releases the lock and logind's inhibitor.
  await registrant.kill("SIGKILL");
  await eventually(() => releases() === released + 2);
  await eventually(() => p.env.rt!.server.stats().leases === 0);
  expect(await p.call("setState", { state: "GarageModeState", reason: 1 })).toEqual({ returnValue: true });
  expect(await p.call("setState", { state: "ActiveState", reason: 1 })).toEqual({ returnValue: true });
  expect(await p.call("acquireWakeLock", { clientId, timeout: 600 })).toEqual({ returnValue: false, errorCode: 3, errorText: "errorClientNotRegistered" });
});

test("a lock expires after its timeout and the inhibitor goes with it", async () => {
  const { clientId, cancel } = await register();
  const before = inhibits();
  expect(await p.call("acquireWakeLock", { clientId, timeout: 0.3 })).toEqual({ returnValue: true });
  await eventually(() => inhibits() === before + 1);
  expect(await p.call("setState", { state: "GarageModeState", reason: 1 })).toEqual(BUSY);
  const released = releases();
  await eventually(async () => (await p.call("setState", { state: "GarageModeState", reason: 1 })).returnValue === true, 2000);
  await eventually(() => releases() === released + 1);
  expect(await p.call("setState", { state: "ActiveState", reason: 1 })).toEqual({ returnValue: true });
  // Nothing to release any more.
  expect(await p.call("releaseWakeLock", { clientId })).toEqual({ returnValue: false, errorCode: 6, errorText: "errorTimerNotRunning" });
  await cancel();
});

test("releaseWakeLock and notifyAlarmExpiry release; a second time the timer is not running", async () => {
  const { clientId, cancel } = await register();
  expect(await p.call("acquireWakeLock", { clientId, timeout: 60 })).toEqual({ returnValue: true });
  // Acquiring again renews the same lock: one inhibitor, one release.
  expect(await p.call("acquireWakeLock", { clientId, timeout: 60 })).toEqual({ returnValue: true });
  const released = releases();
  expect(await p.call("releaseWakeLock", { clientId })).toEqual({ returnValue: true });
  await eventually(() => releases() === released + 1);
  expect(await p.call("releaseWakeLock", { clientId })).toEqual({ returnValue: false, errorCode: 6, errorText: "errorTimerNotRunning" });

  expect(await p.call("acquireWakeLock", { clientId, timeout: 60 })).toEqual({ returnValue: true });
  expect(await p.call("notifyAlarmExpiry", { clientId })).toEqual({ returnValue: true, clientId });
  expect(await p.call("notifyAlarmExpiry", { clientId })).toEqual({ returnValue: false, errorCode: 6, errorText: "errorTimerNotRunning" });
  await eventually(() => releases() === released + 2);
  await cancel();
});

test("two locks: the inhibitor is held until the last one goes", async () => {
  const one = await register();
  const two = await register("GarageModeState");
  const before = inhibits();
  const released = releases();
  await p.call("acquireWakeLock", { clientId: one.clientId, timeout: 60 });
  // Same connection: one clientId, registered for two states.
  expect(two.clientId).toBe(one.clientId);
  const other = await p.registered("GarageModeState", "");
  await p.call("acquireWakeLock", { clientId: other.clientId, timeout: 60 });
  await eventually(() => inhibits() === before + 1);
  await staysTrue(() => inhibits() === before + 1, 50, "one inhibitor for both clients' locks");
  await p.call("releaseWakeLock", { clientId: one.clientId });
  expect(await p.call("reboot", { reason: "ota" })).toEqual(BUSY);
  await staysTrue(() => releases() === released, 50, "the inhibitor stays while another lock holds");
  await p.call("releaseWakeLock", { clientId: other.clientId });
  await eventually(() => releases() === released + 1);
  await other.proc.kill();
  await one.cancel();
  await two.cancel();
});

test("wake lock requests from unregistered clients and with bad timeouts", async () => {
  const notRegistered = { returnValue: false, errorCode: 3, errorText: "errorClientNotRegistered" };
  expect(await p.call("acquireWakeLock", { clientId: ":1.9999", timeout: 10 })).toEqual(notRegistered);
  expect(await p.call("releaseWakeLock", { clientId: ":1.9999" })).toEqual(notRegistered);
  expect(await p.call("notifyAlarmExpiry", { clientId: ":1.9999" })).toEqual(notRegistered);
  const invalid = { returnValue: false, errorCode: 2, errorText: "Invalid JSON format" };
  const { clientId, cancel } = await register();
  expect(await p.call("acquireWakeLock", { clientId, timeout: 0 })).toEqual(invalid);
  expect(await p.call("acquireWakeLock", { clientId, timeout: 86400 })).toEqual(invalid);
  expect(await p.call("acquireWakeLock", { clientId })).toEqual(invalid);
  expect(await p.call("notifyAlarmExpiry", "{clientId")).toEqual(invalid);
  expect(await p.call("notifyAlarmExpiry", {})).toEqual(invalid);
  await cancel();
});
