// Across a change of format, both ways: a test build whose power-on reason file is one
// format newer (DEVSERVICES_STORE_BUMP=1, built to dist/devservices-storebump) migrates
// the released state and keeps the reason; the current binary then meets that newer
// file (a rollback) and leaves it byte-identical, says so in one log line (the service,
// the file, both formats), keeps power2 off the bus, and every other service serves;
// `devservices health` answers 1 naming power2. The same for a newer file cache
// database and newer intent ID reservations.
import { test, expect, beforeAll, afterEach } from "bun:test";
import { readFileSync, writeFileSync, appendFileSync } from "node:fs";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { BUMPED, CURRENT, MANIFEST, buildBumped, fixtureCopy, serve, type Served } from "./env";

let served: Served | undefined;
let copy: ReturnType<typeof fixtureCopy> | undefined;
afterEach(async () => {
  await served?.stop();
  copy?.cleanup();
  served = copy = undefined;
});

beforeAll(() => buildBumped(), 120000);

const others = (names: string[]) => MANIFEST.services.filter((s) => !names.includes(s)).map((s) => `com.vendor.service.${s}`);

test("the bumped build migrates the power-on reason to its format 2 and keeps the reason; the current binary then refuses it untouched while the others serve", async () => {
  copy = fixtureCopy();
  const reasonFile = join(copy.stateDir, "power2", "power-on-reason.json");

  // Upgrade to the bumped build: format 1 (no version field) becomes format 2 (setAt added).
  served = await serve(BUMPED, copy.stateDir, copy.board);
  expect((await served.ready).failed).toEqual([]);
  expect(await served.call("power2", "getPowerOnReason", { subscribe: false })).toMatchObject({ returnValue: true, reason: MANIFEST.powerOnReason });
  expect(JSON.parse(readFileSync(reasonFile, "utf8"))).toEqual({ version: 2, reason: MANIFEST.powerOnReason, setAt: null });
  expect(await served.stop()).toBe(0);
  served = undefined;

  // Roll back to the current binary.
  const before = readFileSync(reasonFile);
  served = await serve(CURRENT, copy.stateDir, copy.board);
  const ready = await served.ready;
  expect(ready.failed).toEqual(["power2"]);
  expect(ready.services).toEqual(others(["power2"]));
  const refusals = served.lines.filter((l) => l.service === "power2" && l.level >= 50);
  expect(refusals).toHaveLength(1);
  expect(refusals[0]!.msg).toContain(reasonFile);
  expect(refusals[0]!.msg).toContain("format 2");
  expect(refusals[0]!.msg).toContain("format 1");
  // power2 is off the bus; the others answer.
  expect(await served.client.hasOwner("com.vendor.service.power2")).toBe(false);
  expect(await served.call("filecache", "GetCacheStatus")).toMatchObject({ returnValue: true, numObjs: MANIFEST.filecache.objects.length });
  expect(await served.call("testautomation", "handleRequest", { command: "noSuchCommand" })).toMatchObject({ teCommandId: expect.any(Number) });
  const h = await served.health();
  expect(h.code).toBe(1);
  expect(h.out).toMatchObject({ healthy: false, missing: ["com.vendor.service.power2"], notAnswering: [] });
  expect(h.out.answering).toEqual(others(["power2"]));
  expect(await served.stop()).toBe(0);
  served = undefined;
  expect(readFileSync(reasonFile).equals(before)).toBe(true);
}, 60000);

test("a newer file cache database and newer intent ID reservations: both left byte-identical, both services off the bus, one line each, the others serve", async () => {
  copy = fixtureCopy();
  const db = join(copy.stateDir, "filecache", "filecache.db");
  const ids = join(copy.stateDir, "intent", "intent-ids");
  // What a later format would write: user_version 2; a version line after the number.
  const d = new Database(db);
  d.exec("PRAGMA user_version = 2");
  d.close();
  appendFileSync(ids, "version=2\n");
  const files = [db, `${db}-wal`, ids];
  const before = files.map((f) => {
    try {
      return readFileSync(f);
    } catch {
      return null;
    }
  });
  served = await serve(CURRENT, copy.stateDir, copy.board);
  const ready = await served.ready;
  expect([...ready.failed].sort()).toEqual(["filecache", "intent"]);
  for (const [service, file] of [["filecache", db], ["intent", ids]] as const) {
    const l = served.lines.filter((l) => l.service === service && l.level >= 50);
    expect(l).toHaveLength(1);
    expect(l[0]!.msg).toContain(file);
    expect(l[0]!.msg).toContain("format 2");
    expect(l[0]!.msg).toContain("format 1");
  }
  expect(await served.call("power2", "getPowerOnReason", { subscribe: false })).toMatchObject({ reason: MANIFEST.powerOnReason });
  const h = await served.health();
  expect(h.code).toBe(1);
  expect(h.out.missing).toEqual(["com.vendor.service.intent", "com.vendor.service.filecache"]);
  expect(await served.stop()).toBe(0);
  served = undefined;
  files.forEach((f, i) => {
    let now: Buffer | null = null;
    try {
      now = readFileSync(f);
    } catch {}
    expect({ file: f, same: before[i] === null ? now === null : !!now && now.equals(before[i]!) }).toEqual({ file: f, same: true });
  });
  void writeFileSync;
}, 60000);
