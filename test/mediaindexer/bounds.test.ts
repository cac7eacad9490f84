// A scan's cost is bounded: the inotify watches of all devices together stay within
// maxWatches (the directories past it are rescanned every fallbackRescanInterval, and
// the device list says so: monitor "inotify+rescan"), and a scan holds at most a few
// batches of scanBatchFiles files of a directory listing at once, whatever the size of
// the directory (read as a stream; files gone from a directory larger than a batch are
// found a page of rows at a time).
import { test, expect, afterAll } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { miEnv } from "./env";
import { jpeg, mp3, put } from "./media";
import { eventually } from "../helpers/harness";
import { MediaStore } from "../../src/services/mediaindexer/index/store";
import { Scanner } from "../../src/services/mediaindexer/index/scanner";
import { configureLogging } from "../../src/core/log";

/** inotify watches this process holds (every inotify fd's fdinfo lists one line per watch). */
function watchesOfThisProcess(): number {
  let n = 0;
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      if (!readlinkSync(`/proc/self/fd/${fd}`).includes("inotify")) continue;
      n += (readFileSync(`/proc/self/fdinfo/${fd}`, "utf8").match(/^inotify wd:/gm) ?? []).length;
    } catch {}
  }
  return n;
}

test("at most maxWatches inotify watches; the directories past it are rescanned, and the device list says so", async () => {
  const mi = await miEnv({ detect: false, maxWatches: 5, fallbackRescanInterval: 1 });
  try {
    const DIRS = 12;
    for (let d = 0; d < DIRS; d++) put(join(mi.media, `a${d}`, "first.mp3"), mp3({ title: `first ${d}` }));
    expect((await mi.call("requestMediaScan", { path: mi.media })).returnValue).toBe(true);
    const uri = `storage://${mi.media}`;
    await eventually(async () => (await mi.device(uri))?.monitor === "inotify+rescan", 5000, 20);
    expect(watchesOfThisProcess()).toBeLessThanOrEqual(5);
    expect(await mi.device(uri)).toMatchObject({ available: true, audioCount: DIRS, monitor: "inotify+rescan" });
    // New files in every directory, watched or not, are indexed: by inotify, or by the rescan of the others.
    for (let d = 0; d < DIRS; d++) put(join(mi.media, `a${d}`, "second.mp3"), mp3({ title: `second ${d}` }));
    await eventually(async () => (await mi.device(uri))?.audioCount === 2 * DIRS, 10000, 50);
    expect(watchesOfThisProcess()).toBeLessThanOrEqual(5);
  } finally {
    await mi.stop();
  }
}, 30000);

const dir = mkdtempSync(join(tmpdir(), "mediaindexer-bounds-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a directory of 600 files scanned in batches of 50: at most 5 batches held; files gone found without holding the directory", async () => {
  const log = configureLogging("silent");
  const store = new MediaStore(join(dir, "db", "media.db"));
  const scanner = new Scanner({ store, log, thumbnailDir: join(dir, "thumbs"), concurrency: 4, batchFiles: 50, hooks: { changed() {} } });
  try {
    const media = join(dir, "media");
    const photo = jpeg({ width: 4, height: 3 });
    for (let i = 0; i < 600; i++) put(join(media, "big", `p${i}.jpg`), photo);
    const target = { device: "storage://bounds", root: media, sub: "", recursive: true };
    const first = await scanner.scan(target);
    expect(first).toMatchObject({ files: 600, indexed: 600, failed: 0, aborted: false });
    expect(first.error).toBeUndefined();
    expect(first.peakEntries).toBeGreaterThan(0);
    expect(first.peakEntries).toBeLessThanOrEqual(5 * 50);
    for (let i = 0; i < 100; i++) rmSync(join(media, "big", `p${i}.jpg`));
    const second = await scanner.scan(target);
    expect(second).toMatchObject({ files: 500, unchanged: 500, indexed: 0, removed: 100 });
    expect(second.peakEntries).toBeLessThanOrEqual(5 * 50);
    expect(store.dirPage("storage://bounds", "big", "", 1000).length).toBe(500);
  } finally {
    scanner.close();
    store.close();
  }
}, 30000);
