// The test automation service end to end: a fake application in another process
// answers through its nub; every error row and the six observed behaviors.
import { test, expect, beforeAll, afterAll, describe } from "bun:test";
import { testEnv, spawnScript, eventually, type Env } from "../helpers/harness";
import type { BusClient } from "../../src/bus/client";
import testautomation from "../../src/services/testautomation/service";

const TA = "com.vendor.service.testautomation";
let env: Env;
let c: BusClient;
beforeAll(async () => {
  env = await testEnv();
  await env.start(["testautomation"], { serviceConfig: { testautomation: { replyTimeoutMs: 1500 } } });
  c = await env.client();
});
afterAll(() => env.stop());

const app = async (id = "com.example.fake") => {
  const p = spawnScript("test/fixtures/testautomation-app.ts", [id], { DEVSERVICES_BUS: env.bus.address });
  const line = await p.waitFor("stage ");
  return { ...p, stageId: Number(line.split(" ")[1]) };
};
const stages = async () => ((await c.call(TA, "handleRequest", { command: "getRunningAppsAndStages" })).result as any[]);

describe("with a running application", () => {
  let a: Awaited<ReturnType<typeof app>>;
  beforeAll(async () => {
    a = await app();
  });
  afterAll(() => a.kill());

  test("getRunningAppsAndStages lists the stage with the app's pid and defaults", async () => {
    const r = await c.call(TA, "handleRequest", { command: "getRunningAppsAndStages" });
    expect(r.returnValue).toBe(true);
    expect(r.result).toEqual([
      {
        appId: "com.example.fake",
        displayId: 0,
        stages: [{ id: a.stageId, pid: a.proc.pid, width: 1280, height: 720, name: "main", isActive: false, scene: "home", type: "qml" }],
      },
    ]);
  });

  test("getApplicationInformation answers for a stage", async () => {
    const r = await c.call(TA, "handleRequest", { command: "getApplicationInformation", stageId: a.stageId });
    expect(r).toEqual({
      returnValue: true,
      result: { resolution: { width: 1280, height: 720 }, displayId: -1, pid: a.proc.pid, isQmlApplication: true, id: "com.example.fake" },
    });
  });

  test("getItems round-trips client -> service -> nub -> service -> client, with a filter", async () => {
    const r = await c.call(TA, "handleRequest", { command: "getItems", stageId: a.stageId, filter: { className: "QQuickText" } });
    expect(r.returnValue).toBe(true);
    expect(typeof r.teCommandId).toBe("number");
    expect((r.result as any[]).map((i) => i.object_name)).toEqual(["title", "search"]);
    const h = await c.call(TA, "handleRequest", { command: "getItems", stageId: a.stageId, filter: { hierarchy: "#panel #search", visible: false } });
    expect((h.result as any[]).map((i) => i.id)).toEqual(["4"]);
  });

  test("commandsBatch returns one result per queue entry; a non-string entry command fails alone (behavior 5)", async () => {
    const r = await c.call(TA, "handleRequest", {
      command: "commandsBatch",
      stageId: a.stageId,
      queue: [{ command: "getItems", filter: { objectName: "panel" } }, { command: 7 }, { command: "getTitle" }, { command: "fly" }],
    });
    expect(r.returnValue).toBe(true);
    const res = r.result as any[];
    expect(res).toHaveLength(4);
    expect(res[0].returnValue).toBe(true);
    expect(res[0].result.map((i: any) => i.object_name)).toEqual(["panel"]);
    expect(res[1]).toEqual({ returnValue: false, errorCode: 0, errorText: "command name is not specified" });
    expect(res[2]).toEqual({ returnValue: true, result: "Fake" });
    expect(res[3]).toEqual({ returnValue: false, errorCode: 0, errorText: "command 'fly' is unknown" });
  });

  test("an unknown command redirected to the stage: false, code 0, unknown, teCommandId (behavior 2)", async () => {
    const r = await c.call(TA, "handleRequest", { command: "danceAround", stageId: a.stageId });
    expect(r.returnValue).toBe(false);
    expect(r.errorCode).toBe(0);
    expect(r.errorText).toBe("command 'danceAround' is unknown");
    expect(typeof r.teCommandId).toBe("number");
  });

  test("teCommandIds are unique and increasing", async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await c.call(TA, "handleRequest", { command: "getItems", stageId: a.stageId })).teCommandId as number);
    expect(new Set(ids).size).toBe(3);
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
  });

  test("broadcastCommand reaches the nub; returnValue always true", async () => {
    expect(await c.call(TA, "broadcastCommand", { command: "hello" })).toEqual({ returnValue: true });
    await a.waitFor("broadcast hello", 3000);
    expect(await c.call(TA, "broadcastCommand", {})).toEqual({ returnValue: true });
    await a.waitFor((l) => l === "broadcast ", 3000);
  });

  test("broadcastCommand answers true whatever it is given: a non-string command goes out as the empty command", async () => {
    const before = a.lines.filter((l) => l === "broadcast ").length;
    for (const command of [42, null, { x: 1 }, ["a"], false])
      expect([command, await c.call(TA, "broadcastCommand", { command })]).toEqual([command, { returnValue: true }]);
    await eventually(() => a.lines.filter((l) => l === "broadcast ").length === before + 5, 3000);
    // Not even a JSON object: still true, nothing is sent.
    expect(await c.call(TA, "broadcastCommand", "[1,2]")).toEqual({ returnValue: true });
    expect(await c.call(TA, "broadcastCommand", "{not json")).toEqual({ returnValue: true });
  });

  test("notifyEvent goes to subscribeToEvents subscribers; stageActivate marks the stage active", async () => {
    const got: any[] = [];
    const sub = await c.subscribe(TA, "subscribeToEvents", {}, (m) => got.push(m));
    expect(sub.first).toEqual({ returnValue: true, subscribed: true });
    expect(await c.call(TA, "notifyEvent", { stageId: a.stageId, type: "stageActivate" })).toEqual({ returnValue: true });
    expect(await c.call(TA, "notifyEvent", { stageId: a.stageId, type: "" })).toEqual({ returnValue: true });
    await eventually(() => got.length === 2);
    expect(got).toEqual([
      { returnValue: true, stageId: a.stageId, type: "stageActivate" },
      { returnValue: true, stageId: a.stageId, type: "" },
    ]);
    expect((await stages())[0].stages[0].isActive).toBe(true);
    await sub.cancel();
  });

  test("replyToCommand from a caller that is not the stage's nub is refused", async () => {
    // A command in flight to the stage: its id is taken, but only the nub may answer it.
    const r = await c.call(TA, "replyToCommand", { stageId: a.stageId, teCommandId: 999999, command: "getItems", queue: [] });
    expect(r).toEqual({ returnValue: false, errorCode: -1, errorText: "Command ID is invalid", teCommandId: 999999 });
  });
});

