// An update from the released format: the state directory the product left before
// stores carried versions (test/data/state-v1) is served by the current binary, which
// keeps every cache type and object, media entry, the power-on reason, and never hands
// out an intent ID or teCommandId handed out before; each store then carries its
// format (docs/updates.md). `devservices health` answers 0 when every service serves.
import { test, expect, afterEach } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { CURRENT, MANIFEST, fixtureCopy, serve, mediaIdle, type Served } from "./env";
import { parseIds } from "../../src/core/ids";

let served: Served | undefined;
let copy: ReturnType<typeof fixtureCopy> | undefined;
afterEach(async () => {
  await served?.stop();
  copy?.cleanup();
  served = copy = undefined;
});

const userVersion = (file: string) => {
  const db = new Database(file, { readonly: true });
  try {
    return (db.query("PRAGMA user_version").get() as { user_version: number }).user_version;
  } finally {
    db.close();
  }
};

test("the released state directory: every object, entry, id and setting is kept; the stores are migrated to format 1", async () => {
  copy = fixtureCopy();
  served = await serve(CURRENT, copy.stateDir, copy.board);
  const ready = await served.ready;
  expect(ready.failed).toEqual([]);
  const { call } = served;

  // File cache: the type and both objects, with their contents.
  const t = MANIFEST.filecache.type as Record<string, number | string>;
  expect(await call("filecache", "DescribeType", { typeName: t.typeName })).toMatchObject({ returnValue: true, size: t.size, cost: t.cost, lifetime: t.lifetime });
  for (const o of MANIFEST.filecache.objects) {
    const pathName = join(copy.stateDir, "filecache", "cache", o.relPath);
    expect(await call("filecache", "GetCacheObjectFilename", { pathName })).toEqual({ returnValue: true, fileName: o.fileName });
    if (o.size) expect(await call("filecache", "GetCacheObjectSize", { pathName })).toEqual({ returnValue: true, size: o.size });
    expect(readFileSync(pathName, "utf8")).toBe(o.content);
  }
  expect(await call("filecache", "GetCacheStatus")).toMatchObject({ numTypes: 1, numObjs: MANIFEST.filecache.objects.length });

  // Media indexer: the device's entries.
  await mediaIdle(served);
  const audio = (await call("mediaindexer", "getAudioList", { uri: MANIFEST.mediaindexer.device })).audioList;
  expect((audio.results as { title: string }[]).map((e) => e.title).sort()).toEqual(MANIFEST.mediaindexer.audioTitles);
  expect((await call("mediaindexer", "getImageList", { uri: MANIFEST.mediaindexer.device })).imageList.count).toBe(MANIFEST.mediaindexer.imageCount);

  // The power-on reason.
  expect(await call("power2", "getPowerOnReason", { subscribe: false })).toMatchObject({ returnValue: true, reason: MANIFEST.powerOnReason });

  // IDs: none handed out before the update is handed out again.
  const intentId = (await call("intent", "start", { intent: { action: "view", uri: "fixture:after" } })).intentId;
  expect(intentId).toBeGreaterThan(Math.max(...MANIFEST.intentIds));
  const teCommandId = (await call("testautomation", "handleRequest", { command: "noSuchCommand" })).teCommandId;
  expect(teCommandId).toBeGreaterThan(Math.max(...MANIFEST.teCommandIds));

  // Every service of the board answers.
  const h = await served.health();
  expect(h).toEqual({ code: 0, out: { healthy: true, board: "virtual", answering: expect.any(Array), missing: [], notAnswering: [] } });
  expect(h.out.answering).toHaveLength(MANIFEST.services.length);

  // A new reason is written in format 1, with its version (the released reader reads it: it takes `reason`).
  expect((await call("power2", "setPowerOnReason", { reason: "after the update" })).returnValue).toBe(true);
  expect(await served.stop()).toBe(0);
  served = undefined;
  expect(JSON.parse(readFileSync(join(copy.stateDir, "power2", "power-on-reason.json"), "utf8"))).toEqual({ version: 1, reason: "after the update" });
  // The databases carry their format.
  expect(userVersion(join(copy.stateDir, "filecache", "filecache.db"))).toBe(1);
  expect(userVersion(join(copy.stateDir, "mediaindexer", "db", "media.db"))).toBe(1);
  // The ID reservations stay format 1 (a lone number, which the released binary reads after a rollback).
  for (const f of ["intent/intent-ids", "testautomation/command-ids"]) {
    const text = readFileSync(join(copy.stateDir, f), "utf8");
    expect(text).toMatch(/^\d+\n$/);
    expect(parseIds(text).version).toBe(1);
  }
}, 60000);
