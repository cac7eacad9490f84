// The services' shared topics (docs/decisions/fanout.md, "Declared so far"): one
// change of a topic that is the same for every subscriber goes out as ONE broadcast
// signal (com.vendor.devservices.Topic), and each subscriber gets it exactly once.
// Open topics (power2 getState, camera getCameraList, media indexer getDeviceList,
// test automation subscribeToEvents) on
// a plain private bus; group-limited ones (peripheral manager gpio/list and uart/list,
// video output getStatus) on a dbus-daemon running the layer's generated policy with
// the services told it is enforced (DEVSERVICES_BUS_POLICY=layer), where a client of
// uid 65534 without the group that adds a match rule for every Topic signal gets none
// of them. The services run in this process (their connection's messages are counted
// as test/bus/fanout.test.ts does); every subscriber is a separate process.
// nettools gethostname: test/nettools/shared-topics.test.ts (its service needs a UTS
// namespace of its own).
import { test, expect, beforeAll, afterAll } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually, openBusToAll, spawnScript, startOrUndo } from "../helpers/harness";
import { testAccounts, withAccounts } from "../layer/accounts";
import { BusClient } from "../../src/bus/client";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { SUBSCRIPTION_INTERFACE, TOPIC_INTERFACE } from "../../src/bus/wire";
import type { Outgoing } from "../../src/bus/connection";
import { startRuntime, type Runtime } from "../../src/runtime";
import { loadBoard, parseBoard } from "../../src/core/board";
import { configureLogging } from "../../src/core/log";
import { SERVICES } from "../../src/services";
import { policyFile } from "../../src/policy";
import type { Json } from "../../src/core/errors";

const POWER = "com.vendor.service.power2";
const CAMERA = "com.vendor.service.camera2";
const MI = "com.vendor.service.mediaindexer";
const PM = "com.vendor.service.peripheralmanager";
const VO = "com.vendor.service.videooutput";
const TA = "com.vendor.service.testautomation";

const log = configureLogging(process.env.DEVSERVICES_LOG_LEVEL ?? "silent");

interface Hosted {
  bus: PrivateBus;
  rt: Runtime;
  control: BusClient;
  /** What the services' connection sent, in order. */
  sent: Outgoing[];
  procs: ReturnType<typeof spawnScript>[];
  dirs: string[];
  plugDir: string;
  media: string;
}

