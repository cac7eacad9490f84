// Hotplug is followed through the inotify directory watch on the event source
// (src/ffi/inotify.ts): no fs.watch and no interval timer in the backends; the
// virtual plug directory and the Linux backend's /dev each take one directory
// watch on the process's one inotify fd, for the events they need.
import { test, expect } from "bun:test";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import * as ino from "../../src/ffi/inotify";
import { loopReady, loopStats } from "../../src/ffi/loop";
import { VirtualBackend } from "../../src/services/camera/backend/virtual";
import { LinuxBackend } from "../../src/services/camera/backend/linux";
import { eventually, ROOT } from "../helpers/harness";

const log = pino({ level: "silent" });
/** fs.watch / fs.watchFile (called so, or imported from node:fs), and interval timers. */
const FORBIDDEN = /\bfs\.watch(File)?\b|\bwatch(File)?\b.*\bfrom "(node:)?fs"|\bsetInterval\(/;

test("the camera backends hold no fs.watch and no interval timer", () => {
  const dir = join(ROOT, "src/services/camera/backend");
  const found: string[] = [];
  for (const n of readdirSync(dir).filter((n) => n.endsWith(".ts"))) {
    readFileSync(join(dir, n), "utf8").split("\n").forEach((line, i) => {
      if (FORBIDDEN.test(line)) found.push(`${n}:${i + 1}: ${line.trim()}`);
    });
  }
  expect(found).toEqual([]);
});

test("the plug directory is an inotify watch on the event source: a plug and an unplug each run onChange once", async () => {
  await loopReady();
  const plugDir = mkdtempSync(join(tmpdir(), "camera-watch-"));
  const b = new VirtualBackend({ cameras: ["Virtual Camera"], plugDir, log });
  const watchesBefore = loopStats.watches(), dirsBefore = ino.dirWatchCount();
  let changes = 0;
  const unwatch = b.watch(() => void changes++);
  try {
    expect(ino.dirWatchCount()).toBe(dirsBefore + 1);
    expect(loopStats.watches()).toBe(watchesBefore + (dirsBefore ? 0 : 1));
    writeFileSync(join(plugDir, "usb1"), "USB Camera\n");
    await eventually(() => changes === 1, 2000);
    expect(b.list().map((d) => d.name)).toEqual(["Virtual Camera", "USB Camera"]);
    rmSync(join(plugDir, "usb1"));
    await eventually(() => changes === 2, 2000);
    expect(b.list().map((d) => d.name)).toEqual(["Virtual Camera"]);
  } finally {
    unwatch();
    b.close();
    rmSync(plugDir, { recursive: true, force: true });
  }
  expect(ino.dirWatchCount()).toBe(dirsBefore);
  expect(loopStats.watches()).toBe(watchesBefore);
});

test("the Linux backend's device directory: a video node appearing, its mode set by udev later, and its removal are each seen", async () => {
  await loopReady();
  const devDir = mkdtempSync(join(tmpdir(), "camera-watch-dev-"));
  const b = new LinuxBackend({ devDir, log });
  let changes = 0;
  const unwatch = b.watch(() => void changes++);
  try {
    writeFileSync(join(devDir, "video3"), "");
    await eventually(() => changes === 1, 3000);
    // udev setting the node's mode after the settle time is a change too.
    chmodSync(join(devDir, "video3"), 0o660);
    await eventually(() => changes === 2, 3000);
    rmSync(join(devDir, "video3"));
    await eventually(() => changes === 3, 3000);
  } finally {
    unwatch();
    b.close();
    rmSync(devDir, { recursive: true, force: true });
  }
});
