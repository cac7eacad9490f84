// Failures are answered as such: a database or thumbnail directory whose file system
// fills up during a scan stops it with -1 "Scan Failed" and errno ENOSPC, the path and
// the free space statvfs reports; what was written before is whole entries, the batch
// in flight is rolled back and no half-written thumbnail stays; with space again the
// next scan completes. A scan of a path that is not a directory, and one whose every
// media file fails to parse, fail too. The file systems are small tmpfs mounts.
import { test, expect, beforeAll, afterAll, describe } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, statfsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { miEnv, type MiEnv } from "./env";
import { mp3, put, PNG_1x1 } from "./media";
import type { Json } from "../../src/core/errors";

const skip = process.getuid?.() !== 0 ? "needs root (mount)" : null;
const base = mkdtempSync(join(tmpdir(), "mediaindexer-full-"));
const mounts: string[] = [];
const mount = (dir: string, options: string) => {
  mkdirSync(dir, { recursive: true });
  const r = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", options, "tmpfs", dir]);
  if (r.exitCode !== 0) throw new Error(`mount ${dir}: ${r.stderr.toString()}`);
  if (!mounts.includes(dir)) mounts.push(dir);
};
afterAll(() => {
  for (const m of mounts.reverse()) Bun.spawnSync(["umount", "-l", m]);
  rmSync(base, { recursive: true, force: true });
});
const free = (dir: string) => {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
};
const audio = async (mi: MiEnv, uri: string) => ((await mi.call("getAudioList", { uri, count: 5000 })).audioList as Json).results as Json[];

describe.skipIf(!!skip)("the database's file system fills up", () => {
  const FILES = 990;
  const fs = join(base, "dbfs");
  let mi: MiEnv;
  let media: string;
  const long = (c: string) => c.repeat(1200);
  beforeAll(async () => {
    mount(fs, "size=1m");
    mi = await miEnv({ detect: false, database: join(fs, "db", "media.db") });
    media = join(mi.media, "many");
    for (let i = 0; i < FILES; i++) put(join(media, `d${i % 10}`, `s${i}.mp3`), mp3({ title: `${i} ${long("t")}`, artist: long("a"), frames: 1 }));
  });
  afterAll(() => mi?.stop());

  test("the scan stops with Scan Failed, ENOSPC, the path and statvfs's free space; entries written are whole", async () => {
    const r = await mi.call("requestMediaScan", { path: media });
    expect(r).toMatchObject({ returnValue: false, errorCode: -1, errorText: "Scan Failed", errno: "ENOSPC" });
    expect((r.path as string).startsWith(`${fs}/`)).toBe(true);
    expect(typeof r.freeBytes).toBe("number");
    expect(r.freeBytes as number).toBeLessThanOrEqual(statfsSync(fs).blocks * statfsSync(fs).bsize);
    expect(Math.abs((r.freeBytes as number) - free(fs))).toBeLessThanOrEqual(64 * 1024);
    expect(r.reason as string).toContain("no space left");
    expect(r.indexed as number).toBeLessThan(FILES);
    const dev = (await mi.device(`storage://${media}`))!;
    expect(dev).toMatchObject({ available: true, state: "idle", lastScan: { ok: false, errno: "ENOSPC" } });
    // What is listed is what was committed: the device's count, each entry whole.
    const list = await audio(mi, `storage://${media}`);
    expect(list.length).toBe(dev.audioCount as number);
    expect(list.length).toBeLessThan(FILES);
    for (const e of list) {
      expect((e.title as string).length).toBeGreaterThan(1200);
      expect(e.artist).toBe(long("a"));
    }
  });

  test("with space again, the next scan completes", async () => {
    mount(fs, "remount,size=16m");
    const r = await mi.call("requestMediaScan", { path: media });
    expect(r).toMatchObject({ returnValue: true, errorCode: 0, errorText: "No error", completed: true, files: FILES, failed: 0 });
    expect(await mi.device(`storage://${media}`)).toMatchObject({ audioCount: FILES, lastScan: { ok: true } });
    expect((await audio(mi, `storage://${media}`)).length).toBe(FILES);
  });
});

describe.skipIf(!!skip)("the thumbnail directory's file system fills up", () => {
  const fs = join(base, "thumbfs");
  let mi: MiEnv;
  beforeAll(async () => {
    mount(fs, "size=256k");
    mi = await miEnv({ detect: false, thumbnailDir: fs });
    // Distinct cover pictures of 16 KiB: one thumbnail file each.
    for (let i = 0; i < 60; i++) {
      const cover = Buffer.concat([PNG_1x1, Buffer.alloc(16 * 1024, i)]);
      put(join(mi.media, "covers", `c${i}.mp3`), mp3({ title: `C${i}`, cover, frames: 1 }));
    }
  });
  afterAll(() => mi?.stop());

  test("Scan Failed, ENOSPC on the thumbnail directory; no temporary file stays, no entry without its thumbnail", async () => {
    const r = await mi.call("requestMediaScan", { path: join(mi.media, "covers") });
    expect(r).toMatchObject({ returnValue: false, errorCode: -1, errorText: "Scan Failed", errno: "ENOSPC", path: fs });
    expect(readdirSync(fs).filter((f) => f.includes(".tmp"))).toEqual([]);
    const list = await audio(mi, `storage://${mi.media}`);
    expect(list.length).toBeLessThan(60);
    for (const e of list) {
      expect(e.thumbnail as string).toMatch(/\.png$/);
      expect(statSync(e.thumbnail as string).size).toBe(PNG_1x1.length + 16 * 1024);
    }
  });
});

describe("scans that fail without a full disk", () => {
  let mi: MiEnv;
  beforeAll(async () => {
    mi = await miEnv({ detect: false });
  });
  afterAll(() => mi?.stop());

  test("every media file fails to parse: Scan Failed with the count", async () => {
    const bad = join(mi.media, "bad");
    for (let i = 0; i < 5; i++) put(join(bad, `noise${i}.mp3`), Buffer.alloc(3000, 0x55));
    const r = await mi.call("requestMediaScan", { path: bad });
    expect(r).toMatchObject({ returnValue: false, errorCode: -1, errorText: "Scan Failed", files: 5, failed: 5, indexed: 0 });
    expect(r.reason).toBe("none of the 5 media files could be read");
  });

  test("a path that is not a directory: Scan Failed with errno ENOTDIR", async () => {
    put(join(mi.media, "file.mp3"), mp3({ title: "F" }));
    const r = await mi.call("requestMediaScan", { path: join(mi.media, "file.mp3") });
    expect(r).toMatchObject({ returnValue: false, errorCode: -1, errorText: "Scan Failed", errno: "ENOTDIR", path: join(mi.media, "file.mp3") });
  });
});
