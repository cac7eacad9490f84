// The typed client (src/clients, docs/clients.md) against services on a private bus:
// one-shot calls, method paths as nested properties, failures as ServiceError,
// subscriptions as async iterators that cancel on break, the bus chosen as system,
// session or an address, the appId option, and nothing left behind after 100
// subscribe/break cycles (counted on the daemon and in the services).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, ServiceError, SubscriptionLost, SERVICE_APIS, type ServiceClient } from "../../src/clients";
import { busNameFor } from "../../src/clients/services";
import { SERVICES } from "../../src/services";
import { E as POWER_E } from "../../src/services/power/errors";
import { E as PM_E } from "../../src/services/peripheralmanager/errors";
import { E as CAMERA_E } from "../../src/services/camera/errors";
import { eventually, testEnv, type Env } from "../helpers/harness";

let env: Env;
let power: ServiceClient<"power2">;
beforeAll(async () => {
  env = await testEnv();
  await env.start(["power2", "peripheralmanager", "testautomation", "camera2"], {
    serviceConfig: { camera2: { windows: ["window0"], appIds: ["com.example.allowed"] } },
  } as any);
  power = await connect("power2", { bus: env.bus.address });
}, 30000);
afterAll(async () => {
  await power?.$close();
  await env?.stop();
});

const serverStats = () => env.rt!.server.stats();

/** The daemon's count of a connection's match rules (org.freedesktop.DBus.Debug.Stats). */
async function matchRules(name: string): Promise<{ now: number; peak: number }> {
  const r = await power.$connection.callRaw({
    destination: "org.freedesktop.DBus",
    path: "/org/freedesktop/DBus",
    interface: "org.freedesktop.DBus.Debug.Stats",
    member: "GetConnectionStats",
    signature: "s",
    body: [name],
  });
  const stats = r.body[0] as Record<string, { value: unknown }>;
  return { now: Number(stats.MatchRules!.value), peak: Number(stats.PeakMatchRules!.value) };
}

test("the client's tables are the services' own: the same api objects and bus names", () => {
  for (const [name, entry] of Object.entries(SERVICE_APIS)) {
    expect(SERVICES[name]!.spec.api).toBe(entry.api);
    expect(SERVICES[name]!.spec.busName).toBe(entry.busName);
  }
  expect(Object.keys(SERVICE_APIS).sort()).toEqual(Object.keys(SERVICES).sort());
  expect(busNameFor("record", "main")).toBe("com.vendor.pipeline.record.main");
  expect(() => busNameFor("record")).toThrow(/instance/);
  expect(() => busNameFor("record", "a.b")).toThrow(/instance ID/);
  expect(() => busNameFor("power2", "x")).toThrow(/no instances/);
});

test("a one-shot call answers the success response; a failure is a ServiceError with the spec's code and text", async () => {
  expect(await power.getState({})).toEqual({ returnValue: true, state: "ActiveState", subscribed: false });
  const e = await power.releaseWakeLock({ clientId: "nobody-registered" }).catch((x) => x);
  expect(e).toBeInstanceOf(ServiceError);
  expect({ code: e.errorCode, text: e.errorText }).toEqual(POWER_E.notRegistered);
  expect(e.method).toBe("releaseWakeLock");
  // A request its schema refuses: the service's schema error, thrown the same way.
  const bad = await power.setState({ state: "ActiveState", reason: "soon" as any }).catch((x) => x);
  expect(bad).toBeInstanceOf(ServiceError);
  expect({ code: bad.errorCode, text: bad.errorText }).toEqual(POWER_E.invalidJson);
});

test("method paths are nested properties: peripheralmanager gpio/open is pm.gpio.open", async () => {
  const pm = await connect("peripheralmanager", { bus: env.bus.address });
  try {
    expect(await pm.gpio.open({ pin: "gpio4" })).toEqual({ returnValue: true });
    expect(await pm.gpio.setDirection({ pin: "gpio4", direction: "outHigh" })).toEqual({ returnValue: true });
    expect(await pm.gpio.getValue({ pin: "gpio4" })).toMatchObject({ returnValue: true, value: "high" });
    const e = await pm.gpio.open({ pin: "gpio999" }).catch((x) => x);
    expect(e).toBeInstanceOf(ServiceError);
    expect({ code: e.errorCode, text: e.errorText }).toEqual(PM_E.unknownPin);
    expect(await pm.gpio.close({ pin: "gpio4" })).toEqual({ returnValue: true });
  } finally {
    await pm.$close();
  }
});

test("a subscription is an async iterator: the first response, then the service's messages; break sends Cancel", async () => {
  expect(serverStats().subscriptions).toBe(0);
  const seen: unknown[] = [];
  const other = await connect("power2", { bus: env.bus.address });
  for await (const m of power.getState.subscribe({})) {
    seen.push(m);
    if (seen.length === 1) {
      expect(serverStats().subscriptions).toBe(1);
      await other.setState({ state: "GarageModeState", reason: 1 });
    } else break;
  }
  expect(seen).toEqual([{ returnValue: true, state: "ActiveState", subscribed: true }, { returnValue: true, state: "GarageModeState" }]);
  // The service saw the Cancel (this connection is still open).
  expect(serverStats().subscriptions).toBe(0);
  await other.setState({ state: "ActiveState", reason: 1 });
  await other.$close();
});

