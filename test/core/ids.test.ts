// IdSource (src/core/ids.ts): IDs unique across restarts and crashes of the service.
import { expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { IdSource, IdsUnavailable } from "../../src/core/ids";

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

test("IDs within one source are consecutive; the next block is reserved when half of the current one is used", () => {
  const dir = mkdtempSync(join(tmpdir(), "ids-"));
  const file = join(dir, "ids");
  const src = new IdSource(file, { block: 10, first: 100 });
  const ids = Array.from({ length: 25 }, () => src.take());
  expect(ids).toEqual(Array.from({ length: 25 }, (_, i) => 100 + i));
  // 100..109 at the first take, then 110..119 at 105 and 120..129 at 115.
  expect(readFileSync(file, "utf8")).toBe("129\n");
  rmSync(dir, { recursive: true, force: true });
});

test("a file that is unreadable garbage starts over at first; a state directory that cannot be written hands out no ID it could not reserve", () => {
  const dir = mkdtempSync(join(tmpdir(), "ids-"));
  const file = join(dir, "ids");
  Bun.write(file, "not a number");
  expect(new IdSource(file).take()).toBe(1);
  // Below a regular file nothing can be created, not even by root (ENOTDIR).
  const errors: unknown[] = [];
  const src = new IdSource(join(file, "nested", "ids"), { block: 1, onError: (e) => errors.push(e) });
  expect(() => src.take()).toThrow(IdsUnavailable);
  expect(() => src.take()).toThrow(/no identifier can be reserved in .*nested\/ids: ENOTDIR/);
  expect(errors.length).toBe(2);
  expect((errors[0] as { code?: string }).code).toBe("ENOTDIR");
  rmSync(dir, { recursive: true, force: true });
});

test("on a full disk: the reserved rest is used, then IDs are refused; after a crash and a restart none is handed out twice", async () => {
  if (process.getuid?.() !== 0) return; // needs a mount
  const dir = mkdtempSync(join(tmpdir(), "ids-full-"));
  await Bun.$`mount -t tmpfs -o size=64k tmpfs ${dir}`;
  try {
    const file = join(dir, "ids");
    const seen = new Set<number>();
    const take = (s: IdSource) => {
      const id = s.take();
      expect(seen.has(id)).toBe(false);
      seen.add(id);
    };
    let src = new IdSource(file, { block: 10 });
    for (let i = 0; i < 3; i++) take(src); // 1..10 reserved
    // The disk fills up.
    await Bun.$`dd if=/dev/zero of=${join(dir, "fill")} bs=4k 2>/dev/null`.nothrow();
    for (let i = 0; i < 7; i++) take(src); // the rest of the reserved block, no more
    expect(() => src.take()).toThrow(IdsUnavailable);
    // A crash (nothing more is written) and a restart on the same full disk.
    src = new IdSource(file, { block: 10 });
    expect(() => src.take()).toThrow(IdsUnavailable);
    // Space comes back: IDs go on after every ID handed out before.
    rmSync(join(dir, "fill"));
    src = new IdSource(file, { block: 10 });
    for (let i = 0; i < 20; i++) take(src);
    expect(Math.min(...[...seen].slice(10))).toBeGreaterThan(10);
  } finally {
    await Bun.$`umount ${dir}`.nothrow();
    rmSync(dir, { recursive: true, force: true });
  }
});
