// The file cache keeps working on a full disk: the service in a process of its own
// (`bun src/main.ts serve`, its stdout and stderr read), its cache directory and
// metadata on small tmpfs mounts filled to the last block. GetCacheStatus answers,
// ExpireCacheObject frees the object's space and its row, a write closed on the full
// disk never fails the event source's callback (nothing raw on stderr), and what could
// not be stored while the disk was full is stored once there is room again.
import { test, expect, afterAll, afterEach } from "bun:test";
import { Database } from "bun:sqlite";
import { appendFileSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, statSync, statfsSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import type { Json } from "../../src/core/errors";
import { BUN, ROOT, eventually } from "../helpers/harness";
import { FC, BLOCK, fillBlocks as fill } from "./env";

const MiB = 1024 * 1024;
const skip = process.getuid?.() !== 0 ? "needs root (mount)" : null;
const base = mkdtempSync(join(tmpdir(), "fc-fulldisk-"));
const mounts: string[] = [];

function mountTmpfs(name: string, size: string): string {
  const dir = join(base, name);
  mkdirSync(dir);
  const r = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir]);
  if (r.exitCode !== 0) throw new Error(`mount ${dir}: ${r.stderr.toString()}`);
  mounts.push(dir);
  return dir;
}


const freeOf = (dir: string) => {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
};

const rows = (db: string): number[] => {
  const d = new Database(db, { readonly: true });
  try {
    return (d.query("SELECT id FROM objects ORDER BY id").all() as { id: number }[]).map((r) => r.id);
  } finally {
    d.close();
  }
};

const idOf = (pathName: string) => parseInt(pathName.split("/").pop()!.split(".")[0]!, 16);

interface Served {
  call(method: string, payload?: Json): Promise<Json>;
  /** The service's stdout (its structured log lines) and stderr so far (all of it after stop()). */
  out(): string;
  err(): string;
  stop(): Promise<void>;
}

let served: Served | undefined;