test("a subscription whose first answer is a failure throws the ServiceError from the loop and from first", async () => {
  const ta = await connect("testautomation", { bus: env.bus.address });
  const failing = ta.subscribeToCommands.subscribe({ appInfo: { id: 5 } } as any);
  const e = await (async () => {
    for await (const _ of failing) return "no error";
  })().catch((x) => x);
  expect(e).toBeInstanceOf(ServiceError);
  expect(typeof e.errorCode).toBe("number");
  await expect(failing.first).rejects.toBeInstanceOf(ServiceError);
  await ta.$close();
  expect(serverStats().subscriptions).toBe(0);
});

test("a subscription whose loop does not read past maxBuffered messages is cancelled and throws SubscriptionLost 'overflow'", async () => {
  const slow = await connect("power2", { bus: env.bus.address, maxBuffered: 3 });
  const sub = slow.getState.subscribe({});
  await sub.first;
  for (const state of ["GarageModeState", "ActiveState", "GarageModeState", "ActiveState"]) await power.setState({ state, reason: 1 });
  await eventually(() => serverStats().subscriptions === 0);
  const seen: unknown[] = [];
  const e = await (async () => {
    for await (const m of sub) seen.push(m);
  })().catch((x) => x);
  expect(e).toBeInstanceOf(SubscriptionLost);
  expect(e.reason).toBe("overflow");
  expect(seen.length).toBe(3);
  await slow.$close();
});

test("100 subscribe/break cycles leave no subscription in the service and no match rule on the daemon", async () => {
  const client0 = await matchRules(power.$uniqueName);
  const server0 = await matchRules(env.rt!.server.uniqueName);
  for (let i = 0; i < 100; i++) {
    let n = 0;
    for await (const m of power.getState.subscribe({})) {
      expect(m.state).toBe("ActiveState");
      if (++n === 1) break;
    }
    // A one-shot call of a method that always subscribes takes its answer and cancels.
    if (i % 10 === 0) expect(await power.registerStateTransition({ state: "ActiveState" })).toMatchObject({ returnValue: true, subscribed: true });
  }
  expect(serverStats()).toMatchObject({ subscriptions: 0, leases: 0 });
  const client1 = await matchRules(power.$uniqueName);
  const server1 = await matchRules(env.rt!.server.uniqueName);
  expect(client1.now).toBe(client0.now);
  // At most the rules of one open subscription at a time (its service's, and its shared topic's: getState), never one per cycle.
  expect(client1.peak).toBeLessThanOrEqual(client0.now + 2);
  expect(server1.now).toBe(server0.now);
}, 30000);

describe("the bus", () => {
  const saved = { ...process.env };
  afterAll(() => {
    for (const k of ["DBUS_SYSTEM_BUS_ADDRESS", "DBUS_SESSION_BUS_ADDRESS", "DEVSERVICES_BUS"]) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });

  test("system (by name and by default) is $DBUS_SYSTEM_BUS_ADDRESS when set, as in libdbus; session is $DBUS_SESSION_BUS_ADDRESS", async () => {
    process.env.DBUS_SYSTEM_BUS_ADDRESS = env.bus.address;
    delete process.env.DEVSERVICES_BUS;
    for (const bus of ["system", undefined]) {
      const p = await connect("power2", bus ? { bus } : {});
      expect((await p.getState({})).state).toBe("ActiveState");
      await p.$close();
    }
    delete process.env.DBUS_SESSION_BUS_ADDRESS;
    await expect(connect("power2", { bus: "session" })).rejects.toThrow(/DBUS_SESSION_BUS_ADDRESS/);
    process.env.DBUS_SESSION_BUS_ADDRESS = env.bus.address;
    const s = await connect("power2", { bus: "session" });
    expect((await s.getState({})).state).toBe("ActiveState");
    await s.$close();
  });

  test("several services share one connection", async () => {
    const pm = await connect("peripheralmanager", { connection: power.$connection });
    expect(pm.$uniqueName).toBe(power.$uniqueName);
    expect((await pm.gpio.list({})).gpioList.length).toBeGreaterThan(0);
    await pm.$close();
    expect((await power.getState({})).state).toBe("ActiveState"); // still open
  });
});

test("appId: the payload's top-level appId in every call (docs/bus.md), read by camera2 open against its appIds; another appId in a request is refused", async () => {
  const listed = await connect("camera2", { bus: env.bus.address, appId: "com.example.allowed" });
  const unlisted = await connect("camera2", { bus: env.bus.address, appId: "com.example.other" });
  const none = await connect("camera2", { bus: env.bus.address });
  try {
    const e = await unlisted.open({ id: "camera1" }).catch((x) => x);
    expect(e).toBeInstanceOf(ServiceError);
    expect({ code: e.errorCode, text: e.errorText }).toEqual(CAMERA_E.cannotOpen);
    // A request naming another app than the client's: which one was meant? Refused before it is sent.
    await expect(unlisted.open({ id: "camera1", appId: "com.example.allowed" })).rejects.toThrow(TypeError);
    expect((await unlisted.open({ id: "camera1", appId: "com.example.other" }).catch((x) => x)).errorCode).toBe(CAMERA_E.cannotOpen.code);
    const h1 = await listed.open({ id: "camera1" });
    await listed.close({ handle: h1.handle });
    const h2 = await none.open({ id: "camera1" });
    await none.close({ handle: h2.handle });
    // Methods that do not read an appId ignore it.
    expect((await listed.getCameraList({})).deviceList.length).toBeGreaterThan(0);
  } finally {
    for (const c of [listed, unlisted, none]) await c.$close();
  }
});
