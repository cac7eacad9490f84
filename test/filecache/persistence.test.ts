// Persistence: types, objects and their metadata survive a restart; a SIGKILLed
// service loses no space and leaves no half-written object or orphan file behind;
// FileCache.conf and the state directory.
import { test, expect, afterEach } from "bun:test";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { testEnv, spawnScript, type Env } from "../helpers/harness";
import { BusClient } from "../../src/bus/client";
import { FC, BLOCK } from "./env";
import type { Json } from "../../src/core/errors";

let env: Env | undefined;
afterEach(async () => {
  await env?.stop();
  env = undefined;
});

const board = (cfg: Json = {}) => ({ serviceConfig: { filecache: { configFile: null, totalCacheSpace: 1024 * 1024, ...cfg } } }) as any;

async function setup() {
  env = await testEnv();
  const c = await env.client();
  return { env, c, call: (m: string, p: Json = {}) => c.call(FC, m, p) };
}

test("types, objects and their metadata survive a restart", async () => {
  const { env, call } = await setup();
  await env.start(["filecache"], board());
  await call("DefineType", { typeName: "keep", loWatermark: 8192, hiWatermark: 65536, size: 100, cost: 3, lifetime: 10 });
  await call("DefineType", { typeName: "dirs", loWatermark: 0, hiWatermark: 65536, dirType: true });
  await call("DefineType", { typeName: "small", loWatermark: 1000, hiWatermark: 2000 });
  const a = (await call("InsertCacheObject", { typeName: "keep", fileName: "a.png", size: 5000 })).pathName as string;
  writeFileSync(a, Buffer.alloc(4000));
  const b = (await call("InsertCacheObject", { typeName: "keep", fileName: "b.txt" })).pathName as string;
  const d = (await call("InsertCacheObject", { typeName: "dirs", fileName: "set", size: 8193 })).pathName as string;
  writeFileSync(join(d, "f"), "x");
  const before = await call("GetCacheStatus");
  await env.start(["filecache"], board());
  expect(await call("GetCacheStatus")).toEqual(before);
  expect(await call("GetCacheTypes")).toEqual({ returnValue: true, types: ["dirs", "keep", "small"] });
  expect(await call("DescribeType", { typeName: "keep" })).toEqual({ returnValue: true, loWatermark: 8192, hiWatermark: 65536, size: 100, cost: 3, lifetime: 10 });
  // Watermarks are kept as given (reported padded): ChangeType still compares the given values.
  expect(await call("DescribeType", { typeName: "small" })).toMatchObject({ loWatermark: BLOCK, hiWatermark: BLOCK });
  expect((await call("ChangeType", { typeName: "small", loWatermark: 2500 })).errorCode).toBe(-200);
  expect(await call("ChangeType", { typeName: "small", loWatermark: 1500 })).toEqual({ returnValue: true });
  expect(await call("GetCacheObjectFilename", { pathName: a })).toEqual({ returnValue: true, fileName: "a.png" });
  expect(await call("GetCacheObjectSize", { pathName: a })).toEqual({ returnValue: true, size: 5000 });
  expect(await call("GetCacheObjectSize", { pathName: b })).toEqual({ returnValue: true, size: 100 });
  expect(await call("GetCacheObjectSize", { pathName: d })).toEqual({ returnValue: true, size: 8193 });
  // New objects never reuse the name of an expired one, even across restarts.
  await call("ExpireCacheObject", { pathName: b });
  await env.start(["filecache"], board());
  const c = (await call("InsertCacheObject", { typeName: "keep", fileName: "b.txt" })).pathName as string;
  expect(c).not.toBe(b);
  expect(await call("GetCacheObjectSize", { pathName: b })).toMatchObject({ returnValue: false, errorCode: -199 });
});

test("start-up reconciliation: orphan files removed, rows without a file dropped, files larger than declared removed", async () => {
  const { env, call } = await setup();
  await env.start(["filecache"], board());
  await call("DefineType", { typeName: "t", loWatermark: 0, hiWatermark: 65536, size: 100 });
  const gone = (await call("InsertCacheObject", { typeName: "t", fileName: "gone" })).pathName as string;
  const big = (await call("InsertCacheObject", { typeName: "t", fileName: "big" })).pathName as string;
  const fine = (await call("InsertCacheObject", { typeName: "t", fileName: "fine" })).pathName as string;
  await env.stopServices();
  const cacheDir = join(env.stateDir, "filecache", "cache");
  unlinkSync(gone);
  writeFileSync(big, Buffer.alloc(101));
  writeFileSync(join(cacheDir, "t", "000000ff.bin"), "orphan");
  writeFileSync(join(cacheDir, "t", "junk"), "orphan");
  mkdirSync(join(cacheDir, "undefined-type", "x"), { recursive: true });
  await env.start(["filecache"], board());
  expect(readdirSync(cacheDir)).toEqual(["t"]);
  expect(readdirSync(join(cacheDir, "t"))).toEqual([fine.split("/").pop()!]);
  expect(await call("GetCacheStatus")).toEqual({ returnValue: true, numTypes: 1, size: BLOCK, numObjs: 1, availSpace: 1024 * 1024 - BLOCK });
  expect(await call("GetCacheTypeStatus", { typeName: "t" })).toEqual({ returnValue: true, size: BLOCK, numObjs: 1 });
});

