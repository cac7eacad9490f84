// src/core/store.ts, the one migration path: numbered steps, all or nothing; a store
// newer than the binary is refused before anything is written. And the services'
// stores that are checked in this process: the DHCP clients' state of network tools.
import { test, expect, afterEach } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { readJsonStore, writeJsonStore, migrateSqlite, checkSqlite, sqliteVersion, StoreTooNew, StoreUnreadable, type JsonFormat, type SqliteFormat } from "../../src/core/store";
import { IdSource } from "../../src/core/ids";
import { testEnv, type Env } from "../helpers/harness";
import { DHCP_STATE_FILE } from "../../src/services/nettools/vlan";

const dirs: string[] = [];
let env: Env | undefined;
afterEach(async () => {
  await env?.stop();
  env = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), "store-"));
  dirs.push(d);
  return d;
};

const V3: JsonFormat = {
  what: "the test store",
  version: 3,
  steps: { 2: (o) => ({ ...o, b: 2 }), 3: (o) => ({ ...o, c: String(o.a) }) },
};

test("JSON: no version field is format 1, migrated through every step and written back with its version; the current format is read as it is", () => {
  const d = tmp();
  const f = join(d, "s.json");
  writeFileSync(f, JSON.stringify({ a: 1 }));
  expect(readJsonStore(f, V3)).toEqual({ value: { a: 1, b: 2, c: "1" }, from: 1 });
  expect(JSON.parse(readFileSync(f, "utf8"))).toEqual({ version: 3, a: 1, b: 2, c: "1" });
  expect(readdirSync(d)).toEqual(["s.json"]);
  const now = readFileSync(f);
  expect(readJsonStore(f, V3)).toEqual({ value: { a: 1, b: 2, c: "1" }, from: 3 });
  expect(readFileSync(f).equals(now)).toBe(true);
  expect(readJsonStore(join(d, "none.json"), V3)).toEqual({ value: undefined });
});

test("JSON: a newer format throws StoreTooNew naming the file and both formats, and the file stays byte-identical; a bad version is StoreUnreadable", () => {
  const d = tmp();
  const f = join(d, "s.json");
  writeFileSync(f, ' {"version":4,"a":1,"d":[1]}\n');
  const before = readFileSync(f);
  const e = (() => {
    try {
      readJsonStore(f, V3);
    } catch (e) {
      return e;
    }
  })() as StoreTooNew;
  expect(e).toBeInstanceOf(StoreTooNew);
  expect(e).toMatchObject({ path: f, found: 4, known: 3 });
  expect(e.message).toContain(f);
  expect(readFileSync(f).equals(before)).toBe(true);
  expect(readdirSync(d)).toEqual(["s.json"]);
  writeFileSync(f, '{"version":"2"}');
  expect(() => readJsonStore(f, V3)).toThrow(StoreUnreadable);
});

test("JSON: a step that fails leaves the old file as it was (nothing written beside it)", () => {
  const d = tmp();
  const f = join(d, "s.json");
  writeFileSync(f, JSON.stringify({ version: 1, a: 1 }));
  const before = readFileSync(f);
  const bad: JsonFormat = { ...V3, steps: { ...V3.steps, 3: () => { throw new Error("step 3 failed"); } } };
  expect(() => readJsonStore(f, bad)).toThrow("step 3 failed");
  expect(readFileSync(f).equals(before)).toBe(true);
  expect(readdirSync(d)).toEqual(["s.json"]);
  writeJsonStore(f, V3, { a: 5 });
  expect(readFileSync(f, "utf8")).toBe('{"version":3,"a":5}\n');
});

const SQL: SqliteFormat = {
  what: "the test database",
  version: 2,
  steps: {
    1: (db) => db.exec("CREATE TABLE IF NOT EXISTS t (a INTEGER)"),
    2: (db) => db.exec("ALTER TABLE t ADD COLUMN b TEXT NOT NULL DEFAULT 'x'"),
  },
};

