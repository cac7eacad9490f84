// Threads that start at first use and end when idle (docs/performance.md): the media
// indexer's metadata thread (extractor.ts) is not running before its first request,
// runs while requests are in flight, ends once none has been for its idle time, and
// a request after that starts a new thread and is answered. Threads are counted from
// /proc/self/task (Bun names a Worker's thread "Worker").
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Extractor } from "../../src/services/mediaindexer/index/extractor";
import { wav } from "../../src/cli/demo-media";
import { eventually } from "../helpers/harness";

const dir = mkdtempSync(join(tmpdir(), "footprint-workers-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const workerThreads = () =>
  readdirSync("/proc/self/task").filter((t) => {
    try {
      return readFileSync(`/proc/self/task/${t}/comm`, "utf8").trim() === "Worker";
    } catch {
      return false; // the thread ended while listed
    }
  }).length;

test("the media indexer's metadata thread starts on first use, ends when idle, and a request after that is answered", async () => {
  const song = join(dir, "song.wav");
  writeFileSync(song, wav({ title: "Tone", artist: "Bench", album: "Idle", genre: "Test" }, 440, 0.2));
  const size = readFileSync(song).length;
  const before = workerThreads();
  const x = new Extractor(join(dir, "thumbnails"), 30_000, 300);
  try {
    // Not started by its construction.
    expect(workerThreads()).toBe(before);
    const first = await x.extract(song, "audio", "audio/wav", size);
    expect(first.title).toBe("Tone");
    // It ends once idle: the process is back to the threads it had.
    await eventually(() => workerThreads() === before, 10_000);
    // A request after it ended starts a new thread and is answered.
    const again = await x.extract(song, "audio", "audio/wav", size);
    expect(again.title).toBe("Tone");
    expect(workerThreads()).toBe(before + 1);
    // A WAL checkpoint is in flight like any request and the thread ends after it.
    x.checkpoint(join(dir, "absent.db"));
    await eventually(() => workerThreads() === before, 10_000);
  } finally {
    x.close();
  }
}, 30_000);
