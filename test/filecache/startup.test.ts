// A state directory the file cache cannot use stops its start with an Error that names
// the path and carries the errno's code (err.path, err.code), so the process can say
// which service and which path failed and keep the other services running. SQLite's
// own errors name neither; the service checks its directories and files first.
import { test, expect, afterAll } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import filecache from "../../src/services/filecache/service";
import { loadBoard } from "../../src/core/board";
import { configureLogging } from "../../src/core/log";
import { spawnScript } from "../helpers/harness";

const skip = process.getuid?.() !== 0 ? "needs root (mount, setpriv)" : null;
const base = mkdtempSync(join(tmpdir(), "fc-startup-"));
chmodSync(base, 0o755);
const mounts: string[] = [];
afterAll(() => {
  for (const m of mounts.reverse()) Bun.spawnSync(["umount", "-l", m]);
  rmSync(base, { recursive: true, force: true });
});

const log = configureLogging("silent");
/** create() of the service module alone, as the runtime calls it (awaited: a throw is a rejection). */
const create = async (stateDir: string) =>
  await filecache.create({
    board: loadBoard("virtual"),
    stateDir,
    log,
    busAddress: "",
    peers: {} as any,
    leases: {} as any,
    topics: {} as any,
    config: { configFile: null },
    files: {} as any,
  });

const mount = (dir: string, options: string, ...extra: string[]) => {
  const r = Bun.spawnSync(["mount", ...extra, "-o", options, "tmpfs", dir]);
  if (r.exitCode !== 0) throw new Error(`mount ${dir}: ${r.stderr.toString()}`);
};

test.skipIf(!!skip)("a state directory on a read-only file system: create() rejects with err.code EROFS and err.path naming it", async () => {
  const ro = join(base, "ro");
  mkdirSync(ro);
  mount(ro, "size=4m", "-t", "tmpfs");
  mounts.push(ro);
  const stateDir = join(ro, "filecache");
  // Used once (directories and database there), then the file system goes read-only.
  const first = await create(stateDir);
  await first.stop?.();
  mount(ro, "remount,ro");
  const err: any = await create(stateDir).then(
    () => null,
    (e) => e,
  );
  expect(err).toBeInstanceOf(Error);
  expect(err.code).toBe("EROFS");
  expect(typeof err.path).toBe("string");
  expect(err.path.startsWith(stateDir + "/")).toBe(true);
  expect(err.message).toContain(err.path);
  expect(err.message).toContain("EROFS");

  // Never used: the directories cannot even be made.
  const fresh = join(ro, "other");
  const err2: any = await create(fresh).then(
    () => null,
    (e) => e,
  );
  expect(err2?.code).toBe("EROFS");
  expect(String(err2?.path).startsWith(fresh)).toBe(true);
}, 20000);

test.skipIf(!!skip)("as uid 65534, a state directory it may not write, or a metadata file it may not write: EACCES naming the path", async () => {
  const stateDir = join(base, "state");
  // Made by root (0755 directories, a 0644 database).
  const first = await create(stateDir);
  await first.stop?.();
  const asNobody = async () => {
    const p = spawnScript("test/fixtures/filecache-create.ts", [stateDir], { HOME: base }, ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]);
    const line = await p.waitFor((l) => l.startsWith("{"), 20000);
    await p.proc.exited;
    return JSON.parse(line);
  };
  const r = await asNobody();
  expect(r).toMatchObject({ ok: false, code: "EACCES" });
  expect(r.path.startsWith(stateDir + "/")).toBe(true);
  expect(r.message).toContain(r.path);

  // The directories are its own now, the database is still root's.
  for (const d of [stateDir, join(stateDir, "cache"), join(stateDir, "copies")]) chownSync(d, 65534, 65534);
  const r2 = await asNobody();
  expect(r2).toMatchObject({ ok: false, code: "EACCES", path: join(stateDir, "filecache.db") });

  // And with the database its own too, the service starts.
  chownSync(join(stateDir, "filecache.db"), 65534, 65534);
  expect(await asNobody()).toEqual({ ok: true });
}, 30000);

test("a file where a directory of the state directory should be: create() rejects with err.code ENOTDIR and err.path naming it", async () => {
  const stateDir = join(base, "notdir");
  mkdirSync(stateDir);
  writeFileSync(join(stateDir, "cache"), "not a directory");
  const err: any = await create(stateDir).then(
    () => null,
    (e) => e,
  );
  expect(err).toMatchObject({ code: "ENOTDIR", path: join(stateDir, "cache") });
  expect(err.message).toContain(join(stateDir, "cache"));
});
