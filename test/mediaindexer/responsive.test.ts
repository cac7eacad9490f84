// Nothing blocks the bus during a scan: while 10,000 files are scanned, getDeviceList
// (answered by the same process and the same main thread) answers within 20 ms:
// files are compared and parsed on a background thread (lower priority) and database
// writes are small batches. Meanwhile a list subscription receives the new entries,
// at most count per message.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { miEnv, type MiEnv } from "./env";
import { eventually } from "../helpers/harness";
import { mp3, jpeg } from "./media";
import type { Json } from "../../src/core/errors";

const FILES = 10_000;
let mi: MiEnv;
beforeAll(async () => {
  mi = await miEnv({ detect: false });
  // 100 directories of 100 files: MP3s with tags and JPEGs with EXIF (small: one frame, no scan data).
  const song = mp3({ title: "Song", artist: "Artist", album: "Album", frames: 1 });
  const photo = jpeg({ width: 320, height: 240, date: "2021:01:01 00:00:00", lat: 1, lon: 2 });
  for (let d = 0; d < 100; d++) {
    const dir = join(mi.media, `d${d}`);
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < 100; f++) writeFileSync(join(dir, f % 2 ? `s${f}.mp3` : `p${f}.jpg`), f % 2 ? song : photo);
  }
  // Writing 10,000 files takes more than the hook's default 5 s on a busy machine.
}, 60_000);
afterAll(() => mi.stop());

test(`getDeviceList answers within 20 ms while ${FILES} files are scanned`, async () => {
  // A list subscription receives the images as they are indexed, at most count per message.
  let scanningNow = true;
  const pushes: { count: number; during: boolean }[] = [];
  const sub = await mi.client.subscribe("com.vendor.service.mediaindexer", "getImageList", { subscribe: true, count: 100 }, (m) => {
    pushes.push({ count: ((m.imageList as Json).results as Json[]).length, during: scanningNow });
  });
  expect((sub.first.imageList as Json).count).toBe(0);
  const t0 = performance.now();
  // requestMediaScan answers when the scan ends (its outcome); getDeviceList is called meanwhile.
  const answer = mi.call("requestMediaScan", { path: mi.media });
  await eventually(async () => (await mi.device(`storage://${mi.media}`))?.state === "scanning", 5000, 5);
  const latencies: number[] = [];
  let scanning = 0;
  for (;;) {
    const t = performance.now();
    const r = await mi.call("getDeviceList");
    latencies.push(performance.now() - t);
    const dev = ((r.pluginList as Json[])[0]!.deviceList as Json[])[0]!;
    if (dev.state !== "scanning") {
      scanningNow = false;
      expect(dev).toMatchObject({ audioCount: FILES / 2, imageCount: FILES / 2 });
      break;
    }
    scanning++;
    await Bun.sleep(5);
  }
  const scanMs = performance.now() - t0;
  expect(await answer).toMatchObject({ returnValue: true, errorCode: 0, errorText: "No error", completed: true, files: FILES, indexed: FILES, failed: 0 });
  console.log(latencies.map((l) => l.toFixed(0)).join(" "));
  latencies.sort((a, b) => a - b);
  const p = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!.toFixed(1);
  console.log(`scan of ${FILES} files: ${scanMs.toFixed(0)} ms; ${latencies.length} getDeviceList calls during it: median ${p(0.5)} ms, p99 ${p(0.99)} ms, max ${latencies.at(-1)!.toFixed(1)} ms`);
  expect(scanning).toBeGreaterThan(20);
  // The goal is 20 ms; machines running this are shared (load averages of 5-9 seen), so
  // the bound is on the 95th percentile, and the single worst call is allowed a scheduler
  // pause (as in the platform tests): a loop blocked by the scan would hold calls for seconds.
  expect(Number(p(0.95))).toBeLessThan(20);
  expect(latencies.at(-1)!).toBeLessThan(1000);
  await eventually(() => pushes.reduce((n, p) => n + p.count, 0) === FILES / 2, 5000);
  expect(pushes.every((p) => p.count > 0 && p.count <= 100)).toBe(true);
  expect(pushes.filter((p) => p.during).length).toBeGreaterThan(10);
  await sub.cancel();
}, 60_000);
