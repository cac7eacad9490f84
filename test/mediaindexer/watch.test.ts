// Changes on an indexed device are noticed without a rescan request: inotify on every
// directory (files written, moved in, moved away, deleted; directories created, moved
// in, deleted), set on the process's one shared inotify instance (src/ffi/inotify.ts).
// With watching off, the periodic fallback rescan finds them.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { mkdirSync, mkdtempSync, statSync, readdirSync, readlinkSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { miEnv, type MiEnv } from "./env";
import { mp3, jpeg, put } from "./media";
import { eventually, inotifyWatches } from "../helpers/harness";
import { dirWatchCount, watchDirectory } from "../../src/ffi/inotify";
import type { Json } from "../../src/core/errors";

let mi: MiEnv;
beforeAll(async () => {
  mi = await miEnv();
  put(join(mi.media, "start.mp3"), mp3({ title: "Start" }));
  await mi.call("requestMediaScan", { path: mi.media });
  await mi.idle();
});
afterAll(() => mi.stop());

const audioTitles = async () => (((await mi.call("getAudioList")).audioList as Json).results as Json[]).map((e) => e.title as string).sort();
const imageCount = async () => ((await mi.call("getImageList")).imageList as Json).count as number;

test("a written, rewritten, moved and deleted file is noticed", async () => {
  expect(await audioTitles()).toEqual(["Start"]);
  writeFileSync(join(mi.media, "w.mp3"), mp3({ title: "Written" }));
  await eventually(async () => (await audioTitles()).includes("Written"), 5000, 50);
  writeFileSync(join(mi.media, "w.mp3"), mp3({ title: "Rewritten", frames: 3 }));
  await eventually(async () => (await audioTitles()).includes("Rewritten"), 5000, 50);
  renameSync(join(mi.media, "w.mp3"), join(mi.media, "moved.mp3"));
  await eventually(async () => (await mi.call("getAudioMetadata", { uri: `storage://${mi.media}/moved.mp3` })).returnValue, 5000, 50);
  expect(await audioTitles()).toEqual(["Rewritten", "Start"]);
  rmSync(join(mi.media, "moved.mp3"));
  await eventually(async () => JSON.stringify(await audioTitles()) === JSON.stringify(["Start"]), 5000, 50);
});

test("directories created, moved in and deleted are followed", async () => {
  mkdirSync(join(mi.media, "new/deeper"), { recursive: true });
  // The new directories get their watches (the service runs in this process).
  const inodes = [join(mi.media, "new"), join(mi.media, "new/deeper")].map((d) => statSync(d).ino);
  await eventually(() => { const w = inotifyWatches(); return inodes.every((i) => w.has(i)); }, 5000);
  writeFileSync(join(mi.media, "new/deeper/d.jpg"), jpeg({ width: 5, height: 5 }));
  await eventually(async () => (await imageCount()) === 1, 5000, 50);
  const outside = mkdtempSync(join(tmpdir(), "mediaindexer-moved-"));
  put(join(outside, "album/x.jpg"), jpeg({ width: 6, height: 6 }));
  put(join(outside, "album/y.jpg"), jpeg({ width: 7, height: 7 }));
  renameSync(join(outside, "album"), join(mi.media, "new/album"));
  rmSync(outside, { recursive: true });
  await eventually(async () => (await imageCount()) === 3, 5000, 50);
  rmSync(join(mi.media, "new"), { recursive: true });
  await eventually(async () => (await imageCount()) === 0, 5000, 50);
  expect(await mi.device(`storage://${mi.media}`)).toMatchObject({ imageCount: 0, audioCount: 1 });
});

/** The inotify instances this process has open (fds on anon_inode:inotify). */
const inotifyInstances = () =>
  readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === "anon_inode:inotify";
    } catch {
      return false;
    }
  }).length;

test("the watches are on the process's one shared inotify instance, not an instance of their own", async () => {
  mkdirSync(join(mi.media, "shared/one"), { recursive: true });
  mkdirSync(join(mi.media, "shared/two"), { recursive: true });
  // Another user of the shared instance (as intent or the camera is in the same process).
  const other = mkdtempSync(join(tmpdir(), "mediaindexer-other-"));
  const w = watchDirectory(other, () => {});
  try {
    // The media root, shared/, shared/one and shared/two are watched on it, beside the other watch.
    await eventually(() => dirWatchCount() >= 1 + 4, 5000, 20);
    expect(inotifyInstances()).toBe(1);
    writeFileSync(join(mi.media, "shared/two/s.mp3"), mp3({ title: "Shared" }));
    await eventually(async () => (await audioTitles()).includes("Shared"), 5000, 50);
  } finally {
    w.close();
    rmSync(other, { recursive: true, force: true });
    rmSync(join(mi.media, "shared"), { recursive: true, force: true });
  }
  await eventually(async () => !(await audioTitles()).includes("Shared"), 5000, 50);
});

test("with watching off, the fallback rescan finds changes", async () => {
  await mi.start({ watch: false, fallbackRescanInterval: 1 });
  await mi.idle();
  put(join(mi.media, "late.mp3"), mp3({ title: "Late" }));
  await eventually(async () => (await audioTitles()).includes("Late"), 5000, 100);
});
