// preparedOnUse (src/core/store.ts): a statement is prepared by its first use, once;
// `finalize` finalizes those prepared (a finalized statement cannot run again).
import { expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { preparedOnUse } from "../../src/core/store";

test("statements are prepared by their first use, once, and finalized before the close", () => {
  const db = new Database(":memory:", { strict: true });
  db.exec("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)");
  const prepared: string[] = [];
  const prepare = db.prepare.bind(db);
  db.prepare = ((sql: string) => {
    prepared.push(sql);
    return prepare(sql);
  }) as typeof db.prepare;
  const { s, finalize } = preparedOnUse(db, { put: "INSERT INTO t (k, v) VALUES (?, ?)", get: "SELECT v FROM t WHERE k = ?", unused: "DELETE FROM t" });
  expect(prepared).toEqual([]);
  expect(Object.keys(s)).toEqual(["put", "get", "unused"]);
  s.put.run("a", 1);
  s.put.run("b", 2);
  expect(s.get.get("b")).toEqual({ v: 2 });
  expect(s.put).toBe(s.put);
  expect(prepared).toEqual(["INSERT INTO t (k, v) VALUES (?, ?)", "SELECT v FROM t WHERE k = ?"]);
  const put = s.put;
  finalize();
  expect(() => put.run("c", 3)).toThrow();
  expect(prepared.length).toBe(2);
  db.close();
});