/** The file cache alone in its own process on a private bus; the test calls it as root. */
async function serve(config: Json): Promise<Served> {
  const dir = mkdtempSync(join(base, "serve-"));
  const board = join(dir, "board.json");
  writeFileSync(
    board,
    JSON.stringify({ name: "filecache-fulldisk", backend: "virtual", services: ["filecache"], serviceConfig: { filecache: { configFile: null, copyDirectory: join(dir, "copies"), ...config } } }),
  );
  const bus: PrivateBus = await startPrivateBus();
  const proc: Subprocess<"ignore", "pipe", "pipe"> = spawn(
    [BUN, join(ROOT, "src/main.ts"), "serve", "--bus", bus.address, "--board", board, "--state-dir", join(dir, "state"), "--log-level", "warn", "filecache"],
    { cwd: ROOT, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
  );
  let out = "";
  let err = "";
  let stopped: Promise<void> | undefined;
  const read = async (s: ReadableStream<Uint8Array>, add: (t: string) => void) => {
    const d = new TextDecoder();
    for await (const c of s) add(d.decode(c));
  };
  const reading = Promise.all([read(proc.stdout, (t) => (out += t)), read(proc.stderr, (t) => (err += t))]);
  const client = await BusClient.connect(bus.address);
  await eventually(async () => {
    if (proc.exitCode !== null) throw new Error(`the file cache exited (${proc.exitCode}):\n${out}\n${err}`);
    return client.hasOwner(FC);
  }, 20000, 50);
  return {
    call: (method, payload = {}) => client.call(FC, method, payload),
    out: () => out,
    err: () => err,
    /** Stops the service; its output is then read to the end. */
    async stop() {
      if (stopped) return stopped;
      stopped = (async () => {
        client.close();
        proc.kill("SIGTERM");
        await proc.exited;
        await reading;
        await bus.stop();
      })();
      return stopped;
    },
  };
}

afterEach(async () => {
  await served?.stop();
  served = undefined;
});
afterAll(() => {
  for (const m of mounts.reverse()) Bun.spawnSync(["umount", "-l", m]);
  rmSync(base, { recursive: true, force: true });
});

/** What the event source prints when a callback throws: never, for the file cache's. */
const RAW_CALLBACK_FAILURE = /callback of fd \d+ failed/;

async function started(config: Json) {
  served = await serve({ totalCacheSpace: 64 * MiB, ...config });
  expect((await served.call("DefineType", { typeName: "t", loWatermark: 0, hiWatermark: 32 * MiB })).returnValue).toBe(true);
  return served;
}

async function insert(s: Served, size: number, fileName = "x.bin"): Promise<string> {
  const r = await s.call("InsertCacheObject", { typeName: "t", fileName, size });
  expect(r.returnValue).toBe(true);
  // The service closed the new file: its IN_CLOSE_WRITE is read before the next calls are answered,
  // so what the test writes next is not judged by that event.
  for (let i = 0; i < 3; i++) await s.call("GetVersion");
  return r.pathName as string;
}

test.skipIf(!!skip)("GetCacheStatus answers on a full disk, also when removing an object written larger than declared cannot be stored at first", async () => {
  const disk = mountTmpfs("status", "4m");
  const md = join(disk, "fc.db");
  const s = await started({ cacheDirectory: join(disk, "cache"), metadataFile: md });
  const keep = await insert(s, 2 * BLOCK, "keep.bin");
  writeFileSync(keep, Buffer.alloc(2 * BLOCK, 1));
  const over = await insert(s, BLOCK, "over.bin");
  // Written past its declaration by a writer that has not closed it: found by the status call.
  const fd = openSync(over, "w");
  try {
    writeSync(fd, Buffer.alloc(3 * BLOCK, 2));
    fill(disk);
    expect(freeOf(disk)).toBe(0);
    expect(rows(md)).toEqual([idOf(keep), idOf(over)]);
    const st = await s.call("GetCacheStatus");
    expect(st).toEqual({ returnValue: true, numTypes: 1, numObjs: 1, size: 2 * BLOCK, availSpace: expect.any(Number) });
    expect(await s.call("GetCacheTypeStatus", { typeName: "t" })).toEqual({ returnValue: true, size: 2 * BLOCK, numObjs: 1 });
  } finally {
    closeSync(fd);
  }
  expect(existsSync(over)).toBe(false);
  await eventually(() => rows(md).length === 1 && rows(md)[0] === idOf(keep), 5000);
  await s.stop();
  expect(s.err()).not.toMatch(RAW_CALLBACK_FAILURE);
  expect(s.out()).not.toContain('"handler failed"');
}, 30000);

test.skipIf(!!skip)("ExpireCacheObject on a full disk removes the object: its file, its space and its row; again once the reserve is spent; the reserve comes back with the room", async () => {
  const disk = mountTmpfs("expire", "4m");
  const md = join(disk, "fc.db");
  const s = await started({ cacheDirectory: join(disk, "cache"), metadataFile: md });
  const a = await insert(s, 16 * BLOCK, "a.bin");
  const b = await insert(s, 16 * BLOCK, "b.bin");
  for (const p of [a, b]) writeFileSync(p, Buffer.alloc(16 * BLOCK, 3));
  const filler = fill(disk);
  expect(await s.call("ExpireCacheObject", { pathName: a })).toEqual({ returnValue: true });
  expect(existsSync(a)).toBe(false);
  expect(freeOf(disk)).toBeGreaterThanOrEqual(16 * BLOCK);
  expect(rows(md)).toEqual([idOf(b)]);
  expect(await s.call("GetCacheStatus")).toMatchObject({ returnValue: true, numObjs: 1, size: 16 * BLOCK });
  // Full again, with the reserve spent: the next expiry works too.
  const filler2 = fill(disk, "filler2");
  expect(await s.call("ExpireCacheObject", { pathName: b })).toEqual({ returnValue: true });
  expect(existsSync(b)).toBe(false);
  expect(freeOf(disk)).toBeGreaterThanOrEqual(16 * BLOCK);
  await eventually(() => rows(md).length === 0, 5000);
  expect(await s.call("GetCacheStatus")).toMatchObject({ returnValue: true, numObjs: 0, size: 0 });
  // Room again: the reserve beside the database is made again (1 MiB by default).
  rmSync(filler);
  rmSync(filler2);
  await eventually(() => existsSync(md + "-reserve") && statSync(md + "-reserve").size === MiB, 5000);
  await s.stop();
  expect(s.err()).not.toMatch(RAW_CALLBACK_FAILURE);
  expect(s.out()).not.toContain('"handler failed"');
}, 30000);

test.skipIf(!!skip)("an object written larger than declared and closed on a full disk is removed; the event source's callback never fails (nothing raw on stderr), the failure is a log line", async () => {
  const disk = mountTmpfs("closed", "4m");
  const md = join(disk, "fc.db");
  const s = await started({ cacheDirectory: join(disk, "cache"), metadataFile: md });
  const over = [await insert(s, BLOCK, "o1.bin"), await insert(s, BLOCK, "o2.bin")];
  const fds = over.map((p) => openSync(p, "w"));
  for (const fd of fds) writeSync(fd, Buffer.alloc(4 * BLOCK, 4));
  fill(disk);
  for (const fd of fds) closeSync(fd);
  await eventually(() => over.every((p) => !existsSync(p)), 5000);
  await eventually(() => rows(md).length === 0, 5000);
  expect(await s.call("GetCacheStatus")).toMatchObject({ returnValue: true, numObjs: 0, size: 0 });
  await s.stop();
  expect(s.err()).not.toMatch(RAW_CALLBACK_FAILURE);
  // What the full disk did is told in the service's structured log instead.
  expect(s.out()).toMatch(/"level":40,.*"msg":"file cache: the metadata's file system is full; its reserve is given up/);
}, 30000);

test.skipIf(!!skip)("without a reserve, with the metadata's own file system full: sizes are enforced at once and the rows removed once there is room again", async () => {
  const mdfs = mountTmpfs("meta", "1m");
  const md = join(mdfs, "fc.db");
  const cacheFs = mountTmpfs("cachefs", "4m");
  const s = await started({ cacheDirectory: join(cacheFs, "cache"), metadataFile: md, metadataReserve: 0 });
  const keep = await insert(s, 2 * BLOCK, "keep.bin");
  const over = await insert(s, BLOCK, "over.bin");
  const held = await insert(s, BLOCK, "held.bin");
  const filler = fill(mdfs);
  // One closed after writing (the watcher), one still open (the status call).
  writeFileSync(over, Buffer.alloc(2 * BLOCK, 5));
  const fd = openSync(held, "w");
  writeSync(fd, Buffer.alloc(2 * BLOCK, 6));
  await eventually(() => !existsSync(over), 5000);
  expect(await s.call("GetCacheStatus")).toMatchObject({ returnValue: true, numObjs: 1, size: 2 * BLOCK });
  closeSync(fd);
  expect(existsSync(held)).toBe(false);
  expect(await s.call("ExpireCacheObject", { pathName: keep })).toEqual({ returnValue: true });
  expect(await s.call("GetCacheStatus")).toMatchObject({ returnValue: true, numObjs: 0, size: 0 });
  // Room again: what could not be stored is stored without any call.
  rmSync(filler);
  await eventually(() => rows(md).length === 0, 5000);
  await s.stop();
  expect(s.err()).not.toMatch(RAW_CALLBACK_FAILURE);
  expect(s.out()).not.toContain('"handler failed"');
  expect(s.out()).toMatch(/"level":40,.*"code":"SQLITE_FULL".*"msg":"file cache: metadata changes kept in memory until they can be stored"/);
}, 30000);