test("SQLite: user_version 0 (new, or written before versions) is brought to the format in one transaction; a failing step leaves the old format whole", () => {
  const d = tmp();
  const f = join(d, "a.db");
  const old = new Database(f, { create: true });
  old.exec("PRAGMA journal_mode = WAL");
  old.exec("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (7)");
  old.close();
  // Step 2 fails after step 1 ran: nothing of either is kept.
  const failing: SqliteFormat = { ...SQL, steps: { 1: (db) => db.exec("CREATE TABLE marker (x)"), 2: () => { throw new Error("step 2 failed"); } } };
  let db = new Database(f);
  expect(() => migrateSqlite(db, f, failing)).toThrow("step 2 failed");
  expect(db.query("PRAGMA user_version").get()).toEqual({ user_version: 0 });
  expect(db.query("SELECT name FROM sqlite_master WHERE name = 'marker'").all()).toEqual([]);
  expect(migrateSqlite(db, f, SQL)).toBe(0);
  expect(db.query("SELECT a, b FROM t").all()).toEqual([{ a: 7, b: "x" }]);
  expect(migrateSqlite(db, f, SQL)).toBe(2);
  db.close();
  expect(sqliteVersion(f)).toBe(2);
  db = new Database(f);
  expect(db.query("PRAGMA user_version").get()).toEqual({ user_version: 2 });
  db.close();
});

test("SQLite: a newer database is refused from its header or its write-ahead log, without a connection that could write and without new files", () => {
  const d = tmp();
  const f = join(d, "a.db");
  const db = new Database(f, { create: true });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("CREATE TABLE t (a)");
  db.exec("PRAGMA user_version = 3");
  db.close();
  const before = readFileSync(f);
  expect(() => checkSqlite(f, SQL)).toThrow(StoreTooNew);
  expect(readdirSync(d)).toEqual(["a.db"]);
  expect(readFileSync(f).equals(before)).toBe(true);
  // A newer version still in the log (a newer binary killed before its checkpoint) counts.
  const w = new Database(f);
  w.exec("PRAGMA wal_autocheckpoint = 0");
  w.exec("PRAGMA user_version = 4");
  expect(existsSync(`${f}-wal`)).toBe(true);
  expect(sqliteVersion(f)).toBe(4);
  w.close();
  expect(checkSqlite(join(d, "none.db"), SQL)).toBeUndefined();
});

test("ID reservations: format 1 is the lone number the released binary reads; a version line newer than 1 is refused untouched", () => {
  const d = tmp();
  const f = join(d, "ids");
  writeFileSync(f, "1000\n");
  const src = new IdSource(f, { block: 10 });
  expect(src.take()).toBe(1001);
  expect(readFileSync(f, "utf8")).toBe("1010\n");
  writeFileSync(f, "1010\nversion=1\n");
  expect(new IdSource(f, { block: 10 }).take()).toBe(1011);
  writeFileSync(f, "2000\nversion=2\n");
  const before = readFileSync(f);
  expect(() => new IdSource(f, { block: 10 })).toThrow(StoreTooNew);
  expect(readFileSync(f).equals(before)).toBe(true);
});

test("network tools: a DHCP clients' state of a newer format keeps the service off the bus (its pid files untouched); format 1 starts", async () => {
  env = await testEnv();
  const dir = join(env.stateDir, "nettools");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, DHCP_STATE_FILE), '{"version":2}\n');
  writeFileSync(join(dir, "dhcp-eth0.5.pid"), "12345\n");
  const rt = await env.start(["nettools", "testautomation"]);
  expect(rt.failed.map((f) => f.name)).toEqual(["nettools"]);
  expect(String((rt.failed[0]!.error as Error).message)).toContain(join(dir, DHCP_STATE_FILE));
  expect(readFileSync(join(dir, DHCP_STATE_FILE), "utf8")).toBe('{"version":2}\n');
  expect(readFileSync(join(dir, "dhcp-eth0.5.pid"), "utf8")).toBe("12345\n");
  const c = await env.client();
  expect(await c.hasOwner("com.vendor.service.nettools")).toBe(false);
  expect(await c.hasOwner("com.vendor.service.testautomation")).toBe(true);
  writeFileSync(join(dir, DHCP_STATE_FILE), '{"version":1}\n');
  expect((await env.start(["nettools"])).failed).toEqual([]);
});
