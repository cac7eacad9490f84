// A full disk told the truth: the cache's directories on small tmpfs mounts (the test
// runs as root), filled to the last block or inode. availSpace is the file system's
// free space when that is less than the cache's own; an insert that cannot be stored
// answers -199 and leaves nothing behind (no file, no row, no bytes counted), and the
// cache works again once there is room.
import { test, expect, afterAll, afterEach } from "bun:test";
import { Database } from "bun:sqlite";
import { appendFileSync, closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, statfsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fcEnv, expectError, BLOCK, fillBlocks, type FcEnv } from "./env";
import { storageCode } from "../../src/services/filecache/backend/files";

const MiB = 1024 * 1024;
const skip = process.getuid?.() !== 0 ? "needs root (mount)" : null;
const base = mkdtempSync(join(tmpdir(), "fc-diskfull-"));
const mounts: string[] = [];
let t: FcEnv | undefined;

function mountTmpfs(name: string, options: string): string {
  const dir = join(base, name);
  mkdirSync(dir);
  const r = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", options, "tmpfs", dir]);
  if (r.exitCode !== 0) throw new Error(`mount ${dir}: ${r.stderr.toString()}`);
  mounts.push(dir);
  return dir;
}


/** Creates empty files until the file system holding dir has no inode left. */
function fillInodes(dir: string): string {
  const d = join(dir, "fillers");
  mkdirSync(d);
  for (let i = 0; ; i++) {
    try {
      closeSync(openSync(join(d, String(i)), "w"));
    } catch (e: any) {
      if (e.code === "ENOSPC") return d;
      throw e;
    }
  }
}

const rows = (db: string) => {
  const d = new Database(db, { readonly: true });
  try {
    return (d.query("SELECT count(*) AS n FROM objects").get() as { n: number }).n;
  } finally {
    d.close();
  }
};

const freeOf = (dir: string) => {
  const s = statfsSync(dir);
  return Math.floor((s.bavail * s.bsize) / BLOCK) * BLOCK;
};

afterEach(async () => {
  await t?.stop();
  t = undefined;
});
afterAll(() => {
  for (const m of mounts.reverse()) Bun.spawnSync(["umount", "-l", m]);
  rmSync(base, { recursive: true, force: true });
});

/** The service with its cache directory and metadata file where given; types t (plain) and d (dirType). */
async function start(cacheDirectory: string, metadataFile: string) {
  t = await fcEnv({ totalCacheSpace: 8 * MiB, cacheDirectory, metadataFile, copyDirectory: join(base, "copies") });
  expect((await t.call("DefineType", { typeName: "t", loWatermark: 0, hiWatermark: 4 * MiB })).returnValue).toBe(true);
  expect((await t.call("DefineType", { typeName: "d", loWatermark: 0, hiWatermark: 4 * MiB, dirType: true })).returnValue).toBe(true);
  return t;
}

const expectNothingLeft = async (t: FcEnv, cacheDirectory: string, metadataFile: string) => {
  expect(await t.call("GetCacheStatus")).toMatchObject({ returnValue: true, numObjs: 0, size: 0 });
  for (const typeName of ["t", "d"]) {
    expect(await t.call("GetCacheTypeStatus", { typeName })).toEqual({ returnValue: true, size: 0, numObjs: 0 });
    expect(readdirSync(join(cacheDirectory, typeName))).toEqual([]);
  }
  expect(rows(metadataFile)).toBe(0);
};

test.skipIf(!!skip)("availSpace is the free space of the cache's file system when that is less than the cache's own; 0 when it is full", async () => {
  const fs = mountTmpfs("small", "size=1m");
  const cache = join(fs, "cache");
  const t = await start(cache, join(base, "small.db"));
  const before = await t.call("GetCacheStatus");
  // 8 MiB configured, 1 MiB of file system: the file system's figure.
  expect(before).toEqual({ returnValue: true, numTypes: 2, size: 0, numObjs: 0, availSpace: freeOf(fs) });
  expect(before.availSpace as number).toBeLessThanOrEqual(MiB);
  const filler = fillBlocks(fs);
  expect((await t.call("GetCacheStatus")).availSpace).toBe(0);
  rmSync(filler);
  expect((await t.call("GetCacheStatus")).availSpace).toBe(freeOf(fs));
}, 20000);

test.skipIf(!!skip)("InsertCacheObject on a full file system: -199 no space, and no file, row or bytes are left; inserts work again once there is room", async () => {
  const fs = mountTmpfs("full", "size=1m");
  const cache = join(fs, "cache");
  const md = join(fs, "fc.db");
  const t = await start(cache, md);
  const filler = fillBlocks(fs);
  for (const [typeName, size] of [["t", 5000], ["d", 3 * BLOCK]] as const) {
    const r = await t.call("InsertCacheObject", { typeName, fileName: "x.bin", size });
    expectError(r, -199, new RegExp(`^InsertCacheObject: no space of the requested size \\(${size} bytes\\) in type ${typeName}: `));
    expect(r.errorText as string).not.toContain(fs);
  }
  await expectNothingLeft(t, cache, md);
  rmSync(filler);
  const ok = await t.call("InsertCacheObject", { typeName: "t", fileName: "x.bin", size: 5000 });
  expect(ok.returnValue).toBe(true);
  expect(await t.call("GetCacheStatus")).toMatchObject({ numObjs: 1, size: 2 * BLOCK });
  expect(rows(md)).toBe(1);
}, 20000);

