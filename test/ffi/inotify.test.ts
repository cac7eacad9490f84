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
    IN_NONBLOCK: ino.IN_NONBLOCK, IN_CLOEXEC: ino.IN_CLOEXEC, IN_EXCL_UNLINK: ino.IN_EXCL_UNLINK, IN_MASK_ADD: ino.IN_MASK_ADD, IN_ATTRIB: ino.IN_ATTRIB,
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

test("directory watches: each watcher hears its directory's changes, all on one inotify fd of the event source, closed with the last", async () => {
  const { loopStats, loopReady } = await import("../../src/ffi/loop.ts");
  await loopReady();
  const a = mkdtempSync(join(tmpdir(), "inotify-dir-a-"));
  const b = mkdtempSync(join(tmpdir(), "inotify-dir-b-"));
  const before = loopStats.watches();
  const seenA: string[] = [], seenA2: string[] = [], seenB: string[] = [];
  const tag = (e: ino.InotifyEvent) => `${e.name}:${e.mask & ~ino.IN_ISDIR}`;
  const wa = ino.watchDirectory(a, (e) => void seenA.push(tag(e)));
  const wa2 = ino.watchDirectory(a, (e) => void seenA2.push(tag(e)), { mask: ino.IN_CREATE });
  const wb = ino.watchDirectory(b, (e) => void seenB.push(tag(e)));
  expect(ino.dirWatchCount()).toBe(3);
  expect(loopStats.watches()).toBe(before + 1);
  try {
    writeFileSync(join(a, "x"), "1");
    renameSync(join(a, "x"), join(b, "y"));
    rmSync(join(b, "y"));
    const until = Date.now() + 2000;
    while ((seenA.length < 3 || seenB.length < 2) && Date.now() < until) await Bun.sleep(10);
    expect(seenA).toEqual([`x:${ino.IN_CREATE}`, `x:${ino.IN_CLOSE_WRITE}`, `x:${ino.IN_MOVED_FROM}`]);
    expect(seenA2).toEqual([`x:${ino.IN_CREATE}`]);
    expect(seenB).toEqual([`y:${ino.IN_MOVED_TO}`, `y:${ino.IN_DELETE}`]);
    // The directory removed: the kernel ends the watch, the watcher hears it and is closed.
    rmSync(b, { recursive: true });
    const until2 = Date.now() + 2000;
    while (!wb.closed && Date.now() < until2) await Bun.sleep(10);
    expect(wb.closed).toBe(true);
    expect(seenB.slice(2)).toEqual([`:${ino.IN_DELETE_SELF}`, `:${ino.IN_IGNORED}`]);
    expect(ino.dirWatchCount()).toBe(2);
    expect(() => ino.watchDirectory(join(a, "missing"), () => {})).toThrow(/ENOENT|No such file/);
  } finally {
    wa.close();
    wa2.close();
    wb.close();
    rmSync(a, { recursive: true, force: true });
    rmSync(b, { recursive: true, force: true });
  }
  expect(ino.dirWatchCount()).toBe(0);
  expect(loopStats.watches()).toBe(before);
});

test("a directory watch is read on the event source: a change made while the main thread is busy arrives once it yields", async () => {
  const dir = mkdtempSync(join(tmpdir(), "inotify-busy-"));
  const seen: number[] = [];
  const w = ino.watchDirectory(dir, () => void seen.push(performance.now()));
  try {
    writeFileSync(join(dir, "f"), "1");
    const busyUntil = performance.now() + 300;
    while (performance.now() < busyUntil);
    const yielded = performance.now();
    expect(seen).toEqual([]);
    const until = Date.now() + 2000;
    while (!seen.length && Date.now() < until) await Bun.sleep(5);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen[0]!).toBeGreaterThanOrEqual(yielded);
    // Delivered right after the yield (the event source had it ready), not on a later poll.
    expect(seen[0]! - yielded).toBeLessThan(200);
  } finally {
    w.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
