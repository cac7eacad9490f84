// Cache types: DefineType, ChangeType, DeleteType, DescribeType, GetCacheTypes,
// GetCacheTypeStatus, GetCacheStatus, GetVersion and their error rows.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { fcEnv, expectError, BLOCK, type FcEnv } from "./env";

const MiB = 1024 * 1024;
let t: FcEnv;
beforeAll(async () => {
  t = await fcEnv({ totalCacheSpace: 4 * MiB, defaultCost: 7, defaultLifetime: 60 });
});
afterAll(() => t.stop());

test("GetVersion answers the API version; GetCacheTypes has no types field when none is defined", async () => {
  expect(await t.call("GetVersion")).toEqual({ returnValue: true, version: "1.0" });
  expect(await t.call("GetCacheTypes")).toEqual({ returnValue: true });
  expect(await t.call("GetCacheStatus")).toEqual({ returnValue: true, numTypes: 0, size: 0, numObjs: 0, availSpace: 4 * MiB });
});

test("DefineType pads watermarks to 4096-byte blocks and fills defaults from the configuration", async () => {
  expect(await t.call("DefineType", { typeName: "thumbs", loWatermark: 5000, hiWatermark: 100000, size: 300 })).toEqual({ returnValue: true });
  expect(await t.call("DescribeType", { typeName: "thumbs" })).toEqual({
    returnValue: true,
    loWatermark: 2 * BLOCK,
    hiWatermark: 25 * BLOCK,
    size: 300,
    cost: 7,
    lifetime: 60,
  });
  expect(await t.call("DefineType", { typeName: "music", loWatermark: 0, hiWatermark: 8192, size: 0, cost: 100, lifetime: 5 })).toEqual({ returnValue: true });
  expect(await t.call("DescribeType", { typeName: "music" })).toMatchObject({ loWatermark: 0, hiWatermark: 8192, size: 0, cost: 100, lifetime: 5 });
  expect(await t.call("GetCacheTypes")).toEqual({ returnValue: true, types: ["music", "thumbs"] });
  expect(await t.call("GetCacheTypeStatus", { typeName: "thumbs" })).toEqual({ returnValue: true, size: 0, numObjs: 0 });
  expect(await t.call("GetCacheStatus")).toMatchObject({ numTypes: 2, numObjs: 0, size: 0 });
});

test("-200: hiWatermark must be greater than loWatermark (DefineType, ChangeType), compared as given", async () => {
  expectError(await t.call("DefineType", { typeName: "w1", loWatermark: 8192, hiWatermark: 8192 }), -200, /^DefineType: /, /hiWatermark must be greater than loWatermark/, /w1/);
  expectError(await t.call("DefineType", { typeName: "w2", loWatermark: 4090, hiWatermark: 4000 }), -200, /^DefineType: .*w2/);
  // Within one block: different as given, the same once padded. Only what is reported is padded.
  expect(await t.call("DefineType", { typeName: "w3", loWatermark: 1000, hiWatermark: 2000 })).toEqual({ returnValue: true });
  expect(await t.call("DescribeType", { typeName: "w3" })).toMatchObject({ returnValue: true, loWatermark: BLOCK, hiWatermark: BLOCK });
  expect(await t.call("ChangeType", { typeName: "w3", loWatermark: 1500 })).toEqual({ returnValue: true });
  // ChangeType compares with the other watermark as it was given (2000), not as reported (4096).
  expectError(await t.call("ChangeType", { typeName: "w3", loWatermark: 3000 }), -200, /^ChangeType: hiWatermark must be greater than loWatermark for type w3/);
  expect(await t.call("ChangeType", { typeName: "w3", loWatermark: 3000, hiWatermark: 4000.5 })).toEqual({ returnValue: true });
  expect(await t.call("DescribeType", { typeName: "w3" })).toMatchObject({ loWatermark: BLOCK, hiWatermark: BLOCK });
  expect((await t.call("DeleteType", { typeName: "w3" })).returnValue).toBe(true);
  expect(await t.call("DefineType", { typeName: "w4", loWatermark: 1000, hiWatermark: 2000, size: 0.5, lifetime: 2.5, cost: 0.5 })).toEqual({ returnValue: true });
  expect(await t.call("DescribeType", { typeName: "w4" })).toMatchObject({ size: 1, lifetime: 2.5, cost: 0.5 });
  expect((await t.call("DeleteType", { typeName: "w4" })).returnValue).toBe(true);
  expectError(await t.call("ChangeType", { typeName: "thumbs", hiWatermark: 4096 }), -200, /^ChangeType: hiWatermark must be greater than loWatermark for type thumbs/);
  expectError(await t.call("ChangeType", { typeName: "thumbs", loWatermark: 200000 }), -200, /^ChangeType: .*thumbs/);
  expect(await t.call("GetCacheTypes")).toEqual({ returnValue: true, types: ["music", "thumbs"] });
});

test("-199 and -189: defining an existing type again, with the same or a different configuration", async () => {
  expectError(await t.call("DefineType", { typeName: "thumbs", loWatermark: 8192, hiWatermark: 102400, size: 300 }), -199, /^DefineType: type already exists: thumbs$/);
  expectError(await t.call("DefineType", { typeName: "thumbs", loWatermark: 8192, hiWatermark: 102400, size: 301 }), -189, /^DefineType: type thumbs has a different configuration/);
  expect(await t.call("DescribeType", { typeName: "thumbs" })).toMatchObject({ size: 300 });
});

