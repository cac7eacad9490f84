// The handler pool follows its directories through the inotify directory watch on
// the event source (src/ffi/inotify.ts), with no fs.watch and no polling timer: a
// directory that does not exist yet is awaited by a watch of its nearest existing
// ancestor, several levels up.
import { test, expect } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import pino from "pino";
import * as ino from "../../src/ffi/inotify";
import { loopReady, loopStats } from "../../src/ffi/loop";
import { HandlerRegistry } from "../../src/services/intent/backend/registry";
import { eventually, ROOT } from "../helpers/harness";
import { installApp, removeApp, tempDir } from "./apps";

const log = pino({ level: "silent" });
/** fs.watch / fs.watchFile (called so, or imported from node:fs), and interval timers. */
const FORBIDDEN = /\bfs\.watch(File)?\b|\bwatch(File)?\b.*\bfrom "(node:)?fs"|\bsetInterval\(/;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith(".ts") ? [p] : [];
  });
}

test("the intent service's sources hold no fs.watch and no interval timer", () => {
  const found: string[] = [];
  for (const f of sources(join(ROOT, "src/services/intent"))) {
    readFileSync(f, "utf8").split("\n").forEach((line, i) => {
      if (FORBIDDEN.test(line)) found.push(`${f.slice(ROOT.length + 1)}:${i + 1}: ${line.trim()}`);
    });
  }
  expect(found).toEqual([]);
});

test("the registry's watches are inotify watches on the event source; a directory created later, three levels down, is picked up", async () => {
  await loopReady();
  const root = tempDir();
  const apps = join(root, "apps");
  const later = join(root, "a", "b", "later");
  installApp(apps, { id: "com.example.first", intentFilters: [] });
  const watchesBefore = loopStats.watches(), dirsBefore = ino.dirWatchCount();
  const reg = new HandlerRegistry([{ dir: apps }, { dir: later }], log, { reloadDelayMs: 10 });
  try {
    reg.start();
    expect(reg.handlers.map((h) => h.name)).toEqual(["com.example.first"]);
    // apps, apps/com.example.first, and root (the nearest existing ancestor of a/b/later): one inotify fd.
    expect(ino.dirWatchCount()).toBe(dirsBefore + 3);
    expect(loopStats.watches()).toBe(watchesBefore + (dirsBefore ? 0 : 1));

    mkdirSync(join(root, "a"));
    await eventually(() => ino.dirWatchCount() === dirsBefore + 3 && reg.generation > 1, 2000);
    mkdirSync(join(root, "a", "b"));
    const gen = reg.generation;
    await eventually(() => reg.generation > gen, 2000);
    mkdirSync(later);
    installApp(later, { id: "com.example.late", intentFilters: [] });
    await eventually(() => reg.handlers.some((h) => h.name === "com.example.late"), 2000);
    // The ancestor's watch is gone; later and its app directory are watched.
    expect(ino.dirWatchCount()).toBe(dirsBefore + 4);

    removeApp(apps, "com.example.first");
    await eventually(() => !reg.handlers.some((h) => h.name === "com.example.first"), 2000);
    // The whole tree removed: awaited again from root.
    rmSync(join(root, "a"), { recursive: true });
    await eventually(() => reg.handlers.length === 0, 2000);
    await eventually(() => ino.dirWatchCount() === dirsBefore + 2, 2000);
    mkdirSync(later, { recursive: true });
    installApp(later, { id: "com.example.again", intentFilters: [] });
    await eventually(() => reg.handlers.some((h) => h.name === "com.example.again"), 2000);
  } finally {
    reg.stop();
    rmSync(root, { recursive: true, force: true });
  }
  expect(ino.dirWatchCount()).toBe(dirsBefore);
  expect(loopStats.watches()).toBe(watchesBefore);
}, 20000);
