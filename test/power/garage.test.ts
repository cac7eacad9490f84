// The garage variant of shutdown (a board-recipe option): from its source state,
// with a wireless interface up and GarageNetworkName in power.conf, shutdown
// enters the garage state instead of powering off.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually } from "../helpers/harness";
import { powerEnv, POWER, type PowerEnv } from "./setup";
import type { Json } from "../../src/core/errors";

let p: PowerEnv;
let net: string;
const powerOffs = () => p.logind.lines.filter((l) => l === "PowerOff false").length;
const setOperstate = (s: string) => writeFileSync(join(net, "wlan0", "operstate"), s + "\n");

beforeAll(async () => {
  // A fake sysfs: eth0 (wired) and wlan0 (wireless), both up.
  net = mkdtempSync(join(tmpdir(), "power-garage-net-"));
  mkdirSync(join(net, "eth0"), { recursive: true });
  writeFileSync(join(net, "eth0", "operstate"), "up\n");
  mkdirSync(join(net, "wlan0", "wireless"), { recursive: true });
  setOperstate("up");
  p = await powerEnv({
    conf: "# garage variant\nTransitionTimeout=00:00:01\nGarageNetworkName=HomeNet\n",
    config: { netSysfs: net },
  });
});
afterAll(async () => {
  await p?.stop();
  if (net) rmSync(net, { recursive: true, force: true });
});

test("wireless up and a network name configured: shutdown enters GarageModeState, registered clients are told but not asked", async () => {
  const notes: Json[] = [];
  const reg = await p.client.subscribe(POWER, "registerStateTransition", { state: "ActiveState" }, (m) => notes.push(m));
  const t0 = performance.now();
  expect(await p.call("shutdown", { reason: "remoteKey" })).toEqual({ returnValue: true });
  expect(performance.now() - t0).toBeLessThan(500); // no vote, no timeout
  expect(await p.call("getState")).toMatchObject({ state: "GarageModeState" });
  expect(powerOffs()).toBe(0);
  expect(notes).toEqual([{ returnValue: true, state: "ActiveState", nextState: "GarageModeState", token: expect.any(String) }]);
  // Nobody was asked: an answer is too late.
  expect(await p.call("respondStateTransitionAck", { state: "ActiveState", ack: false, token: notes[0]!.token as string })).toEqual({
    returnValue: false,
    errorCode: 5,
    errorText: "errorResponseTooLate",
  });
  await reg.cancel();
});

test("shutdown from the garage state powers off", async () => {
  expect(await p.call("shutdown", { reason: "offTimer" })).toEqual({ returnValue: true });
  await p.logind.waitFor("PowerOff false");
  expect(await p.call("getState")).toMatchObject({ state: "PowerOffState" });
  expect(await p.call("setState", { state: "ActiveState", reason: 2 })).toEqual({ returnValue: true });
});

test("wireless down: shutdown from the active state powers off as usual", async () => {
  setOperstate("down");
  const before = powerOffs();
  expect(await p.call("shutdown", { reason: "remoteKey" })).toEqual({ returnValue: true });
  await eventually(() => powerOffs() === before + 1);
  expect(await p.call("getState")).toMatchObject({ state: "PowerOffState" });
  expect(await p.call("setState", { state: "ActiveState", reason: 2 })).toEqual({ returnValue: true });
  setOperstate("up");
});

test("no network name configured: no garage even with wireless up", async () => {
  const q = await powerEnv({ conf: "TransitionTimeout=00:00:01\n", config: { netSysfs: net } });
  try {
    expect(await q.call("shutdown", { reason: "remoteKey" })).toEqual({ returnValue: true });
    await q.logind.waitFor("PowerOff false");
    expect(await q.call("getState")).toMatchObject({ state: "PowerOffState" });
  } finally {
    await q.stop();
  }
});
