// Crash recovery, with the service in a process of its own (dist/devservices) on a board
// that does not detect at start (the virtual board's setting): a directory scanned by
// requestMediaScan is available again after a restart, clean or SIGKILL, without
// runDetect; a scan a SIGKILL interrupted is queued again at the next start and completes.
import { test, expect } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "bun";
import { testEnv, BINARY, eventually, binaryBuilt } from "../helpers/harness";
import { mp3 } from "./media";
import type { Json } from "../../src/core/errors";

async function setup(files: number) {
  const env = await testEnv();
  const dir = mkdtempSync(join(tmpdir(), "mediaindexer-recovery-"));
  const media = join(dir, "scanned");
  const song = mp3({ title: "Song", artist: "A", frames: 2 });
  for (let d = 0; d < Math.ceil(files / 100); d++) {
    mkdirSync(join(media, `d${d}`), { recursive: true });
    for (let f = 0; f < Math.min(100, files - d * 100); f++) writeFileSync(join(media, `d${d}`, `s${f}.mp3`), song);
  }
  const board = join(dir, "board.json");
  // No media roots and no detection at start: the device exists only because requestMediaScan made it.
  writeFileSync(board, JSON.stringify({
    name: "mi-test", backend: "virtual", services: ["mediaindexer"],
    serviceConfig: { mediaindexer: { removableRoot: null, plugins: ["storage"], rescanInterval: 0, detect: false } },
  }));
  const serve = () => spawn([BINARY, "serve", "--bus", env.bus.address, "--board", board, "--state-dir", join(dir, "state"), "--log-level", "fatal"], { env: { ...process.env }, stdout: "ignore", stderr: "inherit" });
  const c = await env.client();
  const uri = `storage://${media}`;
  const dev = async (): Promise<Json | undefined> => {
    const r = await c.call("mediaindexer", "getDeviceList", {}, { timeoutMs: 1000 }).catch(() => null);
    return ((r?.pluginList as Json[] | undefined)?.[0]?.deviceList as Json[] | undefined)?.find((d) => d.uri === uri);
  };
  const done = async () => {
    await env.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  return { env, c, media, serve, dev, done };
}

test.skipIf(!binaryBuilt())("after a clean stop, a scanned directory is available at the next start without runDetect", async () => {
  const s = await setup(20);
  let p = s.serve();
  try {
    await eventually(async () => (await s.c.call("mediaindexer", "getDeviceList", {}, { timeoutMs: 500 }).catch(() => null)) !== null, 15000, 50);
    expect(await s.c.call("mediaindexer", "requestMediaScan", { path: s.media }, { timeoutMs: 20000 })).toMatchObject({ returnValue: true });
    await eventually(async () => (await s.dev())?.audioCount === 20, 10000, 20);
    expect(await s.dev()).toMatchObject({ available: true, state: "idle" });
    p.kill("SIGTERM");
    expect(await p.exited).toBe(0);
    p = s.serve();
    const d = await eventually(async () => await s.dev(), 15000, 50);
    expect(d).toMatchObject({ available: true, audioCount: 20 });
    expect(((await s.c.call("mediaindexer", "getAudioList", {})).audioList as Json).count).toBe(20);
  } finally {
    p.kill("SIGKILL");
    await p.exited;
    await s.done();
  }
}, 60000);

test.skipIf(!binaryBuilt())("a scan interrupted by SIGKILL resumes at the next start, and the device is available without runDetect", async () => {
  const FILES = 3000;
  const s = await setup(FILES);
  let p = s.serve();
  try {
    await eventually(async () => (await s.c.call("mediaindexer", "getDeviceList", {}, { timeoutMs: 500 }).catch(() => null)) !== null, 15000, 50);
    void s.c.call("mediaindexer", "requestMediaScan", { path: s.media }, { timeoutMs: 30000 }).catch(() => {});
    await eventually(async () => ((await s.dev())?.audioCount as number) > 0, 15000, 5);
    p.kill("SIGKILL");
    await p.exited;
    p = s.serve();
    const before = (await eventually(async () => await s.dev(), 15000, 20))!;
    expect(before.audioCount as number).toBeLessThan(FILES);
    await eventually(async () => {
      const d = await s.dev();
      return d?.available === true && d.state === "idle" && d.audioCount === FILES;
    }, 30000, 100);
    expect(((await s.c.call("mediaindexer", "getAudioList", { count: FILES })).audioList as Json).count).toBe(FILES);
  } finally {
    p.kill("SIGKILL");
    await p.exited;
    await s.done();
  }
}, 90000);