test("SIGKILL of the service: an object whose write never completed and one marked for removal are gone after restart", async () => {
  const { env, c, call } = await setup();
  const dir = join(env.stateDir, "served");
  // The service as its own process; no FileCache.conf on this host, so it all lives under --state-dir.
  const cli = () =>
    spawnScript("src/main.ts", ["serve", "--bus", env.bus.address, "--state-dir", dir, "--log-level", "info", "filecache"], {
      DEVSERVICES_BOARD: "virtual",
    });
  let svc = cli();
  await svc.waitFor("devservices ready");
  await call("DefineType", { typeName: "t", loWatermark: 0, hiWatermark: 65536, size: 100 });
  const done = (await call("InsertCacheObject", { typeName: "t", fileName: "done.txt" })).pathName as string;
  expect(done.startsWith(join(dir, "filecache", "cache", "t") + "/")).toBe(true);
  expect(existsSync(join(dir, "filecache", "filecache.db"))).toBe(true);
  const w = await c.subscribe(FC, "InsertCacheObject", { typeName: "t", fileName: "half.txt" }, () => {});
  const half = w.first.pathName as string;
  writeFileSync(half, "half");
  const held = (await call("InsertCacheObject", { typeName: "t", fileName: "held.txt" })).pathName as string;
  const h = await c.subscribe(FC, "SubscribeCacheObject", { pathName: held }, () => {});
  expect(h.first.subscribed).toBe(true);
  expect((await call("ExpireCacheObject", { pathName: held })).errorCode).toBe(-198);
  expect(await call("GetCacheStatus")).toMatchObject({ numObjs: 3, size: 3 * BLOCK });
  await svc.kill("SIGKILL");

  svc = cli();
  await svc.waitFor("devservices ready");
  expect(await call("GetCacheStatus")).toEqual({ returnValue: true, numTypes: 1, size: BLOCK, numObjs: 1, availSpace: 100 * 1024 * 1024 - BLOCK });
  expect(existsSync(half)).toBe(false);
  expect(existsSync(held)).toBe(false);
  expect(existsSync(done)).toBe(true);
  await svc.kill("SIGTERM");
});

test("FileCache.conf: its options override the recipe's; a smaller totalCacheSpace at start evicts down to it", async () => {
  const { env, call } = await setup();
  const conf = join(env.stateDir, "FileCache.conf");
  const cacheDirectory = join(env.stateDir, "elsewhere", "cache");
  const metadataFile = join(env.stateDir, "elsewhere", "meta", "fc.db");
  writeFileSync(conf, `# test configuration\ntotalCacheSpace 64K\ncacheDirectory ${cacheDirectory}\nmetadataFile = ${metadataFile}\ndefaultCost 9\n`);
  await env.start(["filecache"], board({ configFile: conf, defaultCost: 2 }));
  expect(await call("GetCacheStatus")).toMatchObject({ availSpace: 65536 });
  await call("DefineType", { typeName: "t", loWatermark: 0, hiWatermark: 65536, size: 100 });
  expect(await call("DescribeType", { typeName: "t" })).toMatchObject({ cost: 9 });
  const paths: string[] = [];
  for (let i = 0; i < 16; i++) paths.push((await call("InsertCacheObject", { typeName: "t", fileName: `${i}.txt` })).pathName as string);
  expect(paths[0]!.startsWith(cacheDirectory + "/t/")).toBe(true);
  expect(existsSync(metadataFile)).toBe(true);
  expect(existsSync(join(env.stateDir, "filecache", "cache"))).toBe(false);
  await env.stopServices();
  writeFileSync(conf, `totalCacheSpace 32768\ncacheDirectory ${cacheDirectory}\nmetadataFile ${metadataFile}\n`);
  await env.start(["filecache"], board({ configFile: conf }));
  expect(await call("GetCacheStatus")).toEqual({ returnValue: true, numTypes: 1, size: 32768, numObjs: 8, availSpace: 0 });
  expect(paths.filter((p) => existsSync(p))).toEqual(paths.slice(8));
  rmSync(conf);
});

test("a stopped service closes its metadata database for real: no -wal or -shm file is left for a later close to checkpoint", async () => {
  const { env, call } = await setup();
  await env.start(["filecache"], board());
  await call("DefineType", { typeName: "t", loWatermark: 0, hiWatermark: 65536, size: 100 });
  await call("InsertCacheObject", { typeName: "t", fileName: "a" });
  const db = join(env.stateDir, "filecache", "filecache.db");
  expect(existsSync(`${db}-wal`)).toBe(true);
  await env.stopServices();
  // A connection left open (unfinalized statements) would keep both until garbage
  // collection closed it, checkpointing under an exclusive lock at any later moment.
  expect(existsSync(`${db}-wal`)).toBe(false);
  expect(existsSync(`${db}-shm`)).toBe(false);
});

test("a start while another process holds the metadata database waits for it instead of failing with SQLITE_BUSY", async () => {
  const { env, call } = await setup();
  await env.start(["filecache"], board());
  await env.stopServices();
  const db = join(env.stateDir, "filecache", "filecache.db");
  // Another process holds the file exclusively for 300 ms (as a closing connection's checkpoint does).
  const holder = spawnScript("test/fixtures/sqlite-lock-holder.ts", [db, "300"]);
  await holder.waitFor("LOCKED");
  const t0 = performance.now();
  await env.start(["filecache"], board());
  expect(performance.now() - t0).toBeGreaterThanOrEqual(200);
  expect(await call("GetCacheStatus")).toMatchObject({ returnValue: true, numObjs: 0 });
  await holder.proc.exited;
});
