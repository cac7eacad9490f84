// Space pressure: eviction order (lifetime passed, then cost, then least recently
// used), watermarks, guarantees between types, subscribed objects never evicted.
import { test, expect, afterEach } from "bun:test";
import { existsSync } from "node:fs";
import { fcEnv, expectError, BLOCK, FC, type FcEnv } from "./env";
import { IndexedHeap } from "../../src/services/filecache/heap";
import { eventually } from "../helpers/harness";

let t: FcEnv | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

async function setup(blocks: number, types: Record<string, [lo: number, hi: number]>) {
  t = await fcEnv({ totalCacheSpace: blocks * BLOCK });
  for (const [typeName, [lo, hi]] of Object.entries(types))
    expect(await t.call("DefineType", { typeName, loWatermark: lo * BLOCK, hiWatermark: hi * BLOCK, size: BLOCK })).toEqual({ returnValue: true });
  return t;
}

async function put(typeName: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await t!.call("InsertCacheObject", { typeName, fileName: "o.bin", ...extra });
  expect(r.returnValue).toBe(true);
  return r.pathName as string;
}

const count = async (typeName: string) => (await t!.call("GetCacheTypeStatus", { typeName })).numObjs;

test("present -> expired automatically under space pressure: lifetime passed first, then cheapest, then least recently used; never subscribed", async () => {
  await setup(8, { a: [0, 8] });
  const o: Record<string, string> = {};
  o.young1 = await put("a", { cost: 1, lifetime: 3600 });
  o.r50a = await put("a", { cost: 50, lifetime: 0 });
  o.r50b = await put("a", { cost: 50, lifetime: 0 });
  o.r20 = await put("a", { cost: 20, lifetime: 0 });
  o.r90 = await put("a", { cost: 90, lifetime: 0 });
  o.young5 = await put("a", { cost: 5, lifetime: 3600 });
  o.held = await put("a", { cost: 1, lifetime: 0 });
  o.r60 = await put("a", { cost: 60, lifetime: 0 });
  const sub = await t!.client.subscribe(FC, "SubscribeCacheObject", { pathName: o.held }, () => {});
  expect(sub.first.subscribed).toBe(true);
  // Touched: recently used, so it goes after r50b although inserted before it (a later millisecond than every insert).
  const inserted = Date.now();
  await eventually(() => Date.now() > inserted, 1000, 1);
  expect(await t!.call("TouchCacheObject", { pathName: o.r50a })).toEqual({ returnValue: true });
  expect(await t!.call("GetCacheStatus")).toMatchObject({ numObjs: 8, size: 8 * BLOCK, availSpace: 0 });

  const order: string[] = [];
  for (let i = 0; i < 7; i++) {
    await put("a", { cost: 100, lifetime: 3600 });
    const gone = Object.entries(o).filter(([name, p]) => !existsSync(p) && !order.includes(name));
    expect(gone.length).toBe(1);
    order.push(gone[0]![0]);
  }
  expect(order).toEqual(["r20", "r50b", "r50a", "r60", "r90", "young1", "young5"]);
  expect(existsSync(o.held!)).toBe(true);
  expect(await t!.call("GetCacheStatus")).toMatchObject({ numObjs: 8, size: 8 * BLOCK });
  await sub.cancel();
});

test("subscribed objects are never evicted: -199 no space when only they could make room", async () => {
  await setup(4, { a: [0, 4] });
  const subs = [];
  for (let i = 0; i < 4; i++) {
    const sub = await t!.client.subscribe(FC, "InsertCacheObject", { typeName: "a", fileName: `w${i}` }, () => {});
    expect(sub.first.subscribed).toBe(true);
    subs.push(sub);
  }
  expectError(await t!.call("InsertCacheObject", { typeName: "a", fileName: "x" }), -199, /^InsertCacheObject: no space of the requested size \(4096 bytes\) in type a$/);
  expect(await count("a")).toBe(4);
  await subs[0]!.cancel(); // written 0 bytes: kept with its size corrected to 0
  await subs[1]!.cancel();
  const p = await put("a");
  expect(existsSync(p)).toBe(true);
  for (const s of subs.slice(2)) await s.cancel();
});

