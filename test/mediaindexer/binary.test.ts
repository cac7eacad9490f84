// The compiled binary carries the metadata thread (an entry point of its own in
// scripts/build.ts): dist/devservices hosting the media indexer indexes tags and
// image headers of a configured media root. The database survives a SIGKILL in the
// middle of a scan: the next start lists what was committed and completes the scan.
import { test, expect } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "bun";
import { testEnv, BINARY, eventually, binaryBuilt } from "../helpers/harness";
import { mp3, jpeg, put, PNG_1x1 } from "./media";
import type { Json } from "../../src/core/errors";

test.skipIf(!binaryBuilt())("dist/devservices indexes a media root with its metadata thread", async () => {
  const env = await testEnv();
  const dir = mkdtempSync(join(tmpdir(), "mediaindexer-bin-"));
  const media = join(dir, "media");
  put(join(media, "s.mp3"), mp3({ title: "Tagged", artist: "Someone", cover: PNG_1x1 }));
  put(join(media, "p.jpg"), jpeg({ width: 33, height: 22, date: "2019:08:07 06:05:04", lat: 10.5, lon: 20.25 }));
  const board = join(dir, "board.json");
  writeFileSync(board, JSON.stringify({
    name: "mi-test", backend: "virtual", services: ["mediaindexer"],
    serviceConfig: { mediaindexer: { mediaRoots: [media], removableRoot: null, plugins: ["storage"], rescanInterval: 0 } },
  }));
  const p = spawn([BINARY, "serve", "--bus", env.bus.address, "--board", board, "--state-dir", join(dir, "state"), "--log-level", "fatal"], { env: { ...process.env }, stdout: "ignore", stderr: "inherit" });
  try {
    const c = await env.client();
    const idle = async () => {
      const r = await c.call("mediaindexer", "getDeviceList", {}, { timeoutMs: 500 }).catch(() => null);
      const d = (((r?.pluginList as Json[] | undefined)?.[0]?.deviceList as Json[] | undefined) ?? [])[0];
      return d && d.state === "idle" && d.audioCount === 1 && d.imageCount === 1;
    };
    await eventually(idle, 15000, 100);
    const a = ((await c.call("mediaindexer", "getAudioList", {})).audioList as Json).results as Json[];
    expect(a[0]).toMatchObject({ title: "Tagged", artist: "Someone" });
    expect(a[0]!.thumbnail as string).toMatch(/\.png$/);
    const i = ((await c.call("mediaindexer", "getImageList", {})).imageList as Json).results as Json[];
    expect(i[0]).toMatchObject({ width: 33, height: 22 });
    // EXIF through exifr, inside the compiled binary.
    const md = await c.call("mediaindexer", "getImageMetadata", { uri: i[0]!.uri });
    expect(md.metadata).toMatchObject({ date_of_creation: "2019-08-07T06:05:04", geo_location_latitude: 10.5, geo_location_longitude: 20.25 });
  } finally {
    p.kill();
    await p.exited;
    await env.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 30000);

test.skipIf(!binaryBuilt())("a SIGKILL during a scan loses nothing committed; the next start completes the scan", async () => {
  const env = await testEnv();
  const dir = mkdtempSync(join(tmpdir(), "mediaindexer-kill-"));
  const media = join(dir, "media");
  const FILES = 3000;
  const song = mp3({ title: "Song", artist: "A", frames: 2 });
  for (let d = 0; d < FILES / 100; d++) {
    mkdirSync(join(media, `d${d}`), { recursive: true });
    for (let f = 0; f < 100; f++) writeFileSync(join(media, `d${d}`, `s${f}.mp3`), song);
  }
  const board = join(dir, "board.json");
  writeFileSync(board, JSON.stringify({
    name: "mi-test", backend: "virtual", services: ["mediaindexer"],
    serviceConfig: { mediaindexer: { mediaRoots: [media], removableRoot: null, plugins: ["storage"], rescanInterval: 0 } },
  }));
  const serve = () => spawn([BINARY, "serve", "--bus", env.bus.address, "--board", board, "--state-dir", join(dir, "state"), "--log-level", "fatal"], { env: { ...process.env }, stdout: "ignore", stderr: "inherit" });
  let p = serve();
  try {
    const c = await env.client();
    const dev = async () => {
      const r = await c.call("mediaindexer", "getDeviceList", {}, { timeoutMs: 1000 }).catch(() => null);
      return (((r?.pluginList as Json[] | undefined)?.[0]?.deviceList as Json[] | undefined) ?? [])[0];
    };
    await eventually(async () => ((await dev())?.audioCount as number) > 0, 15000, 5);
    p.kill("SIGKILL");
    await p.exited;
    p = serve();
    // Committed entries are listed at once (the device unavailable until detection finds it again).
    const before = await eventually(async () => dev(), 10000, 50);
    expect(before.audioCount as number).toBeGreaterThan(0);
    expect(before.audioCount as number).toBeLessThan(FILES);
    await eventually(async () => {
      const d = await dev();
      return d?.state === "idle" && d.available && d.audioCount === FILES;
    }, 20000, 100);
    expect(((await c.call("mediaindexer", "getAudioList", { count: FILES })).audioList as Json).count).toBe(FILES);
  } finally {
    p.kill();
    await p.exited;
    await env.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 60000);
