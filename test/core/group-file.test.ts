// groupId reads a group file (DEVSERVICES_GROUP_FILE, else /etc/group) and keeps what it
// read until the file changes: another file, or the same path replaced, is read anew
// even when its modification time is the same.
import { test, expect, afterAll } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync, utimesSync, renameSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { groupId } from "../../src/core/access";

const dir = mkdtempSync(join(tmpdir(), "group-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("two group files with the same modification time each give their own gids; a file renamed over the path is read anew", () => {
  const a = join(dir, "a");
  const b = join(dir, "b");
  writeFileSync(a, "cam:x:20001:\n");
  writeFileSync(b, "cam:x:20002:\nother:x:20003:\n");
  const t = new Date(1_700_000_000_000);
  utimesSync(a, t, t);
  utimesSync(b, t, t);
  expect(groupId("cam", a)).toBe(20001);
  expect(groupId("cam", b)).toBe(20002);
  expect(groupId("cam", a)).toBe(20001);
  // The same path, replaced by a file of the same time and size.
  const c = join(dir, "c");
  writeFileSync(c, "cam:x:20009:\n");
  utimesSync(c, t, t);
  renameSync(c, a);
  expect(groupId("cam", a)).toBe(20009);
  expect(groupId("nobody-here", a)).toBeUndefined();
  expect(groupId("42", a)).toBe(42);
});
