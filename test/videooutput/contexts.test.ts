// A registered context belongs to the uid that registered it and lives until
// unregister (luna-style clients register from one one-shot call and connect from
// the next): only that uid or root may use, change or remove it; at most maxContexts
// on the board. The service is its own process (`src/main.ts serve`) on the virtual
// board, which has the real board's access rule (root and devservices-media); callers
// of other uids are the shipped binary's one-shot `call` through setpriv.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "bun";
import { binaryBuilt, binaryForAnyUser, openBusToAll, ROOT, spawnScript, testEnv, type Env, callAsUser } from "../helpers/harness";
import { testAccounts } from "../layer/accounts";
import type { BusClient } from "../../src/bus/client";
import { OK, VO } from "./env";

const NOBODY = 65534;
const MAX = 4;
const denied = (context: string, errorCode = 1) => ({ returnValue: false, errorCode, errorMessage: `Permission denied: context ${context} belongs to another user` });

const skip = process.getuid?.() !== 0 ? "needs root (setpriv)" : !binaryBuilt() ? "dist/devservices is not built (bun run build)" : null;
if (skip) console.warn(`videooutput context tests skipped: ${skip}`);

describe.skipIf(skip !== null)("contexts belong to the registering uid", () => {
  let env: Env;
  let dir: string;
  let app: string;
  let media: number;
  /** Another uid of the media group: the layer's devservices user (an account the bus daemon knows). */
  let OTHER: number;
  let serve: ReturnType<typeof spawnScript>;
  let root: BusClient;

  beforeAll(async () => {
    const acc = testAccounts();
    media = acc.gids["devservices-media"];
    OTHER = acc.uid;
    env = await testEnv();
    dir = mkdtempSync(join(tmpdir(), "videooutput-contexts-"));
    const board = JSON.parse(readFileSync(join(ROOT, "recipes/boards/virtual.json"), "utf8"));
    board.serviceConfig.videooutput = { ...board.serviceConfig.videooutput, configFile: null, maxContexts: MAX };
    writeFileSync(join(dir, "board.json"), JSON.stringify(board));
    openBusToAll(env.bus.address);
    app = binaryForAnyUser(dir);
    serve = spawnScript("src/main.ts", ["serve", "--bus", env.bus.address, "--board", join(dir, "board.json"), "--state-dir", join(dir, "state"), "--log-level", "info", "videooutput"]);
    await serve.waitFor("devservices ready", 20000);
    root = await env.client();
  }, 40000);
  afterAll(async () => {
    await serve?.kill("SIGTERM");
    await env?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** One one-shot call by a separate process (its own connection, gone when it answers). */
  async function callAs(uid: number, groups: number[], method: string, payload: object) {
    return callAsUser({ app, bus: env.bus.address, cwd: dir, uid, groups }, `${VO}/${method}`, payload);
  }
  const status = async () => Object.fromEntries(((await root.call(VO, "getStatus", {})).video as { sink: string }[]).map((v) => [v.sink, v])) as Record<string, Record<string, unknown>>;

  test("the virtual board has the real rule: uid 65534 outside devservices-media is refused", async () => {
    expect(await callAs(NOBODY, [], "getStatus", {})).toEqual({
      returnValue: false, errorCode: 1, errorMessage: "Permission denied: getStatus is for the media framework (root and the service's access group)",
    });
    expect(await callAs(NOBODY, [], "register", { context: "mine" })).toMatchObject({ returnValue: false, errorCode: 1 });
    expect((await callAs(NOBODY, [media], "getStatus", {})).returnValue).toBe(true);
  }, 30000);

  test("root's context: uid 65534 of the media group may not unregister, connect, composite (under any context) or disconnect it", async () => {
    expect(await root.call(VO, "register", { context: "R" })).toEqual(OK);
    expect(await root.call(VO, "connect", { source: "VDEC", sink: "MAIN", context: "R" })).toEqual({ returnValue: true, planeID: 31 });
    expect(await callAs(NOBODY, [media], "unregister", { context: "R" })).toEqual(denied("R"));
    // connect answers the spec's code for connect, 67.
    expect(await callAs(NOBODY, [media], "connect", { source: "HDMI", sink: "SUB0", context: "R" })).toEqual(denied("R", 67));
    expect(await callAs(NOBODY, [media], "display/setCompositing", { composeOrder: { sink: "MAIN", opacity: 0, zOrder: 0, context: "R" } })).toEqual(denied("R"));
    expect(await callAs(NOBODY, [media], "disconnect", { sink: "MAIN" })).toEqual(denied("R"));
    expect(await callAs(NOBODY, [media], "setVideoData", { sink: "MAIN", width: 16, height: 16, frameRate: 1 })).toEqual(denied("R"));
    expect(await callAs(NOBODY, [media], "display/setDisplayWindow", { sink: "MAIN", fullScreen: false, displayOutput: { x: 0, y: 0, width: 100, height: 100 } })).toEqual(denied("R"));
    // Its own context, or one nobody registered, does not let it compose root's sink.
    expect(await callAs(NOBODY, [media], "register", { context: "N9" })).toEqual(OK);
    expect(await callAs(NOBODY, [media], "display/setCompositing", { composeOrder: { sink: "MAIN", opacity: 0, zOrder: 0, context: "N9" } })).toEqual(denied("R"));
    expect(await callAs(NOBODY, [media], "display/setCompositing", { composeOrder: { sink: "MAIN", opacity: 0, zOrder: 0, context: "unregistered" } })).toEqual(denied("R"));
    expect(await callAs(NOBODY, [media], "unregister", { context: "N9" })).toEqual(OK);
    expect((await status()).MAIN).toMatchObject({ connected: true, context: "R", connectedSource: "VDEC", opacity: 255, fullScreen: false, width: 0 });
    expect(await root.call(VO, "unregister", { context: "R" })).toEqual(OK);
    expect((await status()).MAIN).toMatchObject({ connected: false });
  }, 30000);

  test("uid 65534's context outlives its one-shot calls: the same uid uses and unregisters it from other connections, another uid may not, root may", async () => {
    expect(await callAs(NOBODY, [media], "register", { context: "N" })).toEqual(OK);
    // Another connection of the same uid.
    expect(await callAs(NOBODY, [media], "connect", { source: "VDEC", sink: "SUB0", context: "N" })).toEqual({ returnValue: true, planeID: 32 });
    expect(await callAs(NOBODY, [media], "display/setCompositing", { composeOrder: { sink: "SUB0", opacity: 100, zOrder: 1, context: "N" } })).toEqual(OK);
    expect((await status()).SUB0).toMatchObject({ connected: true, context: "N", opacity: 100 });
    // Another uid of the same group.
    expect(await callAs(OTHER, [media], "unregister", { context: "N" })).toEqual(denied("N"));
    expect(await callAs(OTHER, [media], "disconnect", { sink: "SUB0", context: "N" })).toEqual(denied("N"));
    expect((await status()).SUB0).toMatchObject({ connected: true, context: "N" });
    expect(await callAs(NOBODY, [media], "unregister", { context: "N" })).toEqual(OK);
    expect((await status()).SUB0).toMatchObject({ connected: false });
    // Root may remove any uid's context.
    expect(await callAs(NOBODY, [media], "register", { context: "N2" })).toEqual(OK);
    expect(await root.call(VO, "unregister", { context: "N2" })).toEqual(OK);
    expect(await callAs(NOBODY, [media], "unregister", { context: "N2" })).toEqual({ returnValue: false, errorCode: 5, errorMessage: "Invalid status: context N2 is not registered" });
  }, 60000);

  test(`at most maxContexts (${MAX} here) on the board; unregistering one makes room`, async () => {
    for (let i = 0; i < MAX; i++) expect(await callAs(NOBODY, [media], "register", { context: `c${i}` })).toEqual(OK);
    const full = { returnValue: false, errorCode: 5, errorMessage: `Invalid status: ${MAX} contexts are registered, the most this board allows (maxContexts)` };
    expect(await callAs(NOBODY, [media], "register", { context: "one-more" })).toEqual(full);
    expect(await root.call(VO, "register", { context: "one-more" })).toEqual(full);
    expect(await callAs(NOBODY, [media], "unregister", { context: "c0" })).toEqual(OK);
    expect(await root.call(VO, "register", { context: "one-more" })).toEqual(OK);
    for (const c of ["c1", "c2", "c3", "one-more"]) expect(await root.call(VO, "unregister", { context: c })).toEqual(OK);
  }, 60000);
});
