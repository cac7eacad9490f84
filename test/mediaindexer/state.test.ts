// The media indexer's start on a state directory it cannot use: create() rejects with
// an Error naming the path (err.path) and carrying the errno (err.code), so the
// runtime can say which service could not start, on what, and keep the others.
import { test, expect, afterAll } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mediaindexer from "../../src/services/mediaindexer/service";
import { loadBoard } from "../../src/core/board";
import { configureLogging } from "../../src/core/log";

const skip = process.getuid?.() !== 0 ? "needs root (mount)" : null;
const log = configureLogging("silent");
const base = mkdtempSync(join(tmpdir(), "mediaindexer-state-"));
const mounts: string[] = [];
afterAll(() => {
  for (const m of mounts.reverse()) Bun.spawnSync(["umount", "-l", m]);
  rmSync(base, { recursive: true, force: true });
});

const config = { removableRoot: null, plugins: ["storage"], detect: false, watch: false, rescanInterval: 0, fallbackRescanInterval: 0 };
const create = (stateDir: string) =>
  mediaindexer.create({
    board: loadBoard("virtual"), stateDir, log, busAddress: "", peers: {} as any, leases: {} as any,
    topics: { count: () => 0 } as any, config, files: {} as any,
  });
const failure = (p: Promise<unknown> | unknown) => Promise.resolve(p).then(() => null, (e) => e);
const mount = (dir: string, options: string, ...extra: string[]) => {
  const r = Bun.spawnSync(["mount", ...extra, "-o", options, "tmpfs", dir]);
  if (r.exitCode !== 0) throw new Error(`mount ${dir}: ${r.stderr.toString()}`);
};

test.skipIf(!!skip)("a state directory on a read-only file system (used before): create() rejects with err.code EROFS and err.path naming it", async () => {
  const ro = join(base, "ro");
  mkdirSync(ro);
  mount(ro, "size=4m", "-t", "tmpfs");
  mounts.push(ro);
  const stateDir = join(ro, "mediaindexer");
  // Used once (thumbnail and database directories, the database), then the file system goes read-only.
  const first = await create(stateDir);
  await first.stop?.();
  mount(ro, "remount,ro");
  const err = await failure(create(stateDir));
  expect(err).toBeInstanceOf(Error);
  expect(err.code).toBe("EROFS");
  expect(typeof err.path).toBe("string");
  expect(err.path.startsWith(`${stateDir}/`)).toBe(true);
  expect(err.message).toContain(err.path);
  expect(err.message).toContain("EROFS");
});
