// File cache benchmark: insert latency at 1k, 10k and 100k objects, with and
// without an eviction per insert, expiry latency, and raw create+unlink time of
// the same filesystem measured in the same run. Twice: through the bus (what an
// application sees) and on the cache core alone (where eviction cost shows).
//   bun bench/filecache/run.ts [--sizes 1000,10000,100000] [--dir DIR]
// DIR (default: the system temporary directory) decides the filesystem measured.
import { mkdtempSync, rmSync, openSync, closeSync, unlinkSync, constants } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { startPrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { startRuntime } from "../../src/runtime";
import { loadBoard, parseBoard } from "../../src/core/board";
import { configureLogging } from "../../src/core/log";
import { FileCache, evictsBefore, type CacheObject } from "../../src/services/filecache/cache";
import { IndexedHeap } from "../../src/services/filecache/heap";
import { loadConfig } from "../../src/services/filecache/config";

const FC = "com.vendor.service.filecache";
const BLOCK = 4096;
const WINDOW = 1000;

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const sizes = (arg("--sizes") ?? "1000,10000,100000").split(",").map(Number);
const base = arg("--dir") ?? tmpdir();
const log = configureLogging("silent");

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const us = (ms: number) => (ms * 1000).toFixed(0).padStart(6);
const row = (label: string, xs: number[]) => `${label.padEnd(34)} p50 ${us(pct(xs, 50))} us   p99 ${us(pct(xs, 99))} us`;

async function timed<T>(fn: () => T | Promise<T>, out: number[]): Promise<T> {
  const t0 = performance.now();
  const r = await fn();
  out.push(performance.now() - t0);
  return r;
}

function rawCreateUnlink(dir: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < WINDOW; i++) {
    const p = join(dir, `raw-${i}.bin`);
    const t0 = performance.now();
    closeSync(openSync(p, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644));
    unlinkSync(p);
    out.push(performance.now() - t0);
  }
  return out;
}

// Room for n + WINDOW objects: n are inserted unmeasured, then WINDOW measured
// inserts fill the cache, then WINDOW measured inserts each evict one object.
const capacity = (n: number) => (n + WINDOW) * BLOCK;
const typeDef = (n: number) => ({ typeName: "bench", loWatermark: 0, hiWatermark: capacity(n), size: BLOCK });

async function viaBus(n: number) {
  const stateDir = mkdtempSync(join(base, "fcbench-bus-"));
  const bus = await startPrivateBus();
  const board = parseBoard({ ...loadBoard("virtual"), serviceConfig: { filecache: { configFile: null, totalCacheSpace: capacity(n) } } }, "bench");
  const rt = await startRuntime({ busAddress: bus.address, board, stateDir, services: ["filecache"], log });
  const client = await BusClient.connect(bus.address);
  const call = (m: string, p: Record<string, unknown>) => client.call(FC, m, p);
  try {
    await call("DefineType", typeDef(n));
    const paths: string[] = [];
    const insert = async () => {
      const r = await call("InsertCacheObject", { typeName: "bench", fileName: "o.bin" });
      if (!r.returnValue) throw new Error(JSON.stringify(r));
      paths.push(r.pathName as string);
    };
    // Fill with n objects, 64 calls in flight (not measured).
    let left = n;
    await Promise.all(Array.from({ length: 64 }, async () => {
      while (left-- > 0) await insert();
    }));
    const ins: number[] = [];
    for (let i = 0; i < WINDOW; i++) await timed(insert, ins);
    const evict: number[] = [];
    for (let i = 0; i < WINDOW; i++) await timed(insert, evict);
    const st = await call("GetCacheStatus", {});
    if (st.numObjs !== n + WINDOW) throw new Error(`expected ${n} objects, got ${st.numObjs}`);
    const exp: number[] = [];
    for (let i = 0; i < WINDOW; i++) await timed(() => call("ExpireCacheObject", { pathName: paths[paths.length - 1 - i]! }), exp);
    const raw = rawCreateUnlink(join(stateDir, "filecache", "cache", "bench"));
    return { ins, evict, exp, raw };
  } finally {
    client.close();
    await rt.stop();
    await bus.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

function onCore(n: number) {
  const stateDir = mkdtempSync(join(base, "fcbench-core-"));
  const cache = FileCache.open(loadConfig({ configFile: null, totalCacheSpace: capacity(n) }, stateDir, log), log);
  try {
    cache.defineType(typeDef(n));
    const paths: string[] = [];
    const insert = () => paths.push(cache.insert({ typeName: "bench", fileName: "o.bin" }, null, false).path);
    for (let i = 0; i < n; i++) insert();
    const time = (fn: () => unknown) => {
      const out: number[] = [];
      for (let i = 0; i < WINDOW; i++) {
        const t0 = performance.now();
        fn();
        out.push(performance.now() - t0);
      }
      return out;
    };
    const ins = time(insert);
    const evict = time(insert);
    if (cache.objects.size !== n + WINDOW) throw new Error(`expected ${n + WINDOW} objects, got ${cache.objects.size}`);
    let k = paths.length;
    const exp = time(() => cache.expire(cache.resolve("ExpireCacheObject", paths[--k]!)));
    const raw = rawCreateUnlink(join(stateDir, "cache", "bench"));
    return { ins, evict, exp, raw };
  } finally {
    cache.close();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

/** The eviction index alone: mean time to take the next victim and index a new object, with n indexed. */
function indexOnly(n: number): number {
  const h = new IndexedHeap<CacheObject>(evictsBefore);
  const mk = (id: number) => ({ id, ripe: true, cost: 1 + (id % 100), lastUsed: id } as CacheObject);
  for (let i = 0; i < n; i++) h.push(mk(i));
  const rounds = 20000;
  const t0 = performance.now();
  for (let i = 0; i < rounds; i++) {
    h.pop();
    h.push(mk(n + i));
  }
  return ((performance.now() - t0) / rounds) * 1e6; // ns
}

const fsType = (await Bun.$`stat -f -c %T ${base}`.nothrow().text()).trim();
console.log(`file cache benchmark: ${base} (${fsType}), ${WINDOW} measured operations per figure, objects of one block`);
// Warm-up (JIT, page cache), not reported.
onCore(2 * WINDOW);
await viaBus(2 * WINDOW);
for (const n of sizes) {
  const core = onCore(n);
  const bus = await viaBus(n);
  console.log(`\n== ${n} objects`);
  console.log(row("raw create+unlink (same fs)", bus.raw.concat(core.raw)));
  console.log(row("core: insert", core.ins));
  console.log(row("core: insert evicting one object", core.evict));
  console.log(row("core: expire", core.exp));
  console.log(row("bus: insert", bus.ins));
  console.log(row("bus: insert evicting one object", bus.evict));
  console.log(row("bus: expire", bus.exp));
  console.log(`${"index: next victim + new object".padEnd(34)} mean ${indexOnly(n).toFixed(0).padStart(6)} ns`);
}
