// Sending commands into applications (broadcastCommand, handleRequest's redirected
// commands) and posting stage events (notifyEvent) are for root and devservices-test;
// reading the stage list and subscribing stay anyone's. The service is its own process
// (`src/main.ts serve`), the application with its nub another (root), and the callers
// of uid 65534 the shipped binary's `call` through setpriv.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "bun";
import { binaryBuilt, binaryForAnyUser, eventually, openBusToAll, spawnScript, testEnv, type Env, callAsUser } from "../helpers/harness";
import { testAccounts } from "../layer/accounts";
import type { BusClient } from "../../src/bus/client";
import type { Json } from "../../src/core/errors";

const TA = "com.vendor.service.testautomation";
const NOBODY = 65534;
const denied = (method: string) => ({ returnValue: false, errorCode: -1, errorText: `Permission denied: ${method} is for root and group devservices-test` });

const skip = process.getuid?.() !== 0 ? "needs root (setpriv)" : !binaryBuilt() ? "dist/devservices is not built (bun run build)" : null;
if (skip) console.warn(`testautomation access tests skipped: ${skip}`);

describe.skipIf(skip !== null)("test automation: who may reach into applications", () => {
  let env: Env;
  let dir: string;
  let app: string;
  let testGid: number;
  let serve: ReturnType<typeof spawnScript>;
  let nubApp: ReturnType<typeof spawnScript>;
  let stageId: number;
  let root: BusClient;

  beforeAll(async () => {
    testGid = testAccounts().gids["devservices-test"];
    env = await testEnv();
    dir = mkdtempSync(join(tmpdir(), "testautomation-access-"));
    openBusToAll(env.bus.address);
    app = binaryForAnyUser(dir);
    serve = spawnScript("src/main.ts", ["serve", "--bus", env.bus.address, "--board", "virtual", "--state-dir", join(dir, "state"), "--log-level", "info", "testautomation"]);
    await serve.waitFor("devservices ready", 20000);
    nubApp = spawnScript("test/fixtures/testautomation-app.ts", ["com.example.victim"], { DEVSERVICES_BUS: env.bus.address });
    stageId = Number((await nubApp.waitFor((l) => /^stage \d+$/.test(l), 20000)).split(" ")[1]);
    root = await env.client();
  }, 40000);
  afterAll(async () => {
    await nubApp?.kill();
    await serve?.kill("SIGTERM");
    await env?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function callAs(groups: number[], method: string, payload: object, extra: string[] = []) {
    return callAsUser({ app, bus: env.bus.address, cwd: dir, uid: NOBODY, groups }, `${TA}/${method}`, payload, extra);
  }

  test("broadcastCommand: refused without the group (the application gets nothing), sent for a member", async () => {
    expect(await callAs([], "broadcastCommand", { command: "evil" })).toEqual(denied("broadcastCommand"));
    expect(await callAs([testGid], "broadcastCommand", { command: "good" })).toEqual({ returnValue: true });
    await nubApp.waitFor("broadcast good");
    expect(nubApp.lines.filter((l) => l.startsWith("broadcast "))).toEqual(["broadcast good"]);
  }, 30000);

  test("handleRequest: a command sent into the application is refused without the group, answered for a member; the stage list stays anyone's", async () => {
    expect(await callAs([], "handleRequest", { command: "getItems", stageId })).toEqual(denied("handleRequest"));
    expect(await callAs([], "handleRequest", { command: "commandsBatch", stageId, queue: [{ command: "getTitle" }] })).toEqual(denied("handleRequest"));
    const items = await callAs([testGid], "handleRequest", { command: "getItems", stageId, filter: { objectName: "title" } });
    expect(items).toMatchObject({ returnValue: true, teCommandId: expect.any(Number), result: [{ object_name: "title" }] });
    // Reading: answered by the service from its stage list.
    expect(await callAs([], "handleRequest", { command: "getRunningAppsAndStages" })).toMatchObject({
      returnValue: true, result: [{ appId: "com.example.victim", stages: [{ id: stageId }] }],
    });
    expect(await callAs([], "handleRequest", { command: "getApplicationInformation", stageId })).toMatchObject({ returnValue: true, result: { id: "com.example.victim" } });
    expect(await callAs([], "handleRequest", {})).toEqual({ returnValue: false, errorCode: -1, errorText: "Parameter is missing: command" });
  }, 30000);

  test("notifyEvent: a forged stage event is refused without the group and reaches no subscriber; a member's is delivered; subscribing stays anyone's", async () => {
    const got: Json[] = [];
    const sub = await root.subscribe(TA, "subscribeToEvents", { subscribe: true }, (m) => got.push(m));
    try {
      expect(await callAs([], "notifyEvent", { stageId, type: "forged" })).toEqual(denied("notifyEvent"));
      expect(await callAs([testGid], "notifyEvent", { stageId, type: "real" })).toEqual({ returnValue: true });
      await eventually(() => got.length >= 1, 5000);
      expect(got).toEqual([{ returnValue: true, stageId, type: "real" }]);
      expect(await callAs([], "subscribeToEvents", { subscribe: true }, ["-n", "1"])).toEqual({ returnValue: true, subscribed: true });
    } finally {
      await sub.cancel();
    }
  }, 30000);
});
