// The file system with a caller's rights (src/ffi/as-caller.ts): the kernel decides
// for the caller's uid and groups, what is created is the caller's, symlinks on the
// path are refused, and the process's own credentials never change.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openAs, unlinkAs, accessAs, mkdirAs, setThreadIdleMs, THREAD_IDLE_MS, O_WRONLY, O_RDONLY, O_CREAT, O_EXCL, W_OK, R_OK } from "../../src/ffi/as-caller";
import { eventually } from "../helpers/harness";
import { libc } from "../../src/ffi/libc";

const skip = process.getuid?.() !== 0 ? "needs root (takes other uids' rights)" : null;
const nobody = { uid: 65534, gid: 65534, groups: [] };
const GROUP = 4242;
const member = { uid: 65534, gid: 65534, groups: [GROUP] };
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "as-caller-"));
  chmodSync(dir, 0o755);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The errno a request failed with, 0 when it succeeded (an fd it gave is closed). bun test's
 * `expect(p).rejects` does not see a Worker's answers after the first, so no `rejects` here. */
const errnoOf = (p: Promise<unknown>) =>
  p.then(
    (fd) => (typeof fd === "number" && fd > 2 && libc.close(fd), 0),
    (e) => (e as { errno: number }).errno,
  );

const ownStatus = () => /^Uid:.*$/m.exec(readFileSync("/proc/thread-self/status", "utf8"))![0] + /^Gid:.*$/m.exec(readFileSync("/proc/thread-self/status", "utf8"))![0];

test.skipIf(!!skip)("a root-owned file: nobody may not write it, root may; the group that may, may", async () => {
  const f = join(dir, "root-only");
  writeFileSync(f, "root's");
  chmodSync(f, 0o644);
  expect(await errnoOf(openAs(nobody, f, O_WRONLY))).toBe(13);
  expect(readFileSync(f, "utf8")).toBe("root's");
  const fd = await openAs(nobody, f, O_RDONLY);
  expect(fd).toBeGreaterThan(2);
  libc.close(fd);
  // A file of the group, writable by it.
  const g = join(dir, "group-file");
  writeFileSync(g, "");
  chownSync(g, 0, GROUP);
  chmodSync(g, 0o660);
  expect(await errnoOf(openAs(nobody, g, O_WRONLY))).toBe(13);
  const gfd = await openAs(member, g, O_WRONLY);
  libc.close(gfd);
  expect(await accessAs(member, g, W_OK)).toBe(true);
  expect(await accessAs(nobody, g, R_OK)).toBe(false);
  // The process (and this thread) kept its own rights throughout.
  expect(libc.getuid()).toBe(0);
  expect(ownStatus()).toMatch(/^Uid:\s+0\s+0\s+0\s+0Gid:\s+0\s+0\s+0\s+0$/);
});

test.skipIf(!!skip)("what is created is the caller's, with O_EXCL; a directory the caller may not write refuses it", async () => {
  const open = join(dir, "drop");
  mkdirSync(open);
  chmodSync(open, 0o1777);
  const fd = await openAs(nobody, join(open, "new.jpg"), O_WRONLY | O_CREAT | O_EXCL, 0o640);
  libc.close(fd);
  const st = statSync(join(open, "new.jpg"));
  expect([st.uid, st.gid, st.mode & 0o777]).toEqual([65534, 65534, 0o640]);
  // O_EXCL: an existing name is not opened.
  expect(await errnoOf(openAs(nobody, join(open, "new.jpg"), O_WRONLY | O_CREAT | O_EXCL))).toBe(17);
  // Root's directory: no file appears in it.
  expect(await errnoOf(openAs(nobody, join(dir, "planted"), O_WRONLY | O_CREAT | O_EXCL))).toBe(13);
  expect(existsSync(join(dir, "planted"))).toBe(false);
  await mkdirAs(nobody, join(open, "sub"));
  expect(statSync(join(open, "sub")).uid).toBe(65534);
});

test.skipIf(!!skip)("a symlink anywhere on the path is refused, even one to a file the caller may write", async () => {
  const open = join(dir, "links");
  mkdirSync(open);
  chmodSync(open, 0o1777);
  const target = join(open, "target");
  writeFileSync(target, "");
  chmodSync(target, 0o666);
  symlinkSync(target, join(open, "link"));
  expect(await errnoOf(openAs(nobody, join(open, "link"), O_WRONLY))).toBe(40); // ELOOP
  symlinkSync(open, join(dir, "dirlink"));
  expect(await errnoOf(openAs(nobody, join(dir, "dirlink", "target"), O_WRONLY))).toBe(40);
  // Through the real path it opens.
  libc.close(await openAs(nobody, target, O_WRONLY));
});

