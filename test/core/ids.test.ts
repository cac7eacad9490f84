// IdSource (src/core/ids.ts): IDs unique across restarts and crashes of the service.
import { expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { IdSource } from "../../src/core/ids";

test("a new source on the same file never hands out an ID an earlier one did, however it ended", () => {
  const dir = mkdtempSync(join(tmpdir(), "ids-"));
  const file = join(dir, "sub", "ids");
  const seen = new Set<number>();
  // Each "process" takes some IDs and then vanishes without any goodbye (a crash).
  for (const n of [1, 5, 0, 12, 3]) {
    const src = new IdSource(file, { block: 4 });
    for (let i = 0; i < n; i++) {
      const id = src.take();
      expect(seen.has(id)).toBe(false);
      seen.add(id);
    }
  }
  expect(Math.min(...seen)).toBe(1);
  // The file holds the end of the last block reserved, written before its first ID was used.
  expect(Number(readFileSync(file, "utf8"))).toBeGreaterThanOrEqual(Math.max(...seen));
  expect(existsSync(`${file}.tmp`)).toBe(false);
  rmSync(dir, { recursive: true, force: true });
});

test("IDs within one source are consecutive; a block is written once per `block` IDs", () => {
  const dir = mkdtempSync(join(tmpdir(), "ids-"));
  const file = join(dir, "ids");
  const src = new IdSource(file, { block: 10, first: 100 });
  const ids = Array.from({ length: 25 }, () => src.take());
  expect(ids).toEqual(Array.from({ length: 25 }, (_, i) => 100 + i));
  expect(readFileSync(file, "utf8")).toBe("129\n");
  rmSync(dir, { recursive: true, force: true });
});

test("a file that is unreadable garbage starts over at first; a state directory that cannot be written still hands out IDs and says so", () => {
  const dir = mkdtempSync(join(tmpdir(), "ids-"));
  const file = join(dir, "ids");
  Bun.write(file, "not a number");
  expect(new IdSource(file).take()).toBe(1);
  // Below a regular file nothing can be created, not even by root (ENOTDIR).
  const errors: unknown[] = [];
  const src = new IdSource(join(file, "nested", "ids"), { block: 1, onError: (e) => errors.push(e) });
  expect([src.take(), src.take()]).toEqual([1, 2]);
  expect(errors.length).toBe(2);
  expect((errors[0] as { code?: string }).code).toBe("ENOTDIR");
  rmSync(dir, { recursive: true, force: true });
});