test("a type never loses objects below its low watermark to another type", async () => {
  await setup(16, { keep: [4, 16], other: [0, 16] });
  // keep's objects are the cheapest and oldest: first in eviction order.
  for (let i = 0; i < 6; i++) await put("keep", { cost: 1 });
  for (let i = 0; i < 10; i++) await put("other", { cost: 50 });
  for (let i = 0; i < 6; i++) await put("other", { cost: 50 });
  expect(await count("keep")).toBe(4);
  expect(await count("other")).toBe(12);
  expect(await t!.call("GetCacheTypeStatus", { typeName: "keep" })).toMatchObject({ size: 4 * BLOCK });
  // keep's own inserts follow the same order: its cheapest (its own) objects go first.
  for (let i = 0; i < 3; i++) await put("keep", { cost: 1 });
  expect(await count("keep")).toBe(4);
  expect(await count("other")).toBe(12);
  // Once keep's cheap objects are gone, other's above its (zero) low watermark are next.
  for (let i = 0; i < 4; i++) await put("keep", { cost: 100 });
  expect(await count("keep")).toBe(4);
  for (let i = 0; i < 2; i++) await put("keep", { cost: 100 });
  expect(await count("keep")).toBe(6);
  expect(await count("other")).toBe(10);
});

test("an unused low watermark stays reserved: another type cannot fill it", async () => {
  await setup(16, { reserved: [8, 16], other: [0, 16] });
  for (let i = 0; i < 8; i++) await put("other");
  expect(await t!.call("GetCacheStatus")).toMatchObject({ size: 8 * BLOCK, availSpace: 8 * BLOCK });
  const last = await put("other"); // evicts other's own oldest
  expect(await count("other")).toBe(8);
  expect(existsSync(last)).toBe(true);
  expectError(await t!.call("InsertCacheObject", { typeName: "other", fileName: "x", size: 9 * BLOCK }), -199, /no space of the requested size/);
  for (let i = 0; i < 8; i++) await put("reserved");
  expect(await count("reserved")).toBe(8);
  expect(await count("other")).toBe(8);
});

test("a type at its hiWatermark evicts its own objects, not cheaper ones of other types; lowering hiWatermark evicts down to it", async () => {
  await setup(32, { small: [0, 4], big: [0, 32] });
  for (let i = 0; i < 4; i++) await put("big", { cost: 1 });
  const first = await put("small", { cost: 100 });
  for (let i = 0; i < 3; i++) await put("small", { cost: 100 });
  await put("small", { cost: 100 });
  expect(existsSync(first)).toBe(false);
  expect(await count("small")).toBe(4);
  expect(await count("big")).toBe(4);
  expect(await t!.call("ChangeType", { typeName: "small", hiWatermark: 2 * BLOCK })).toEqual({ returnValue: true });
  expect(await t!.call("GetCacheTypeStatus", { typeName: "small" })).toEqual({ returnValue: true, size: 2 * BLOCK, numObjs: 2 });
  expectError(await t!.call("InsertCacheObject", { typeName: "small", fileName: "x", size: 3 * BLOCK }), -199, /no space .* in type small/);
});

test("growing an object with ResizeCacheObject can expire other objects", async () => {
  await setup(8, { a: [0, 8] });
  const victims = [];
  for (let i = 0; i < 6; i++) victims.push(await put("a"));
  const grow = await put("a", { cost: 100 });
  expect(await t!.call("ResizeCacheObject", { pathName: grow, newSize: 4 * BLOCK })).toEqual({ returnValue: true, newSize: 4 * BLOCK });
  expect(victims.filter((p) => existsSync(p)).length).toBe(4);
  expect(await t!.call("GetCacheStatus")).toMatchObject({ size: 8 * BLOCK, numObjs: 5 });
});

test("the eviction index: an indexed heap agrees with sorting through random pushes, re-keys and removals", () => {
  type Item = { k: number; id: number };
  const h = new IndexedHeap<Item>((a, b) => a.k < b.k || (a.k === b.k && a.id < b.id));
  const live = new Set<Item>();
  let seed = 42;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  for (let i = 0; i < 5000; i++) {
    const r = rnd();
    if (r < 0.5 || live.size === 0) {
      const it = { k: Math.floor(rnd() * 100), id: i };
      h.push(it);
      live.add(it);
    } else if (r < 0.7) {
      const it = [...live][Math.floor(rnd() * live.size)]!;
      it.k = Math.floor(rnd() * 100);
      h.update(it);
    } else if (r < 0.85) {
      const it = [...live][Math.floor(rnd() * live.size)]!;
      expect(h.remove(it)).toBe(true);
      live.delete(it);
    } else {
      const min = [...live].sort((a, b) => a.k - b.k || a.id - b.id)[0]!;
      expect(h.pop()).toBe(min);
      live.delete(min);
    }
    expect(h.size).toBe(live.size);
  }
});
