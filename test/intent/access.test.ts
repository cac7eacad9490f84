// An intent's results are its requester's: only the requester's uid (any of its
// connections) and root may follow them (subscribeResult), and only the handler the
// intent was routed to may answer (sendResult): where its process is not known, the
// uid that answered first. The service runs in its own process with a stand-in
// application manager (which reports no pid); other applications are uid 65534 and
// the devservices user (separate processes, setpriv).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { BUN, ROOT, binaryBuilt, binaryForAnyUser, eventually, openBusToAll, spawnScript, callAsUser } from "../helpers/harness";
import { testAccounts } from "../layer/accounts";
import { installApp, BROWSER_FILTERS } from "./apps";

const INTENT = "com.vendor.service.intent";
const APP = 65534;
const skip = process.getuid?.() !== 0 ? "needs root (setpriv)" : !binaryBuilt() ? "dist/devservices is not built (bun run build)" : null;
if (skip) console.warn(`intent access tests skipped: ${skip}`);

describe.skipIf(skip !== null)("who follows and answers an intent", () => {
  let bus: PrivateBus;
  let dir: string;
  let app: string;
  let service: Subprocess;
  let appManager: ReturnType<typeof spawnScript>;
  let root: BusClient;
  let other: number;

  beforeAll(async () => {
    other = testAccounts().uid;
    bus = await startPrivateBus();
    openBusToAll(bus.address);
    dir = mkdtempSync(join(tmpdir(), "intent-access-"));
    app = binaryForAnyUser(dir);
    const apps = join(dir, "apps");
    installApp(apps, { id: "com.example.browser", intentFilters: BROWSER_FILTERS });
    const board = join(dir, "board.json");
    writeFileSync(board, JSON.stringify({
      name: "intent-access", backend: "virtual", services: ["intent"],
      serviceConfig: { intent: { applicationDirs: [apps], launcher: "applicationmanager" } },
    }));
    appManager = spawnScript("test/fixtures/intent-appmanager.ts", [], { DEVSERVICES_BUS: bus.address });
    await appManager.waitFor("READY");
    service = spawn([BUN, join(ROOT, "src/main.ts"), "serve", "--bus", bus.address, "--board", board, "--state-dir", join(dir, "state"), "--log-level", "warn", "intent"], { env: { ...process.env },
      cwd: ROOT, stdout: "inherit", stderr: "inherit",
    });
    root = await BusClient.connect(bus.address);
    await eventually(async () => {
      if (service.exitCode !== null) throw new Error(`the intent service exited (${service.exitCode})`);
      return root.hasOwner(INTENT);
    }, 20000, 50);
    await eventually(async () => ((await root.call(INTENT, "query", {})).handlers as unknown[]).length === 1, 5000);
  }, 30000);
  afterAll(async () => {
    root?.close();
    service?.kill("SIGTERM");
    await service?.exited;
    if (appManager && appManager.proc.exitCode === null) await appManager.kill();
    await bus?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function callAs(uid: number, method: string, payload: object) {
    return callAsUser({ app, bus: bus.address, cwd: dir, uid, groups: [] }, `${INTENT}/${method}`, payload);
  }

  const refusedFollow = (id: number) => ({
    returnValue: false, errorText: "Invalid parameter", intentId: id,
    reason: `intent ${id} was started by another user; only its requester and root may follow its results`,
  });

  test("subscribeResult: another uid is refused an intent it did not start; the requester's uid (another connection) and root may follow it", async () => {
    // Root's intent, followed by its subscription of start.
    const got: any[] = [];
    const sub = await root.subscribe(INTENT, "start", { intent: { action: "view", uri: "https://example.com/" } }, (m) => got.push(m));
    const id = sub.first.intentId as number;
    expect(await callAs(APP, "subscribeResult", { intentId: id, subscribe: true })).toEqual(refusedFollow(id));
    expect(await callAs(APP, "subscribeResult", { intentId: id })).toEqual(refusedFollow(id));
    const second = await BusClient.connect(bus.address);
    try {
      expect(await second.call(INTENT, "subscribeResult", { intentId: id })).toEqual({ returnValue: true, subscribed: false, intentId: id });
    } finally {
      second.close();
    }

    // uid 65534's own intent: started by one process, followed by another of the same uid; not by another uid.
    const mine = await callAs(APP, "start", { intent: { action: "view", uri: "https://example.com/app" } });
    expect(mine).toEqual({ returnValue: true, intentId: expect.any(Number) });
    expect(await callAs(APP, "subscribeResult", { intentId: mine.intentId, subscribe: true })).toEqual({ returnValue: true, subscribed: true, intentId: mine.intentId });
    expect(await callAs(other, "subscribeResult", { intentId: mine.intentId, subscribe: true })).toEqual(refusedFollow(mine.intentId));
    expect(await root.call(INTENT, "subscribeResult", { intentId: mine.intentId })).toEqual({ returnValue: true, subscribed: false, intentId: mine.intentId });
    await sub.cancel();
  }, 60000);

  test("sendResult: where the handler's process is not known, the uid that answered first answers; another uid's result is refused and reaches nobody", async () => {
    const got: any[] = [];
    const sub = await root.subscribe(INTENT, "start", { intent: { action: "view", uri: "https://example.com/r" } }, (m) => got.push(m));
    const id = sub.first.intentId as number;
    // The handler (here uid 65534, launched by the application manager) answers first.
    expect(await callAs(APP, "sendResult", { intentId: id, result: "progress" })).toEqual({ returnValue: true, intentId: id });
    await eventually(() => got.length === 1);
    // Another application cannot put words in its mouth.
    expect(await callAs(other, "sendResult", { intentId: id, result: "forged" })).toEqual({
      returnValue: false, errorText: "Invalid parameter",
      reason: `intent ${id} was routed to com.example.browser; results are accepted from it only`,
    });
    expect(await callAs(APP, "sendResult", { intentId: id, result: "done" })).toEqual({ returnValue: true, intentId: id });
    await eventually(() => got.length === 2);
    expect(got.map((m) => m.result)).toEqual(["progress", "done"]);
    await sub.cancel();
  }, 60000);
});
