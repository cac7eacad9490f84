// Who may power the device off or reboot it, and who may act on a wake lock. The
// service is its own process (`src/main.ts serve`) on the virtual board with the
// virtual power backend named explicitly (checked in its start-up log before any
// call): a power action is recorded, never taken on this machine. Callers of other
// uids are separate processes: the shipped binary's `call`, and the registered client
// fixture, through setpriv.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "bun";
import { binaryBuilt, binaryForAnyUser, eventually, openBusToAll, ROOT, spawnScript, testEnv, type Env, callAsUser, quietFor } from "../helpers/harness";
import { testAccounts } from "../layer/accounts";
import type { BusClient } from "../../src/bus/client";

const POWER = "com.vendor.service.power2";
const NOBODY = 65534;
const DENIED = { returnValue: false, errorCode: 8, errorText: "errorPermissionDenied" };
const OK = { returnValue: true };

const skip = process.getuid?.() !== 0 ? "needs root (setpriv)" : !binaryBuilt() ? "dist/devservices is not built (bun run build)" : null;
if (skip) console.warn(`power access tests skipped: ${skip}`);

describe.skipIf(skip !== null)("power: callers' rights", () => {
  let env: Env;
  let dir: string;
  let app: string;
  let powerGid: number;
  let serve: ReturnType<typeof spawnScript>;
  let root: BusClient;
  const procs: ReturnType<typeof spawnScript>[] = [];

  beforeAll(async () => {
    powerGid = testAccounts().gids["devservices-power"];
    env = await testEnv();
    dir = mkdtempSync(join(tmpdir(), "power-access-"));
    // The virtual board, with the virtual backend named rather than left to the automatic choice.
    const board = JSON.parse(readFileSync(join(ROOT, "recipes/boards/virtual.json"), "utf8"));
    writeFileSync(join(dir, "power.conf"), "TransitionTimeout=00:00:02\n");
    board.serviceConfig.power2 = { backend: "virtual", configFile: join(dir, "power.conf") };
    writeFileSync(join(dir, "board.json"), JSON.stringify(board));
    openBusToAll(env.bus.address);
    app = binaryForAnyUser(dir);
    serve = spawnScript("src/main.ts", ["serve", "--bus", env.bus.address, "--board", join(dir, "board.json"), "--state-dir", join(dir, "state"), "--log-level", "info", "power2"]);
    const ready = JSON.parse(await serve.waitFor("power service ready", 20000));
    expect(ready.backend).toBe("virtual");
    await serve.waitFor("devservices ready", 20000);
    root = await env.client();
  }, 40000);
  afterAll(async () => {
    for (const p of procs) await p.kill();
    await serve?.kill("SIGTERM");
    await env?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** One call by a separate process of uid NOBODY (with the given groups), or of root. */
  async function callAs(uid: number, groups: number[], method: string, payload: object) {
    return callAsUser({ app, bus: env.bus.address, cwd: dir, uid, groups }, `${POWER}/${method}`, payload, ["-w", "10000"]);
  }
  const state = async () => (await root.call(POWER, "getState", {})).state as string;
  const actions = () => serve.lines.filter((l) => l.includes("virtual board powers off") || l.includes("virtual board reboots")).length;

  test("uid 65534 without the power group: reboot, shutdown and setState to a state that powers off or reboots are refused, nothing happens", async () => {
    expect(await state()).toBe("ActiveState");
    expect(await callAs(NOBODY, [], "reboot", { reason: "ota" })).toEqual(DENIED);
    expect(await callAs(NOBODY, [], "shutdown", { reason: "remoteKey" })).toEqual(DENIED);
    expect(await callAs(NOBODY, [], "setState", { state: "PowerOffState", reason: 1 })).toEqual(DENIED);
    expect(await callAs(NOBODY, [], "setState", { state: "RebootState", reason: 1 })).toEqual(DENIED);
    expect(await state()).toBe("ActiveState");
    expect(actions()).toBe(0);
    // A state without an action stays anyone's to force (spec: setState), and back.
    expect(await callAs(NOBODY, [], "setState", { state: "GarageModeState", reason: 1 })).toEqual(OK);
    expect(await state()).toBe("GarageModeState");
    expect(await callAs(NOBODY, [], "setState", { state: "ActiveState", reason: 1 })).toEqual(OK);
    // An unknown state is the spec's error, not a refusal.
    expect(await callAs(NOBODY, [], "setState", { state: "NoSuchState", reason: 1 })).toEqual({ returnValue: false, errorCode: 7, errorText: "errorUnknown" });
    expect(actions()).toBe(0);
  }, 60000);

  test("uid 65534 in devservices-power: shutdown, setState to PowerOffState and reboot are taken (on the virtual backend)", async () => {
    expect(await callAs(NOBODY, [powerGid], "shutdown", { reason: "remoteKey" })).toEqual(OK);
    expect(await state()).toBe("PowerOffState");
    await eventually(() => actions() === 1, 5000);
    expect(await callAs(NOBODY, [], "setState", { state: "ActiveState", reason: 1 })).toEqual(OK);
    expect(await callAs(NOBODY, [powerGid], "setState", { state: "PowerOffState", reason: 1 })).toEqual(OK);
    await eventually(() => actions() === 2, 5000);
    expect(await callAs(NOBODY, [powerGid], "setState", { state: "ActiveState", reason: 1 })).toEqual(OK);
    expect(await callAs(NOBODY, [powerGid], "reboot", { reason: "ota" })).toEqual(OK);
    await eventually(() => actions() === 3, 5000);
    // The virtual device is back up after its reboot.
    expect(await state()).toBe("ActiveState");
  }, 60000);

  test("another client's wake lock: uid 65534 can neither release nor renew it, nor take one for that client; root's reboot stays held back", async () => {
    const sub = await root.subscribe(POWER, "registerStateTransition", { state: "ActiveState" }, () => {});
    const clientId = sub.first.clientId as string;
    try {
      // Taking a lock for root's client, while it has none: refused, none taken.
      expect(await callAs(NOBODY, [], "acquireWakeLock", { clientId, timeout: 600 })).toEqual(DENIED);
      expect(await root.call(POWER, "releaseWakeLock", { clientId })).toEqual({ returnValue: false, errorCode: 6, errorText: "errorTimerNotRunning" });

      expect(await root.call(POWER, "acquireWakeLock", { clientId, timeout: 600 })).toEqual(OK);
      for (const groups of [[], [powerGid]]) {
        expect(await callAs(NOBODY, groups, "releaseWakeLock", { clientId })).toEqual(DENIED);
        expect(await callAs(NOBODY, groups, "notifyAlarmExpiry", { clientId })).toEqual(DENIED);
        // Renewing with a short timeout would end the lock soon: refused as well.
        expect(await callAs(NOBODY, groups, "acquireWakeLock", { clientId, timeout: 0.2 })).toEqual(DENIED);
      }
      await quietFor(400, "the refused renewal's 0.2 s runs out without ending root's lock");
      // Still held: the device is kept on against root's own reboot.
      expect(await root.call(POWER, "reboot", { reason: "ota" })).toEqual({ returnValue: false, errorCode: 1, errorText: "errorPower2Busy" });
      expect(await root.call(POWER, "releaseWakeLock", { clientId })).toEqual(OK);
    } finally {
      await sub.cancel();
    }
  }, 60000);

  test("a wake lock of uid 65534's own client: another connection of the same uid is refused, the holder and root may act", async () => {
    // The registered client runs as uid 65534 and takes its lock from its own connection.
    const holder = spawnScript("test/fixtures/power-client.ts", ["ActiveState", "", "600"], { DEVSERVICES_BUS: env.bus.address, HOME: dir },
      ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups"]);
    procs.push(holder);
    const clientId = JSON.parse((await holder.waitFor("REGISTERED", 20000)).slice("REGISTERED ".length)).clientId as string;
    expect(JSON.parse((await holder.waitFor("LOCKED", 20000)).slice("LOCKED ".length))).toEqual(OK);
    expect(await callAs(NOBODY, [], "releaseWakeLock", { clientId })).toEqual(DENIED);
    expect(await callAs(NOBODY, [], "acquireWakeLock", { clientId, timeout: 1 })).toEqual(DENIED);
    // Root may release it.
    expect(await callAs(0, [], "releaseWakeLock", { clientId })).toEqual(OK);
    expect(await root.call(POWER, "releaseWakeLock", { clientId })).toEqual({ returnValue: false, errorCode: 6, errorText: "errorTimerNotRunning" });
    await holder.kill();
  }, 60000);
});
