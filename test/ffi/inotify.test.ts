// src/ffi/inotify.ts against sys/inotify.h; events of a watched directory read from
// the non-blocking fd on the event source.
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, renameSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as ino from "../../src/ffi/inotify.ts";
import { watch } from "../../src/ffi/loop.ts";
import { checkAgainstHeaders, sameNames } from "./cabi.ts";

checkAgainstHeaders("inotify.ts mirrors sys/inotify.h", {
  headers: ["sys/inotify.h"],
  structs: ino.structs,
  consts: sameNames({
    IN_CLOSE_WRITE: ino.IN_CLOSE_WRITE, IN_MOVED_FROM: ino.IN_MOVED_FROM, IN_MOVED_TO: ino.IN_MOVED_TO, IN_CREATE: ino.IN_CREATE,
    IN_DELETE: ino.IN_DELETE, IN_DELETE_SELF: ino.IN_DELETE_SELF, IN_MOVE_SELF: ino.IN_MOVE_SELF, IN_UNMOUNT: ino.IN_UNMOUNT,
    IN_Q_OVERFLOW: ino.IN_Q_OVERFLOW, IN_IGNORED: ino.IN_IGNORED, IN_ONLYDIR: ino.IN_ONLYDIR, IN_ISDIR: ino.IN_ISDIR,
    IN_NONBLOCK: ino.IN_NONBLOCK, IN_CLOEXEC: ino.IN_CLOEXEC, IN_EXCL_UNLINK: ino.IN_EXCL_UNLINK,
  }),
});

test("a watched directory's changes arrive on the event source", async () => {
  const dir = mkdtempSync(join(tmpdir(), "inotify-test-"));
  const fd = ino.inotifyInit();
  const wd = ino.addWatch(fd, dir, ino.IN_CLOSE_WRITE | ino.IN_CREATE | ino.IN_DELETE | ino.IN_MOVED_FROM | ino.IN_MOVED_TO | ino.IN_ONLYDIR);
  const seen: ino.InotifyEvent[] = [];
  const w = watch(fd, { readable: () => void seen.push(...ino.readEvents(fd)) });
  writeFileSync(join(dir, "a.txt"), "x");
  mkdirSync(join(dir, "sub"));
  renameSync(join(dir, "a.txt"), join(dir, "b.txt"));
  rmSync(join(dir, "b.txt"));
  const until = Date.now() + 2000;
  while (seen.length < 6 && Date.now() < until) await Bun.sleep(10);
  w.close();
  ino.rmWatch(fd, wd);
  ino.closeFd(fd);
  rmSync(dir, { recursive: true });
  const names = seen.map((e) => `${e.name}:${e.mask & ~ino.IN_ISDIR}${e.mask & ino.IN_ISDIR ? ":dir" : ""}`);
  expect(names).toEqual([
    `a.txt:${ino.IN_CREATE}`, `a.txt:${ino.IN_CLOSE_WRITE}`, `sub:${ino.IN_CREATE}:dir`,
    `a.txt:${ino.IN_MOVED_FROM}`, `b.txt:${ino.IN_MOVED_TO}`, `b.txt:${ino.IN_DELETE}`,
  ]);
  expect(seen.every((e) => e.wd === wd)).toBe(true);
  expect(seen[3]!.cookie).toBe(seen[4]!.cookie);
});