test.skipIf(!!skip)("the metadata's file system full (SQLITE_FULL at commit): -199, the object's file removed, nothing counted; the store is not left in a transaction", async () => {
  const mdfs = mountTmpfs("meta", "size=1m");
  const md = join(mdfs, "fc.db");
  const cache = join(base, "roomy-cache");
  const t = await start(cache, md);
  const filler = fillBlocks(mdfs);
  for (const [typeName, size] of [["t", 5000], ["d", 3 * BLOCK]] as const) {
    const r = await t.call("InsertCacheObject", { typeName, fileName: "x.bin", size });
    expectError(r, -199, new RegExp(`^InsertCacheObject: no space of the requested size \\(${size} bytes\\) in type ${typeName}: the cache's storage is full$`));
  }
  rmSync(filler);
  await expectNothingLeft(t, cache, md);
  // Committed for real afterwards: a restart finds the object.
  const p = (await t.call("InsertCacheObject", { typeName: "t", fileName: "y.bin", size: 100 })).pathName as string;
  expect(rows(md)).toBe(1);
  await t.restart();
  expect(await t.call("GetCacheObjectSize", { pathName: p })).toEqual({ returnValue: true, size: 100 });
}, 20000);

test.skipIf(!!skip)("no inode left for the object's file (ENOSPC at create): -199, nothing left", async () => {
  const fs = mountTmpfs("inodes", "size=4m,nr_inodes=64");
  const cache = join(fs, "cache");
  const md = join(base, "inodes.db");
  const t = await start(cache, md);
  const fillers = fillInodes(fs);
  for (const [typeName, size] of [["t", 5000], ["d", 3 * BLOCK]] as const) {
    const r = await t.call("InsertCacheObject", { typeName, fileName: "x.bin", size });
    expectError(r, -199, new RegExp(`^InsertCacheObject: no space of the requested size \\(${size} bytes\\) in type ${typeName}: the cache's storage is full$`));
  }
  await expectNothingLeft(t, cache, md);
  rmSync(fillers, { recursive: true });
  expect((await t.call("InsertCacheObject", { typeName: "t", fileName: "x.bin", size: 5000 })).returnValue).toBe(true);
}, 20000);

test.skipIf(!!skip)("ResizeCacheObject with the metadata's file system full: -194, the recorded size unchanged", async () => {
  const mdfs = mountTmpfs("meta2", "size=1m");
  const md = join(mdfs, "fc.db");
  const t = await start(join(base, "roomy-cache2"), md);
  const p = (await t.call("InsertCacheObject", { typeName: "t", fileName: "r.bin", size: 100 })).pathName as string;
  const filler = fillBlocks(mdfs);
  expectError(await t.call("ResizeCacheObject", { pathName: p, newSize: 3 * BLOCK }), -194, /^ResizeCacheObject: unable to resize .*: the cache's storage is full$/);
  expect(await t.call("GetCacheObjectSize", { pathName: p })).toEqual({ returnValue: true, size: 100 });
  expect(await t.call("GetCacheStatus")).toMatchObject({ numObjs: 1, size: BLOCK });
  rmSync(filler);
  expect(await t.call("ResizeCacheObject", { pathName: p, newSize: 3 * BLOCK })).toEqual({ returnValue: true, newSize: 3 * BLOCK });
}, 20000);

test("storage failures are told apart: full (ENOSPC, SQLITE_FULL), I/O errors (EIO, SQLITE_IOERR_*), read-only", () => {
  expect(storageCode(Object.assign(new Error("x"), { code: "ENOSPC" }))).toBe("ENOSPC");
  expect(storageCode(Object.assign(new Error("x"), { code: "EDQUOT" }))).toBe("EDQUOT");
  expect(storageCode(Object.assign(new Error("x"), { code: "SQLITE_FULL" }))).toBe("ENOSPC");
  expect(storageCode(Object.assign(new Error("x"), { code: "SQLITE_IOERR_WRITE" }))).toBe("EIO");
  expect(storageCode(Object.assign(new Error("x"), { code: "SQLITE_READONLY_DBMOVED" }))).toBe("EROFS");
  expect(storageCode(Object.assign(new Error("x"), { code: "SQLITE_CONSTRAINT_PRIMARYKEY" }))).toBeUndefined();
  expect(storageCode(new Error("no code"))).toBeUndefined();
});