test("-197: a typeName that is empty, over 64 characters, starts with '.' or holds '/'; guarantees beyond the cache", async () => {
  for (const typeName of ["", ".hidden", "x".repeat(65), "a/b"])
    expectError(await t.call("DefineType", { typeName, loWatermark: 0, hiWatermark: 8192 }), -197, /^DefineType: failed to configure or allocate the type/);
  expect(await t.call("DefineType", { typeName: "y".repeat(64), loWatermark: 0, hiWatermark: 8192 })).toEqual({ returnValue: true });
  expect((await t.call("DeleteType", { typeName: "y".repeat(64) })).returnValue).toBe(true);
  expectError(await t.call("DefineType", { typeName: "huge", loWatermark: 5 * MiB, hiWatermark: 6 * MiB }), -197, /^DefineType: .*huge.*cannot be guaranteed/);
  expectError(await t.call("DefineType", { typeName: "bad", loWatermark: -1, hiWatermark: 8192 }), -197, /^DefineType: invalid loWatermark/);
  expectError(await t.call("DefineType", { typeName: "bad", hiWatermark: 8192 }), -197, /^DefineType: loWatermark is required/);
  expectError(await t.call("DefineType", { typeName: "bad", loWatermark: 0, hiWatermark: 8192, cost: 101 }), -197, /^DefineType: invalid cost/);
});

test("ChangeType changes only the given values; -196 for a type that does not exist", async () => {
  expect(await t.call("ChangeType", { typeName: "music", hiWatermark: 20000, lifetime: 9 })).toEqual({ returnValue: true });
  expect(await t.call("DescribeType", { typeName: "music" })).toEqual({
    returnValue: true,
    loWatermark: 0,
    hiWatermark: 5 * BLOCK,
    size: 0,
    cost: 100,
    lifetime: 9,
  });
  expectError(await t.call("ChangeType", { typeName: "nosuch", cost: 3 }), -196, /^ChangeType: type does not exist: nosuch$/);
  expectError(await t.call("ChangeType", { typeName: "music", cost: -3 }), -200, /^ChangeType: invalid cost/);
  expectError(await t.call("ChangeType", { typeName: "music", loWatermark: 4 * MiB, hiWatermark: 5 * MiB }), -200, /^ChangeType: watermarks of type music cannot be reserved/);
});

test("-199: DescribeType and GetCacheTypeStatus of an unknown type", async () => {
  expectError(await t.call("DescribeType", { typeName: "nosuch" }), -199, /^DescribeType: type does not exist: nosuch$/);
  expectError(await t.call("GetCacheTypeStatus", { typeName: "nosuch" }), -199, /^GetCacheTypeStatus: type does not exist: nosuch$/);
  expectError(await t.call("DescribeType", {}), -199, /^DescribeType: typeName is required/);
});

test("DeleteType expires all objects and returns freedSpace; -195 for an unknown type or subscribed objects", async () => {
  await t.call("DefineType", { typeName: "tmp", loWatermark: 0, hiWatermark: 1 * MiB, size: 5000 });
  const a = await t.call("InsertCacheObject", { typeName: "tmp", fileName: "a.bin" });
  const b = await t.call("InsertCacheObject", { typeName: "tmp", fileName: "b.bin", size: 100 });
  expect(await t.call("GetCacheTypeStatus", { typeName: "tmp" })).toEqual({ returnValue: true, size: 3 * BLOCK, numObjs: 2 });

  const sub = await t.client.subscribe("com.vendor.service.filecache", "SubscribeCacheObject", { pathName: b.pathName }, () => {});
  expect(sub.first).toEqual({ returnValue: true, subscribed: true });
  expectError(await t.call("DeleteType", { typeName: "tmp" }), -195, /^DeleteType: type has subscribed objects: tmp$/);
  expect(await t.call("GetCacheTypeStatus", { typeName: "tmp" })).toMatchObject({ numObjs: 2 });
  await sub.cancel();

  // The cancel is a signal-free method call; the service handles it before the next call.
  expect(await t.call("DeleteType", { typeName: "tmp" })).toEqual({ returnValue: true, freedSpace: 3 * BLOCK });
  expect(await Bun.file(a.pathName as string).exists()).toBe(false);
  expect(await Bun.file(b.pathName as string).exists()).toBe(false);
  expectError(await t.call("DeleteType", { typeName: "tmp" }), -195, /^DeleteType: type does not exist: tmp$/);
  expectError(await t.call("GetCacheObjectSize", { pathName: a.pathName }), -199);
});

test("a malformed payload is refused with the method's code; methods without error rows answer errorText alone", async () => {
  expectError(await t.call("ChangeType", "{not json"), -200, /^ChangeType: invalid JSON payload/);
  const r = await t.call("GetVersion", "[1]");
  expect(r.returnValue).toBe(false);
  expect(r.errorCode).toBeUndefined();
  expect(r.errorText).toMatch(/^GetVersion: /);
});

test("GetCacheStatus and GetCacheTypes answer returnValue true whatever the payload (spec: always true)", async () => {
  const status = await t.call("GetCacheStatus");
  const types = await t.call("GetCacheTypes");
  expect(status.returnValue).toBe(true);
  for (const payload of ["[1]", "{not json", "42", '"text"', "null"]) {
    expect([payload, await t.call("GetCacheStatus", payload)]).toEqual([payload, status]);
    expect([payload, await t.call("GetCacheTypes", payload)]).toEqual([payload, types]);
  }
});
