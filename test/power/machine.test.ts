// The board's power state machine, the power configuration file, and the choice
// of backend. No test here (or anywhere) calls the reboot system call.
import { test, expect, afterAll } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { PowerMachine } from "../../src/services/power/machine";
import { parseHms, parsePowerConfig, loadPowerConfig, DEFAULT_TRANSITION_TIMEOUT_S } from "../../src/services/power/config";
import { openBackend } from "../../src/services/power/backend";
import { wirelessUp } from "../../src/services/power/backend/net";
import { loadBoard } from "../../src/core/board";
import { logger } from "../../src/core/log";
import { testEnv, spawnScript, type Env } from "../helpers/harness";

const virtual = (loadBoard("virtual") as any).power2;
const envs: Env[] = [];
afterAll(async () => {
  for (const e of envs) await e.stop();
});

test("the virtual board's machine: an active state, power-off and reboot paths through transition states that ask", () => {
  const m = PowerMachine.parse(virtual);
  expect(m.initialState).toBe("ActiveState");
  expect(m.on("ActiveState", "shutdown")).toEqual({ from: "ActiveState", event: "shutdown", to: "ShutdownTransitionState", ask: true });
  expect(m.automatic("ShutdownTransitionState")).toMatchObject({ to: "PowerOffState", ask: true });
  expect(m.action("PowerOffState")).toBe("powerOff");
  expect(m.on("ActiveState", "reboot")).toMatchObject({ to: "RebootTransitionState", ask: true });
  expect(m.automatic("RebootTransitionState")).toMatchObject({ to: "RebootState", ask: true });
  expect(m.action("RebootState")).toBe("reboot");
  expect(m.on("PowerOffState", "reboot")).toBeUndefined();
  expect(m.garageFrom("ActiveState")).toEqual({ from: "ActiveState", to: "GarageModeState", ask: false, event: "shutdown" });
  expect(m.garageFrom("GarageModeState")).toBeUndefined();
});

test("machines with mistakes are refused with every problem named", () => {
  const bad = {
    initialState: "On",
    states: { A: { action: "reboot" }, B: {}, C: {} },
    transitions: [
      { from: "A", to: "B" },
      { from: "B", event: "shutdown", to: "Nowhere" },
      { from: "B", event: "shutdown", to: "C" },
      { from: "B", to: "C" },
      { from: "C", to: "B" },
    ],
  };
  let message = "";
  try {
    PowerMachine.parse(bad, "test recipe");
  } catch (e) {
    message = (e as Error).message;
  }
  expect(message).toContain("initialState names unknown state On");
  expect(message).toContain("transitions[1].to names unknown state Nowhere");
  expect(message).toContain("a second shutdown transition from B");
  expect(message).toContain("A has an action and cannot continue automatically");
  expect(message).toContain("automatic transitions loop");
  expect(() => PowerMachine.parse({ initialState: "A", states: { A: {} }, transitions: [{ from: "A", event: "suspend", to: "A" }] })).toThrow(/power2 state machine is invalid/);
  expect(() => PowerMachine.parse(undefined)).toThrow(/power2 state machine is invalid/);
});

test("a board whose machine is invalid: the service does not start", async () => {
  const env = await testEnv();
  envs.push(env);
  await expect(env.start(["power2"], { power2: { initialState: "X", states: {}, transitions: [] } } as any)).rejects.toThrow(/unknown state X/);
});