test.skipIf(!!skip)("deletes: a file in a directory the caller may not write stays; one in its own directory goes; sticky bits hold", async () => {
  const f = join(dir, "keep");
  writeFileSync(f, "x");
  chmodSync(f, 0o666);
  expect(await errnoOf(unlinkAs(nobody, f))).toBe(13);
  expect(existsSync(f)).toBe(true);
  const sticky = join(dir, "sticky");
  mkdirSync(sticky);
  chmodSync(sticky, 0o1777);
  writeFileSync(join(sticky, "roots"), "");
  expect(await errnoOf(unlinkAs(nobody, join(sticky, "roots")))).toBe(1); // EPERM
  libc.close(await openAs(nobody, join(sticky, "mine"), O_WRONLY | O_CREAT | O_EXCL));
  await unlinkAs(nobody, join(sticky, "mine"));
  expect(existsSync(join(sticky, "mine"))).toBe(false);
});

test.skipIf(!!skip)("many requests at once from different identities keep each one's rights", async () => {
  const f = join(dir, "mixed");
  writeFileSync(f, "");
  chmodSync(f, 0o600);
  const results = await Promise.allSettled(
    Array.from({ length: 200 }, (_, i) => (i % 2 ? openAs(nobody, f, O_RDONLY) : openAs({ uid: 0, gid: 0, groups: [] }, f, O_RDONLY))),
  );
  results.forEach((r, i) => {
    expect(r.status).toBe(i % 2 ? "rejected" : "fulfilled");
    if (r.status === "fulfilled") libc.close(r.value);
  });
});

test.skipIf(!!skip)("a FIFO, a socket or a device where a file was expected is refused at once, and the thread goes on serving", async () => {
  const fifo = join(dir, "fifo");
  Bun.spawnSync(["mkfifo", fifo]);
  chmodSync(fifo, 0o666);
  const t0 = performance.now();
  expect(await errnoOf(openAs(nobody, fifo, O_RDONLY))).toBe(6); // ENXIO
  expect(await errnoOf(openAs(nobody, fifo, O_WRONLY))).toBe(6);
  expect(await errnoOf(openAs({ uid: 0, gid: 0, groups: [] }, "/dev/null", O_WRONLY))).toBe(6);
  expect(performance.now() - t0).toBeLessThan(1000);
  // The next request is served.
  expect(await errnoOf(openAs(nobody, "/etc/passwd", O_RDONLY))).toBe(0);
});

/** Threads of this process named "Worker" (Bun's name for a Worker's thread). */
const workerThreads = () =>
  readdirSync("/proc/self/task").filter((t) => {
    try {
      return readFileSync(`/proc/self/task/${t}/comm`, "utf8").trim() === "Worker";
    } catch {
      return false; // ended meanwhile
    }
  }).length;

test.skipIf(!!skip)("the thread ends after its idle time without requests, and the next request starts another", async () => {
  setThreadIdleMs(300);
  try {
    writeFileSync(join(dir, "idle.txt"), "x");
    // The thread the tests above started ends once idle for 300 ms.
    expect(await errnoOf(openAs(nobody, join(dir, "idle.txt"), O_RDONLY))).toBe(0);
    const running = workerThreads();
    await eventually(() => workerThreads() === running - 1, 10_000);
    // A request after the end: a new thread, the same rights.
    expect(await errnoOf(openAs(nobody, join(dir, "idle.txt"), O_RDONLY))).toBe(0);
    expect(await errnoOf(openAs(nobody, join(dir, "idle.txt"), O_WRONLY))).toBe(13); // EACCES: root's file, 0644
    expect(workerThreads()).toBe(running);
    // Requests closer together than the idle time keep the one thread.
    for (let i = 0; i < 5; i++) {
      await Bun.sleep(100);
      expect(await errnoOf(openAs(nobody, join(dir, "idle.txt"), O_RDONLY))).toBe(0);
      expect(workerThreads()).toBe(running);
    }
    await eventually(() => workerThreads() === running - 1, 10_000);
  } finally {
    setThreadIdleMs(THREAD_IDLE_MS);
  }
});