describe("errors and observed behaviors", () => {
  test("1: handleRequest without command", async () => {
    expect(await c.call(TA, "handleRequest", {})).toEqual({ returnValue: false, errorCode: -1, errorText: "Parameter is missing: command" });
  });
  test("2: unknown command with no stage", async () => {
    const r = await c.call(TA, "handleRequest", { command: "whatever" });
    expect(r.returnValue).toBe(false);
    expect(r.errorCode).toBe(0);
    expect(r.errorText).toBe("command 'whatever' is unknown");
    expect(typeof r.teCommandId).toBe("number");
  });
  test("3: non-string command", async () => {
    const r = await c.call(TA, "handleRequest", { command: 42 });
    expect(r).toEqual({ returnValue: false, errorCode: 0, errorText: "command name is not specified", teCommandId: r.teCommandId });
    expect(typeof r.teCommandId).toBe("number");
  });
  test("4: commandsBatch with a missing or non-array queue", async () => {
    for (const payload of [{ command: "commandsBatch", stageId: 1 }, { command: "commandsBatch", stageId: 1, queue: "x" }]) {
      const r = await c.call(TA, "handleRequest", payload);
      expect(Object.keys(r).sort()).toEqual(["result", "returnValue", "teCommandId"]);
      expect(r.returnValue).toBe(false);
      expect(r.result).toBeNull();
    }
  });
  test("6: replyToCommand without teCommandId, with an invalid one, with malformed JSON", async () => {
    expect(await c.call(TA, "replyToCommand", { stageId: 1, command: "getItems", queue: [] })).toEqual({
      returnValue: false,
      errorCode: -1,
      errorText: "Parameter is missing: teCommandId",
    });
    const r = await c.call(TA, "replyToCommand", { stageId: 1, teCommandId: 4242, command: "getItems", queue: [] });
    expect(r.errorCode).toBe(-1);
    expect(r.errorText).toBe("Command ID is invalid");
    expect(r.returnValue).toBe(false);
    expect(await c.call(TA, "replyToCommand", '{"stageId": 1, "teCommandId":')).toEqual({ returnValue: false, errorCode: 4, errorText: "Invalid JSON message" });
  });
  test("Invalid JSON message on any method", async () => {
    expect(await c.call(TA, "notifyEvent", "[1,2]")).toEqual({ returnValue: false, errorCode: 4, errorText: "Invalid JSON message" });
  });
  test("Not a subscription message", async () => {
    const notSub = { returnValue: false, errorCode: -1, errorText: "Not a subscription message" };
    expect(await c.call(TA, "subscribeToEvents", { subscribe: false })).toEqual(notSub);
    expect(await c.call(TA, "subscribeToCommands", { subscribe: false, appInfo: { id: "a" }, name: "n", scene: "s", type: "t" })).toEqual(notSub);
  });
  test("Parameter is missing names the parameter", async () => {
    expect(await c.call(TA, "subscribeToCommands", { subscribe: true, appInfo: { id: "a" }, scene: "s", type: "t" })).toEqual({
      returnValue: false,
      errorCode: -1,
      errorText: "Parameter is missing: name",
    });
    expect(await c.call(TA, "subscribeToEvents", {})).toEqual({ returnValue: false, errorCode: -1, errorText: "Parameter is missing: subscribe" });
    expect(await c.call(TA, "notifyEvent", { stageId: 1 })).toEqual({ returnValue: false, errorCode: -1, errorText: "Parameter is missing: type" });
    expect(await c.call(TA, "handleRequest", { command: "getApplicationInformation" })).toEqual({
      returnValue: false,
      errorCode: -1,
      errorText: "Parameter is missing: stageId",
    });
  });
  test("a present field of the wrong type is not 'Parameter is missing': its own row, else Invalid JSON message", async () => {
    const invalid = { returnValue: false, errorCode: 4, errorText: "Invalid JSON message" };
    expect(await c.call(TA, "notifyEvent", { stageId: 1, type: 5 })).toEqual(invalid);
    expect(await c.call(TA, "subscribeToCommands", { subscribe: true, appInfo: { id: "a" }, name: 5, scene: "s", type: "t" })).toEqual(invalid);
    expect(await c.call(TA, "subscribeToCommands", { subscribe: true, appInfo: { id: "a" }, name: "n", scene: "s", type: "t", width: "wide" })).toEqual(invalid);
    expect(await c.call(TA, "replyToCommand", { stageId: 1, teCommandId: 1, command: "getItems", queue: "x" })).toEqual(invalid);
    expect(await c.call(TA, "ping", { Message: 7 })).toEqual(invalid);
    // Fields with a row of their own.
    expect(await c.call(TA, "subscribeToEvents", { subscribe: "yes" })).toEqual({ returnValue: false, errorCode: -1, errorText: "Not a subscription message" });
    expect(await c.call(TA, "replyToCommand", { stageId: 1, teCommandId: "x", command: "getItems", queue: [] })).toEqual({
      returnValue: false,
      errorCode: -1,
      errorText: "Command ID is invalid",
    });
    expect(await c.call(TA, "replyToCommand", { stageId: 1, teCommandId: 1, command: 3, queue: [] })).toEqual({
      returnValue: false,
      errorCode: 0,
      errorText: "command name is not specified",
    });
    // Missing stays missing, at any depth of the field it names.
    expect(await c.call(TA, "notifyEvent", { type: "x" })).toEqual({ returnValue: false, errorCode: -1, errorText: "Parameter is missing: stageId" });
  });

  test("ids are Numbers (spec): a fraction names no stage and no command", async () => {
    expect(await c.call(TA, "notifyEvent", { stageId: 1.5, type: "x" })).toEqual({ returnValue: false, errorCode: -1, errorText: "Invalid Stage ID" });
    expect(await c.call(TA, "replyToCommand", { stageId: 1, teCommandId: 1.5, command: "getItems", queue: [] })).toEqual({
      returnValue: false,
      errorCode: -1,
      errorText: "Command ID is invalid",
      teCommandId: 1.5,
    });
  });

  test("an internal failure is answered with the table's code -1 and one of its texts (not 'Unknown error')", () => {
    const r = testautomation.spec.internalError("handleRequest", new Error("boom"));
    expect(r).toEqual({ errorCode: -1, errorText: "Invalid JSON message" });
  });

  test("Invalid Stage ID", async () => {
    const bad = { returnValue: false, errorCode: -1, errorText: "Invalid Stage ID" };
    expect(await c.call(TA, "notifyEvent", { stageId: 9999, type: "stageActivate" })).toEqual(bad);
    expect(await c.call(TA, "notifyEvent", { stageId: "one", type: "x" })).toEqual(bad);
    expect(await c.call(TA, "handleRequest", { command: "getApplicationInformation", stageId: 9999 })).toEqual(bad);
    const r = await c.call(TA, "handleRequest", { command: "getItems", stageId: 9999 });
    expect(r.errorText).toBe("Invalid Stage ID");
    expect(typeof r.teCommandId).toBe("number");
  });
  test("Invalid application ID", async () => {
    const bad = { returnValue: false, errorCode: -1, errorText: "Invalid application ID" };
    expect(await c.call(TA, "subscribeToCommands", { subscribe: true, appInfo: { id: "" }, name: "n", scene: "s", type: "t" })).toEqual(bad);
    expect(await c.call(TA, "subscribeToCommands", { subscribe: true, appInfo: "x", name: "n", scene: "s", type: "t" })).toEqual(bad);
  });
  test("ping and version", async () => {
    expect(await c.call(TA, "ping", { Message: "hi" })).toEqual({ returnValue: true, Message: "hi" });
    expect(await c.call(TA, "ping", {})).toEqual({ returnValue: true });
    const v = await c.call(TA, "version", {});
    expect(v.returnValue).toBe(true);
    expect(v.version).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe("stage lifetime", () => {
  test("a nub killed with SIGKILL has its stage and subscriptions removed within a second", async () => {
    const a = await app("com.example.doomed");
    const events: any[] = [];
    const sub = await c.subscribe(TA, "subscribeToEvents", {}, (m) => events.push(m));
    expect((await stages()).some((x) => x.appId === "com.example.doomed")).toBe(true);
    const before = env.rt!.server.stats();
    expect(before.subscriptions).toBeGreaterThanOrEqual(2);
    const t0 = performance.now();
    await a.kill("SIGKILL");
    await eventually(async () => !(await stages()).some((x) => x.appId === "com.example.doomed"), 1000, 10);
    await eventually(() => events.some((e) => e.type === "stageRemoved" && e.stageId === a.stageId), 1000, 10);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(env.rt!.server.stats().subscriptions).toBe(before.subscriptions - 1);
    // The stage was the nub's lease; it went with its subscription.
    expect(env.rt!.server.stats().leases).toBe(before.leases - 1);
    expect(await c.call(TA, "notifyEvent", { stageId: a.stageId, type: "x" })).toEqual({ returnValue: false, errorCode: -1, errorText: "Invalid Stage ID" });
    await sub.cancel();
    await eventually(() => env.rt!.server.stats().subscriptions === before.subscriptions - 2);
  });

  test("a command waiting on a nub that dies is answered Invalid Stage ID", async () => {
    // A stage whose nub never answers: subscribe by hand, without a nub library.
    const nubClient = await env.client();
    let commands = 0;
    const sub = await nubClient.subscribe(TA, "subscribeToCommands", { appInfo: { id: "com.example.mute" }, name: "m", scene: "s", type: "web" }, () => void commands++);
    const stageId = sub.first.stageId as number;
    const pending = c.call(TA, "handleRequest", { command: "getItems", stageId });
    await eventually(() => commands === 1); // the command reached the nub, which never answers
    await sub.cancel();
    const r = await pending;
    expect(r.returnValue).toBe(false);
    expect(r.errorCode).toBe(-1);
    expect(r.errorText).toBe("Invalid Stage ID");
  });

  test("a nub that never answers times out with a stated error", async () => {
    const nubClient = await env.client();
    const sub = await nubClient.subscribe(TA, "subscribeToCommands", { appInfo: { id: "com.example.slow" }, name: "m", scene: "s", type: "web" }, () => {});
    const r = await c.call(TA, "handleRequest", { command: "getItems", stageId: sub.first.stageId });
    expect(r.returnValue).toBe(false);
    expect(r.errorCode).toBe(-1);
    expect(r.errorText).toMatch(/did not answer command \d+ within 1500 ms/);
    await sub.cancel();
  });
});

test("teCommandIds stay unique across a restart of the service: a late reply from before it names nothing new", async () => {
  const before = (await c.call(TA, "handleRequest", { command: "fly" })).teCommandId as number;
  expect(typeof before).toBe("number");
  await env.start(["testautomation"], { serviceConfig: { testautomation: { replyTimeoutMs: 1500 } } });
  const after = (await c.call(TA, "handleRequest", { command: "fly" })).teCommandId as number;
  expect(after).toBeGreaterThan(before);
  // The ID from before the restart is no command of the new process.
  const nubClient = await env.client();
  const sub = await nubClient.subscribe(TA, "subscribeToCommands", { appInfo: { id: "com.example.late" }, name: "m", scene: "s", type: "web" }, () => {});
  const r = await nubClient.call(TA, "replyToCommand", { stageId: sub.first.stageId, teCommandId: before, command: "getItems", queue: [] });
  expect(r).toEqual({ returnValue: false, errorCode: -1, errorText: "Command ID is invalid", teCommandId: before });
  await sub.cancel();
});
