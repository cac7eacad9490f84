// maxDevicesPerUser: the storage devices one uid's requestMediaScan may create. The
// service runs in its own process (as root) on a private bus; the caller is uid 65534.
// Past the bound a new directory is refused with EDQUOT; that uid's existing devices
// stay rescannable; root is not bounded; the count is read from the saved devices
// after a restart.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { BUN, ROOT, eventually, openBusToAll, testEnv, type Env } from "../helpers/harness";
import type { BusClient } from "../../src/bus/client";
import type { Json } from "../../src/core/errors";
import { mp3 } from "./media";

const MI = "com.vendor.service.mediaindexer";
const NOBODY = 65534;
const CLIENT = "test/fixtures/mediaindexer-client.ts";
const skip = process.getuid?.() !== 0 ? "needs root (setpriv, chown)" : null;
if (skip) console.warn(`media indexer quota tests skipped: ${skip}`);

describe.skipIf(skip !== null)("maxDevicesPerUser bounds the devices one uid's requestMediaScan creates", () => {
  let env: Env;
  let base: string;
  let board: string;
  let stateDir: string;
  let svc: Subprocess;
  let root: BusClient;
  const p = (...parts: string[]) => join(base, ...parts);

  const start = async () => {
    svc = spawn([BUN, join(ROOT, "src/main.ts"), "serve", "--bus", env.bus.address, "--board", board, "--state-dir", stateDir, "--log-level", "fatal"], { env: { ...process.env },
      stdout: "ignore", stderr: "inherit",
    });
    root = await env.client();
    await eventually(async () => (await root.call(MI, "getDeviceList", {}, { timeoutMs: 1000 }).catch(() => null))?.returnValue === true, 15000, 50);
  };
  const stop = async () => {
    svc.kill();
    await svc.exited;
  };

  beforeAll(async () => {
    env = await testEnv();
    openBusToAll(env.bus.address);
    base = mkdtempSync(join(tmpdir(), "mediaindexer-quota-"));
    chmodSync(base, 0o755);
    for (const d of ["a", "b", "c", "d", "home"]) {
      mkdirSync(p(d));
      if (d !== "home") writeFileSync(p(d, "song.mp3"), mp3({ title: `Song ${d}`, frames: 8 }));
      chownSync(p(d), NOBODY, NOBODY);
    }
    stateDir = p("state");
    mkdirSync(stateDir, { mode: 0o711 });
    board = p("board.json");
    writeFileSync(board, JSON.stringify({
      name: "mi-quota", backend: "virtual", services: ["mediaindexer"],
      serviceConfig: { mediaindexer: { mediaRoots: [], removableRoot: null, plugins: ["storage"], rescanInterval: 0, detect: false, maxDevicesPerUser: 2 } },
    }));
    await start();
  }, 30000);

  afterAll(async () => {
    if (svc) await stop();
    await env?.stop();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  /** requestMediaScan as uid 65534 (no groups), in its own process. */
  async function scanAs(path: string): Promise<Json> {
    const proc = spawn(["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", BUN, join(ROOT, CLIENT), "call", "requestMediaScan", JSON.stringify({ path })], {
      cwd: p("home"), stdout: "pipe", stderr: "pipe",
      env: { DEVSERVICES_BUS: env.bus.address, HOME: p("home"), TMPDIR: p("home"), PATH: "/usr/bin:/bin" },
    });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    if (code !== 0) throw new Error(`client as ${NOBODY}: exit ${code}: ${err}`);
    return JSON.parse(out.trim().split("\n")[0]!) as Json;
  }
  const devices = async () => ((await root.call(MI, "getDeviceList", {})).pluginList as Json[]).flatMap((pl) => (pl.deviceList as Json[]).map((d) => d.uri as string));

  test("a third directory of uid 65534 is refused with EDQUOT, its first is still rescanned, root is not bounded, and a restart keeps the count", async () => {
    expect(await scanAs(p("a"))).toMatchObject({ returnValue: true, errorCode: 0, errorText: "No error" });
    expect(await scanAs(p("b"))).toMatchObject({ returnValue: true, errorCode: 0, errorText: "No error" });
    const refused = await scanAs(p("c"));
    expect(refused).toMatchObject({ returnValue: false, errorCode: -1, errorText: "Scan Failed", errno: "EDQUOT", path: p("c") });
    expect(String(refused.reason)).toContain("maxDevicesPerUser 2");
    expect(await devices()).not.toContain(`storage://${p("c")}`);
    // Its existing device: rescanned, by path and by device URI.
    expect(await scanAs(p("a"))).toMatchObject({ returnValue: true, errorCode: 0, errorText: "No error" });
    expect(await scanAs(`storage://${p("b")}`)).toMatchObject({ returnValue: true, errorCode: 0 });
    // Root: not bounded.
    expect(await root.call(MI, "requestMediaScan", { path: p("c") })).toMatchObject({ returnValue: true, errorCode: 0 });
    expect(await root.call(MI, "requestMediaScan", { path: p("d") })).toMatchObject({ returnValue: true, errorCode: 0 });
    expect(await devices()).toEqual(expect.arrayContaining([`storage://${p("a")}`, `storage://${p("b")}`, `storage://${p("c")}`, `storage://${p("d")}`]));

    // After a restart the saved devices still count.
    await stop();
    await start();
    const home2 = p("e");
    mkdirSync(home2);
    chownSync(home2, NOBODY, NOBODY);
    expect(await scanAs(home2)).toMatchObject({ returnValue: false, errorText: "Scan Failed", errno: "EDQUOT" });
    expect(await scanAs(p("a"))).toMatchObject({ returnValue: true, errorCode: 0 });
  }, 60000);
});