test("power.conf: HH:MM:SS timeout, garage network name, defaults and problems", () => {
  expect(parseHms("00:15:00")).toBe(900);
  expect(parseHms("01:00:05")).toBe(3605);
  expect(parseHms("0:0:5")).toBeUndefined();
  expect(parseHms("00:61:00")).toBeUndefined();
  expect(parseHms("15m")).toBeUndefined();
  expect(parsePowerConfig("")).toEqual({ config: { transitionTimeoutS: DEFAULT_TRANSITION_TIMEOUT_S, garageNetworkName: "" }, problems: [] });
  expect(DEFAULT_TRANSITION_TIMEOUT_S).toBe(15 * 60);
  const r = parsePowerConfig("[power2]\n# comment\nTransitionTimeout = 00:00:30\nGarageNetworkName=Home Net\n");
  expect(r).toEqual({ config: { transitionTimeoutS: 30, garageNetworkName: "Home Net" }, problems: [] });
  const bad = parsePowerConfig("TransitionTimeout=15\nColour=blue\njunk\n");
  expect(bad.config.transitionTimeoutS).toBe(900);
  expect(bad.problems).toEqual([
    "line 1: TransitionTimeout must be HH:MM:SS, got '15'",
    "line 2: unknown option Colour",
    "line 3: expected Key=Value",
  ]);
  expect(loadPowerConfig("/nonexistent/power.conf")).toMatchObject({ found: false, config: { transitionTimeoutS: 900 } });
});

test("wireless detection reads sysfs: a wireless interface that is up", async () => {
  const env = await testEnv();
  envs.push(env);
  const net = join(env.stateDir, "net");
  await Bun.$`mkdir -p ${net}/eth0 ${net}/wlan0/phy80211`;
  writeFileSync(join(net, "eth0", "operstate"), "up\n");
  writeFileSync(join(net, "wlan0", "operstate"), "dormant\n");
  expect(wirelessUp(net)).toBe(false);
  writeFileSync(join(net, "wlan0", "operstate"), "up\n");
  expect(wirelessUp(net)).toBe(true);
  expect(wirelessUp(join(net, "missing"))).toBe(false);
});

test("backend choice: virtual board, logind on the bus, no logind (the system call, not called here)", async () => {
  const env = await testEnv();
  envs.push(env);
  const client = await env.client();
  const log = logger("test");
  const base = { client, busAddress: env.bus.address, log };
  expect((await openBackend({ ...base, choice: "auto", boardBackend: "virtual" })).kind).toBe("virtual");
  expect((await openBackend({ ...base, choice: "auto", boardBackend: "linux" })).kind).toBe("syscall");
  const logind = spawnScript("test/fixtures/power-logind.ts", [], { DEVSERVICES_BUS: env.bus.address });
  try {
    await logind.waitFor("READY");
    expect((await openBackend({ ...base, choice: "auto", boardBackend: "linux" })).kind).toBe("logind");
    // logind on another bus than the service's: its own connection there.
    const other = await openBackend({ ...base, busAddress: "unix:path=/nonexistent", choice: "auto", boardBackend: "linux", logindBus: env.bus.address });
    expect(other.kind).toBe("logind");
    other.close();
    expect((await openBackend({ ...base, choice: "virtual", boardBackend: "linux" })).kind).toBe("virtual");
  } finally {
    await logind.kill();
  }
  // Unreachable logind bus: falls back without logind.
  expect((await openBackend({ ...base, choice: "auto", boardBackend: "linux", logindBus: "unix:path=/nonexistent/bus" })).kind).toBe("syscall");
  await expect(openBackend({ ...base, choice: "logind", boardBackend: "linux", logindBus: "unix:path=/nonexistent/bus" })).rejects.toThrow(/cannot reach the logind bus/);
});

test("the service on a linux board finds logind by itself (shown by its inhibitor, no power action)", async () => {
  const env = await testEnv();
  envs.push(env);
  const logind = spawnScript("test/fixtures/power-logind.ts", [], { DEVSERVICES_BUS: env.bus.address });
  try {
    await logind.waitFor("READY");
    await env.start(["power2"], { backend: "linux", serviceConfig: { power2: { configFile: "/nonexistent/power.conf" } } } as any);
    const c = await env.client();
    const sub = await c.subscribe("com.vendor.service.power2", "registerStateTransition", { state: "ActiveState" }, () => {});
    expect(await c.call("com.vendor.service.power2", "acquireWakeLock", { clientId: sub.first.clientId, timeout: 30 })).toEqual({ returnValue: true });
    await logind.waitFor("Inhibit idle devservices power2 block");
    await env.stopServices(); // stopping releases the lock and the inhibitor
    await logind.waitFor("INHIBITOR RELEASED");
  } finally {
    await logind.kill();
  }
});