/** The services (short names) in this process, on a bus of their own; with `policy`, the layer's policy files and DEVSERVICES_BUS_POLICY=layer. */
async function host(services: string[], policy: boolean): Promise<Hosted> {
  return startOrUndo(async (onFail) => {
    const bus = policy
      ? await startPrivateBus(undefined, { policies: services.map((s) => policyFile(SERVICES[s]!).text), eavesdrop: false, prefix: withAccounts([]) })
      : await startPrivateBus();
    onFail(() => bus.stop());
    openBusToAll(bus.address);
    const stateDir = mkdtempSync(join(tmpdir(), "devservices-shared-"));
    const plugDir = mkdtempSync(join(tmpdir(), "camera-plug-"));
    const media = mkdtempSync(join(tmpdir(), "mediaindexer-media-"));
    const dirs = [stateDir, plugDir, media];
    onFail(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
    mkdirSync(join(stateDir, "mediaindexer"), { recursive: true });
    const board = parseBoard(
      {
        ...loadBoard("virtual"),
        serviceConfig: {
          camera2: { plugDir, windows: ["window0"] },
          mediaindexer: { removableRoot: null, plugins: ["storage"], rescanInterval: 0, mediaRoots: [media] },
          videooutput: { configFile: null },
          peripheralmanager: { configFile: null },
        },
      } as any,
      "test",
    );
    // The bus server reads whether the layer's policy is enforced when it connects.
    const was = process.env.DEVSERVICES_BUS_POLICY;
    if (policy) process.env.DEVSERVICES_BUS_POLICY = "layer";
    else delete process.env.DEVSERVICES_BUS_POLICY;
    let rt: Runtime;
    try {
      rt = await startRuntime({ busAddress: bus.address, board, stateDir, services, log, checkResponses: true });
    } finally {
      if (was === undefined) delete process.env.DEVSERVICES_BUS_POLICY;
      else process.env.DEVSERVICES_BUS_POLICY = was;
    }
    onFail(() => rt.stop());
    expect(rt.failed).toEqual([]);
    expect(rt.server.policyEnforced).toBe(policy);
    const sent: Outgoing[] = [];
    const send = rt.server.conn.send.bind(rt.server.conn);
    rt.server.conn.send = (m, serial, own) => {
      sent.push(m);
      return send(m, serial, own);
    };
    const control = await BusClient.connect(bus.address);
    return { bus, rt, control, sent, procs: [], dirs, plugDir, media };
  });
}

async function unhost(h: Hosted) {
  await Promise.all(h.procs.map((p) => p.kill()));
  h.control.close();
  await h.rt.stop();
  await h.bus.stop();
  for (const d of h.dirs) rmSync(d, { recursive: true, force: true });
}

const nobody = (groups: number[] = []) => ["setpriv", "--reuid=65534", "--regid=65534", groups.length ? `--groups=${groups.join(",")}` : "--clear-groups"];

/** A subscriber process (test/fixtures/bus-fanout-subscriber.ts) of uid 65534, ready when its subscriptions are open. */
async function subscriber(h: Hosted, busName: string, subs: { method: string; payload?: Json }[], groups: number[] = []) {
  const p = spawnScript(
    "test/fixtures/bus-fanout-subscriber.ts",
    [busName, JSON.stringify(subs.map((s) => ({ payload: { subscribe: true }, ...s })))],
    { DEVSERVICES_BUS: h.bus.address, HOME: "/tmp" },
    nobody(groups),
  );
  h.procs.push(p);
  await p.waitFor("ready", 20000);
  return p;
}

const lines = (p: ReturnType<typeof spawnScript>) => p.lines.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
const messages = (p: ReturnType<typeof spawnScript>, i = 0) => lines(p).filter((o) => o.sub === i && "msg" in o).map((o) => o.msg);
const firstOf = (p: ReturnType<typeof spawnScript>, i = 0) => lines(p).find((o) => o.sub === i && "first" in o)?.first;

/**
 * What the services sent from now until `done` holds (checked after `change` ran):
 * broadcasts (Topic signals) and addressed pushes.
 */
async function sentUntil(h: Hosted, change: () => unknown, done: () => boolean, timeoutMs = 10000) {
  const from = h.sent.length;
  await change();
  await eventually(done, timeoutMs);
  const out = h.sent.slice(from);
  return {
    broadcasts: out.filter((m) => m.interface === TOPIC_INTERFACE),
    pushes: out.filter((m) => m.interface === SUBSCRIPTION_INTERFACE && m.member === "Push"),
  };
}

/**
 * Two subscriber processes of `method`; `change` makes the topic change once or more
 * (`until`: the subscribers' messages show it is over). Every message goes out as one
 * broadcast and reaches each subscriber exactly once.
 */
async function twoGetOneBroadcast(h: Hosted, busName: string, method: string, member: string, change: () => unknown, until: (msgs: Json[]) => boolean, groups: number[] = []) {
  const subs = await Promise.all([1, 2].map(() => subscriber(h, busName, [{ method }], groups)));
  for (const p of subs) expect(firstOf(p)).toMatchObject({ returnValue: true, subscribed: true });
  const out = await sentUntil(h, change, () => subs.every((p) => until(messages(p))));
  expect(out.pushes.filter((m) => m.path === "/" + busName.replaceAll(".", "/"))).toEqual([]);
  const mine = out.broadcasts.filter((m) => m.member === member);
  expect(mine.length).toBeGreaterThan(0);
  expect(mine.every((m) => m.destination === undefined)).toBe(true);
  // One broadcast per message, each message once per subscriber, the same for both.
  const got = messages(subs[0]!);
  expect(got.length).toBe(mine.length);
  expect(got).toEqual(mine.map((m) => JSON.parse(m.body![1] as string)));
  expect(messages(subs[1]!)).toEqual(got);
  await Promise.all(subs.map((p) => p.kill()));
  return got;
}

let plain: Hosted;
let policed: Hosted;
beforeAll(async () => {
  // One after the other: each reads DEVSERVICES_BUS_POLICY as it connects.
  plain = await host(["power2", "camera2", "mediaindexer", "testautomation"], false);
  policed = await host(["peripheralmanager", "videooutput", "camera2"], true);
}, 60000);
afterAll(async () => {
  await Promise.all([plain, policed].filter(Boolean).map(unhost));
}, 30000);

test("power2 getState: a state change is one broadcast, received once by each subscriber", async () => {
  const got = await twoGetOneBroadcast(
    plain, POWER, "getState", "getState",
    () => plain.control.call(POWER, "setState", { state: "GarageModeState", reason: 1 }),
    (msgs) => msgs.length >= 1,
  );
  expect(got).toEqual([{ returnValue: true, state: "GarageModeState" }]);
}, 60000);

test("test automation subscribeToEvents: a stage's event is one broadcast, received once by each subscriber", async () => {
  const nub = await plain.control.subscribe(TA, "subscribeToCommands", { subscribe: true, appInfo: { id: "com.example.shared" }, name: "main", scene: "s", type: "card" }, () => {});
  try {
    const stageId = nub.first.stageId as number;
    expect(typeof stageId).toBe("number");
    const got = await twoGetOneBroadcast(
      plain, TA, "subscribeToEvents", "subscribeToEvents",
      () => plain.control.call(TA, "notifyEvent", { stageId, type: "stageActivate" }),
      (msgs) => msgs.length >= 1,
    );
    expect(got).toEqual([{ returnValue: true, stageId, type: "stageActivate" }]);
  } finally {
    await nub.cancel();
  }
}, 60000);

test("camera getCameraList: a camera plugged is one broadcast of the new list, received once by each subscriber", async () => {
  const got = await twoGetOneBroadcast(
    plain, CAMERA, "getCameraList", "getCameraList",
    () => writeFileSync(join(plain.plugDir, "usb1"), "USB Camera\n"),
    (msgs) => msgs.length >= 1,
  );
  expect(got).toEqual([{ returnValue: true, deviceList: [{ id: "camera1" }, { id: "camera2" }] }]);
}, 60000);

test("media indexer getDeviceList: each change of the device list during a scan is one broadcast, received once by each subscriber", async () => {
  const device = (m: Json) => ((m.pluginList as Json[])[0]!.deviceList as Json[])[0]!;
  const scanned = (m: Json) => (device(m).lastScan as Json | undefined)?.at;
  // The scan at start is over (so the subscribers see only the changes of this one).
  const before = await eventually(async () => {
    const r = await plain.control.call(MI, "getDeviceList", {});
    return device(r).state === "idle" && scanned(r);
  }, 10000);
  const got = await twoGetOneBroadcast(
    plain, MI, "getDeviceList", "getDeviceList",
    () => plain.control.call(MI, "requestMediaScan", { path: plain.media }),
    (msgs) => msgs.length > 0 && device(msgs.at(-1)!).state === "idle" && scanned(msgs.at(-1)!) !== before,
  );
  expect(got.at(-1)!.pluginList).toEqual((await plain.control.call(MI, "getDeviceList", {})).pluginList as Json);
}, 60000);

test("where the layer's policy is enforced, gpio/list, uart/list and video output getStatus are one broadcast each to their group's subscribers, and none reaches a client outside the group", async () => {
  const { gids } = testAccounts();
  const eavesdropper = spawnScript("test/fixtures/bus-fanout-eavesdropper.ts", [], { DEVSERVICES_BUS: policed.bus.address, HOME: "/tmp" }, nobody());
  policed.procs.push(eavesdropper);
  await eavesdropper.waitFor("ready", 20000);

  const gpio = await twoGetOneBroadcast(
    policed, PM, "gpio/list", "gpio_list",
    () => policed.control.call(PM, "gpio/open", { pin: "gpio4" }),
    (msgs) => msgs.length >= 1,
    [gids["devservices-gpio"]!],
  );
  expect(gpio).toHaveLength(1);
  expect(gpio[0]!.gpioList).toContainEqual({ pin: "gpio4", status: "used" });

  const uart = await twoGetOneBroadcast(
    policed, PM, "uart/list", "uart_list",
    () => policed.control.call(PM, "uart/open", { interfaceId: "uart0" }),
    (msgs) => msgs.length >= 1,
    [gids["devservices-uart"]!],
  );
  expect(uart).toHaveLength(1);
  expect(uart[0]!.uartList).toContainEqual({ interfaceId: "uart0", status: "used" });

  const status = await twoGetOneBroadcast(
    policed, VO, "getStatus", "getStatus",
    () => policed.control.call(VO, "connect", { source: "VDEC", sourcePort: 1, sink: "MAIN", appId: "com.example.player" }),
    (msgs) => msgs.length >= 1,
    [gids["devservices-media"]!],
  );
  expect(status).toHaveLength(1);
  expect((status[0]!.video as Json[]).find((v) => v.sink === "MAIN")).toMatchObject({ connected: true, connectedSource: "VDEC" });

  // An open topic's broadcast from the same connection, sent after the group topics':
  // once it reached the client, the earlier ones would have too.
  const listener = await subscriber(policed, CAMERA, [{ method: "getCameraList" }]);
  writeFileSync(join(policed.plugDir, "usb1"), "USB Camera\n");
  await eventually(() => messages(listener).length === 1, 10000);
  const seen = () => lines(eavesdropper);
  await eventually(() => seen().some((o) => o.member === "getCameraList"), 10000);
  expect(seen().map((o) => o.member)).toEqual(["getCameraList"]);
}, 90000);
