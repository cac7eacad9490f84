// The media indexer acts with its callers' rights. The service runs in its own
// process (`bun src/main.ts serve`, as root) on a private bus; the callers are other
// processes of uid 65534, with no groups or with devservices-media:
// - requestMediaScan covers only what the caller may read: a root-only (0700)
//   directory is refused, and inside a tree it may read, the directories and files it
//   may not are skipped, even while it swaps a directory and a symlink to one;
// - the lists and metadata answer a caller only entries of directories it may read
//   (subscriptions included);
// - requestDelete deletes only what the caller may delete, and says so when not;
// - getMediaDbPermission is for root and the devservices-media group.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, lchownSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, spawnSync, type Subprocess } from "bun";
import { BUN, ROOT, eventually, openBusToAll, spawnScript, testEnv, type Env } from "../helpers/harness";
import { testAccounts } from "../layer/accounts";
import type { BusClient } from "../../src/bus/client";
import type { Json } from "../../src/core/errors";
import { mp3 } from "./media";

const MI = "com.vendor.service.mediaindexer";
const NOBODY = 65534;
const CLIENT = "test/fixtures/mediaindexer-client.ts";
const skip = process.getuid?.() !== 0 ? "needs root (setpriv, chown)" : null;
if (skip) console.warn(`media indexer caller tests skipped: ${skip}`);

describe.skipIf(skip !== null)("the media indexer acts with the caller's rights", () => {
  let env: Env;
  let base: string;
  let stateDir: string;
  let svc: Subprocess;
  let root: BusClient;
  let media: number;
  /** A group of grantGroups in the test's board (members may grant for any service). */
  let granting: number;
  const p = (...parts: string[]) => join(base, ...parts);

  /** A file or directory of root with a mode (and a group). */
  const own = (path: string, mode: number, uid = 0, gid = 0) => {
    chownSync(path, uid, gid);
    chmodSync(path, mode);
  };
  const song = (path: string, title: string, frames = 8) => {
    mkdirSync(join(path, ".."), { recursive: true });
    writeFileSync(path, mp3({ title, frames }));
    chmodSync(path, 0o644);
  };

  beforeAll(async () => {
    ({ "devservices-media": media, devservices: granting } = testAccounts().gids);
    env = await testEnv();
    openBusToAll(env.bus.address);
    base = mkdtempSync(join(tmpdir(), "mediaindexer-callers-"));
    chmodSync(base, 0o755);
    // Root's: a 0700 directory; a readable tree with a 0700 and a group-only directory in it.
    // The same names in root's 0700 directory and in the user's directory that the user swaps with a symlink to it.
    for (let i = 0; i < 30; i++) song(p(`secret/s${i}.mp3`), "Secret Song", 12);
    song(p("secret/deep/x.mp3"), "Secret Deep");
    own(p("secret"), 0o700);
    song(p("shared/open.mp3"), "Open Song");
    song(p("shared/closed/closed.mp3"), "Closed Song");
    song(p("shared/group/grp.mp3"), "Group Song");
    own(p("shared/closed"), 0o700);
    own(p("shared/group"), 0o750, 0, media);
    // The user's: its files, a file of root's it may not read, and a directory and a symlink to root's one.
    song(p("user/mine.mp3"), "Mine");
    song(p("user/rootfile.mp3"), "Root File");
    own(p("user/rootfile.mp3"), 0o600);
    for (let i = 0; i < 30; i++) song(p(`user/swdir/s${i}.mp3`), "Swap Real");
    symlinkSync(p("secret"), p("user/swlink"));
    for (const f of ["user", "user/mine.mp3", "user/swdir", ...Array.from({ length: 30 }, (_, i) => `user/swdir/s${i}.mp3`)]) chownSync(p(f), NOBODY, NOBODY);
    lchownSync(p("user/swlink"), NOBODY, NOBODY);
    mkdirSync(p("home"));
    own(p("home"), 0o755, NOBODY, NOBODY);
    stateDir = p("state");
    mkdirSync(stateDir, { mode: 0o711 });
    const board = p("board.json");
    writeFileSync(board, JSON.stringify({
      name: "mi-callers", backend: "virtual", services: ["mediaindexer"],
      serviceConfig: { mediaindexer: { mediaRoots: [], removableRoot: null, plugins: ["storage"], rescanInterval: 0, detect: false, grantGroups: ["devservices"] } },
    }));
    svc = spawn([BUN, join(ROOT, "src/main.ts"), "serve", "--bus", env.bus.address, "--board", board, "--state-dir", stateDir, "--log-level", "fatal"], { env: { ...process.env },
      stdout: "ignore", stderr: "inherit",
    });
    root = await env.client();
    await eventually(async () => (await root.call(MI, "getDeviceList", {}, { timeoutMs: 1000 }).catch(() => null))?.returnValue === true, 15000, 50);
  }, 30000);

  afterAll(async () => {
    svc?.kill();
    await svc?.exited;
    await env?.stop();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  const setpriv = (groups: number[]) => ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, groups.length ? `--groups=${groups.join(",")}` : "--clear-groups"];
  /** The client fixture as uid 65534 with these groups; its answers, one per line. */
  async function as(groups: number[], ...args: string[]): Promise<Json[]> {
    const proc = spawn([...setpriv(groups), BUN, join(ROOT, CLIENT), ...args], {
      cwd: p("home"), stdout: "pipe", stderr: "pipe",
      env: { DEVSERVICES_BUS: env.bus.address, HOME: p("home"), TMPDIR: p("home"), PATH: "/usr/bin:/bin" },
    });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    if (code !== 0) throw new Error(`client as ${NOBODY} ${args.join(" ")}: exit ${code}: ${err}`);
    return out.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as Json);
  }
  /** The client fixture as root. */
  async function asRoot(...args: string[]): Promise<Json[]> {
    const proc = spawn([BUN, join(ROOT, CLIENT), ...args], { stdout: "pipe", stderr: "inherit", env: { ...process.env, DEVSERVICES_BUS: env.bus.address } });
    const [out] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    return out.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as Json);
  }
  const one = async (groups: number[], method: string, payload: object) => (await as(groups, "call", method, JSON.stringify(payload)))[0]!;
  const titles = (r: Json, key = "audioList") => ((r[key] as Json).results as Json[]).map((e) => e.title as string);
  const idle = () =>
    eventually(async () => {
      const r = await root.call(MI, "getDeviceList", {});
      return (r.pluginList as Json[]).every((pl) => (pl.deviceList as Json[]).every((d) => d.state === "idle"));
    }, 20000, 20);
  const indexed = async () => titles(await root.call(MI, "getAudioList", { count: 5000 }));
  const devices = async () => ((await root.call(MI, "getDeviceList", {})).pluginList as Json[]).flatMap((pl) => (pl.deviceList as Json[]).map((d) => d.uri as string));

  test("requestMediaScan: a directory uid 65534 may not read is refused; inside one it may, only what it may read is indexed", async () => {
    const refused = await one([], "requestMediaScan", { path: p("secret") });
    expect(refused).toMatchObject({ returnValue: false, errorCode: -1, errorText: "Scan Failed", errno: "EACCES" });
    // The service's own state directory is never a target.
    expect(await one([], "requestMediaScan", { path: join(stateDir, "mediaindexer") })).toMatchObject({ returnValue: false, errorCode: -1, errorText: "Scan Failed", errno: "EACCES" });
    await idle();
    expect(await devices()).not.toContain(`storage://${p("secret")}`);
    expect(await indexed()).not.toContain("Secret Song");

    expect(await one([], "requestMediaScan", { path: p("shared") })).toMatchObject({ returnValue: true, errorCode: 0, errorText: "No error" });
    await idle();
    let all = await indexed();
    expect(all).toContain("Open Song");
    expect(all).not.toContain("Closed Song");
    expect(all).not.toContain("Group Song");
    // With the group, its directory too; never the 0700 one.
    expect(await one([media], "requestMediaScan", { path: p("shared") })).toMatchObject({ returnValue: true, errorText: "No error" });
    await idle();
    all = await indexed();
    expect(all).toContain("Group Song");
    expect(all).not.toContain("Closed Song");
    // The user's own directory: its files, not root's 0600 file in it.
    expect(await one([], "requestMediaScan", { path: p("user") })).toMatchObject({ returnValue: true, errorText: "No error" });
    await idle();
    all = await indexed();
    expect(all).toContain("Mine");
    expect(all).toContain("Swap Real");
    expect(all).not.toContain("Root File");
    expect(all).not.toContain("Secret Song");
  }, 60000);

  test("lists and metadata answer uid 65534 only entries of directories it may read; root sees them all", async () => {
    // Root's scan indexes everything below shared.
    expect(await root.call(MI, "requestMediaScan", { path: p("shared") })).toMatchObject({ returnValue: true });
    await idle();
    const everything = await indexed();
    expect(everything).toEqual(expect.arrayContaining(["Open Song", "Closed Song", "Group Song"]));

    const plain = titles(await one([], "getAudioList", { count: 500 }));
    expect(plain).toEqual(expect.arrayContaining(["Open Song", "Mine"]));
    expect(plain).not.toContain("Closed Song");
    expect(plain).not.toContain("Group Song");
    const grouped = titles(await one([media], "getAudioList", {}));
    expect(grouped).toEqual(expect.arrayContaining(["Open Song", "Group Song"]));
    expect(grouped).not.toContain("Closed Song");
    const ofDevice = await one([], "getAudioList", { uri: `storage://${p("shared")}` });
    expect(titles(ofDevice)).toEqual(["Open Song"]);
    expect((ofDevice.audioList as Json).count).toBe(1);

    const closedItem = `storage://${p("shared")}/closed/closed.mp3`;
    expect(await one([], "getAudioMetadata", { uri: closedItem })).toMatchObject({ returnValue: false, errorCode: -1, errorText: `No such media item: ${closedItem}` });
    expect(await root.call(MI, "getAudioMetadata", { uri: closedItem })).toMatchObject({ returnValue: true, metadata: { title: "Closed Song" } });
    expect(await one([media], "getAudioMetadata", { uri: `storage://${p("shared")}/group/grp.mp3` })).toMatchObject({ returnValue: true, metadata: { title: "Group Song" } });
  }, 60000);

  test("a list subscription of uid 65534 gets new entries of directories it may read only", async () => {
    const watcher = spawnScript(CLIENT, ["watch", JSON.stringify({ uri: `storage://${p("shared")}`, count: 50 })],
      { HOME: p("home"), TMPDIR: p("home"), DEVSERVICES_BUS: env.bus.address }, setpriv([]));
    try {
      expect(JSON.parse(await watcher.waitFor("subscribed"))).toMatchObject({ returnValue: true, subscribed: true });
      song(p("shared/closed/two.mp3"), "Closed Two");
      song(p("shared/open2.mp3"), "Open Two");
      expect(await root.call(MI, "requestMediaScan", { path: p("shared") })).toMatchObject({ returnValue: true });
      await idle();
      expect(await indexed()).toEqual(expect.arrayContaining(["Closed Two", "Open Two"]));
      await watcher.waitFor("Open Two");
      // One more entry after them: every push up to it has been sent.
      song(p("shared/open3.mp3"), "Open Three");
      await root.call(MI, "requestMediaScan", { path: p("shared") });
      await watcher.waitFor("Open Three");
      const seen = watcher.lines.map((l) => JSON.parse(l) as Json).flatMap((m) => titles(m));
      expect(seen).not.toContain("Closed Two");
      expect(seen).not.toContain("Closed Song");
    } finally {
      await watcher.kill();
    }
  }, 60000);

  test("requestDelete: what uid 65534 may not delete is refused with an error answer and stays; its own file goes", async () => {
    const denied = { returnValue: false, errorCode: -1, errorText: "requestDelete: permission denied" };
    expect(await one([], "requestDelete", { uri: `file://${p("shared/open.mp3")}` })).toMatchObject(denied);
    expect(existsSync(p("shared/open.mp3"))).toBe(true);
    expect(await one([], "requestDelete", { uri: `storage://${p("shared")}/closed/closed.mp3` })).toMatchObject(denied);
    expect(existsSync(p("shared/closed/closed.mp3"))).toBe(true);
    // With the group it may read that directory, not write it.
    expect(await one([media], "requestDelete", { uri: `storage://${p("shared")}/group/grp.mp3` })).toMatchObject(denied);
    expect(existsSync(p("shared/group/grp.mp3"))).toBe(true);
    expect(await indexed()).toEqual(expect.arrayContaining(["Open Song", "Closed Song", "Group Song"]));
    // Its own file, in its own directory.
    expect(await one([], "requestDelete", { uri: `file://${p("user/mine.mp3")}` })).toEqual({ returnValue: true, count: 1, errorCode: 0, errorText: "No Error" });
    expect(existsSync(p("user/mine.mp3"))).toBe(false);
    expect(await indexed()).not.toContain("Mine");
  }, 60000);

  test("getMediaDbPermission: refused to uid 65534 without devservices-media, then allowed with it (for itself only)", async () => {
    const readDb = () => {
      const r = spawnSync(["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "/usr/bin/python3", "-c",
        `import sqlite3\nc=sqlite3.connect("file:${join(stateDir, "mediaindexer/db/media.db")}?mode=ro", uri=True)\nprint(c.execute("select count(*) from media").fetchone()[0])`],
        { stdout: "pipe", stderr: "pipe", env: { PATH: "/usr/bin:/bin" } });
      return { out: r.stdout.toString().trim(), err: r.stderr.toString() };
    };
    const refused = { returnValue: false, errorCode: -1, errorText: "getMediaDbPermission: permission denied" };
    expect((await as([], "grant-self"))[0]).toMatchObject(refused);
    expect(readDb().err).toMatch(/unable to open database/);
    // A member may not open the database to another user either.
    expect(await one([media], "getMediaDbPermission", { serviceName: "root" })).toMatchObject(refused);
    expect((await as([media], "grant-self"))[0]).toEqual({ returnValue: true, errorCode: 0, errorText: "No Error" });
    const r = readDb();
    expect(r.err).toBe("");
    expect(Number(r.out)).toBeGreaterThan(0);
  }, 60000);

  test("getMediaDbPermission for another service: refused to a devservices-media member, allowed with a grantGroups group too", async () => {
    expect(await one([media], "getMediaDbPermission", { serviceName: "root" })).toMatchObject({ returnValue: false, errorCode: -1, errorText: "getMediaDbPermission: permission denied" });
    expect(await one([media, granting], "getMediaDbPermission", { serviceName: "root" })).toEqual({ returnValue: true, errorCode: 0, errorText: "No Error" });
  }, 60000);

  test("requestDelete of a path not indexed: refused to uid 65534 in a directory it may not search, count 0 for root", async () => {
    const uri = `file://${p("secret/none.mp3")}`;
    expect(await one([], "requestDelete", { uri })).toMatchObject({ returnValue: false, errorCode: -1, errorText: "requestDelete: permission denied" });
    expect(await root.call(MI, "requestDelete", { uri })).toEqual({ returnValue: true, count: 0, errorCode: 0, errorText: "No Error" });
  }, 60000);

  test("requestMediaScan of a device URI walks with the caller's rights, not the device owner's", async () => {
    song(p("grpdev/open.mp3"), "Grpdev Open");
    song(p("grpdev/group/g.mp3"), "Grpdev Group");
    own(p("grpdev/group"), 0o750, 0, media);
    // The device is uid 65534's (no groups): its directory of the group is not indexed.
    expect(await one([], "requestMediaScan", { path: p("grpdev") })).toMatchObject({ returnValue: true, errorText: "No error" });
    await idle();
    expect(await indexed()).toContain("Grpdev Open");
    expect(await indexed()).not.toContain("Grpdev Group");
    // The same uid with the group, naming the device by its URI: the group's directory too.
    expect(await one([media], "requestMediaScan", { path: `storage://${p("grpdev")}` })).toMatchObject({ returnValue: true, errorText: "No error" });
    await idle();
    expect(await indexed()).toContain("Grpdev Group");
  }, 60000);

  test("a device a uid 65534 request made is scanned with its rights later (a directory moved in, noticed by inotify)", async () => {
    song(p("owned/first.mp3"), "Owned First");
    chownSync(p("owned"), NOBODY, NOBODY);
    expect(await one([], "requestMediaScan", { path: p("owned") })).toMatchObject({ returnValue: true, errorText: "No error" });
    await idle();
    const uri = `storage://${p("owned")}`;
    const lastScan = async () => {
      const r = await root.call(MI, "getDeviceList", {});
      return (r.pluginList as Json[]).flatMap((pl) => pl.deviceList as Json[]).find((d) => d.uri === uri)?.lastScan as Json | undefined;
    };
    const before = (await lastScan())?.at;
    // Root's tree, with a directory only root may read, moved in at once: the scan inotify queues has the owner's rights.
    song(p("stage/late/open.mp3"), "Late Open");
    song(p("stage/late/closed/x.mp3"), "Late Closed");
    own(p("stage/late/closed"), 0o700);
    renameSync(p("stage/late"), p("owned/late"));
    await eventually(async () => (await indexed()).includes("Late Open") && (await lastScan())?.at !== before, 20000, 20);
    await idle();
    expect(await indexed()).not.toContain("Late Closed");
  }, 60000);

  test("a directory swapped with a symlink to a root-only one while uid 65534's scans run: the root-only files are never indexed", async () => {
    const swapper = spawn([...setpriv([]), BUN, join(ROOT, "test/fixtures/swapper.ts"),
      p("user/sw"), p("user/swdir"), p("user/swlink")], { cwd: p("home"), stdout: "pipe", stderr: "inherit", env: { HOME: p("home"), TMPDIR: p("home"), PATH: "/usr/bin:/bin" } });
    // Every entry written meanwhile reaches root's subscription (whatever later scans make of it).
    const written: string[] = [];
    const sub = await root.subscribe(MI, "getAudioList", { subscribe: true, count: 5000 }, (m) => void written.push(...titles(m)));
    try {
      const reader = swapper.stdout.getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toContain("swapping");
      const answers = await as([], "scans", p("user"), "40");
      expect(answers.length).toBe(40);
      expect(answers.every((a) => a.errorText === "No error" || a.errorText === "Scan Failed")).toBe(true);
    } finally {
      swapper.kill();
      await swapper.exited;
    }
    await idle();
    sub.cancel();
    expect(written).toContain("Swap Real");
    expect(written).not.toContain("Secret Song");
    expect(written).not.toContain("Secret Deep");
    // Swapping over, the real directory has one of its two names: a last scan indexes it there.
    expect((await as([], "scans", p("user"), "1"))[0]).toMatchObject({ returnValue: true });
    await idle();
    const all = await indexed();
    expect(all).not.toContain("Secret Song");
    expect(all).not.toContain("Secret Deep");
    expect(all).toContain("Swap Real");
  }, 90000);

  test("list and device list latency for uid 65534 with 100 directories it may not read", async () => {
    for (let d = 0; d < 200; d++) {
      for (let f = 0; f < 5; f++) song(p(`many/d${d}/s${f}.mp3`), `Many ${d}.${f}`);
      if (d % 2 === 0) own(p(`many/d${d}`), 0o700);
    }
    expect(await root.call(MI, "requestMediaScan", { path: p("many") })).toMatchObject({ returnValue: true });
    await idle();
    const stats = (ms: number[]) => {
      const s = [...ms].sort((a, b) => a - b);
      return { median: s[Math.floor(s.length / 2)]!, p90: s[Math.floor(s.length * 0.9)]!, max: s.at(-1)! };
    };
    const [list] = await as([], "lists", "40", "getAudioList", JSON.stringify({ uri: `storage://${p("many")}`, count: 500 }));
    const [rootList] = await asRoot("lists", "40", "getAudioList", JSON.stringify({ uri: `storage://${p("many")}`, count: 500 }));
    const [devs] = await as([], "lists", "40", "getDeviceList", "{}");
    const visible = titles(await one([], "getAudioList", { uri: `storage://${p("many")}`, count: 500 }));
    expect(visible.length).toBe(500);
    expect(visible.every((t) => Number(/^Many (\d+)\./.exec(t)![1]) % 2 === 1)).toBe(true);
    const l = stats(list!.ms as number[]);
    const d = stats(devs!.ms as number[]);
    const r = stats(rootList!.ms as number[]);
    console.log(`getAudioList (500 of 1000 entries, 100 of 200 directories hidden) as uid 65534: median ${l.median.toFixed(1)} ms, p90 ${l.p90.toFixed(1)} ms, max ${l.max.toFixed(1)} ms; as root (nothing hidden): median ${r.median.toFixed(1)} ms, p90 ${r.p90.toFixed(1)} ms; getDeviceList as uid 65534: median ${d.median.toFixed(1)} ms, max ${d.max.toFixed(1)} ms`);
    expect(l.median).toBeLessThan(100);
    expect(d.median).toBeLessThan(20);
  }, 90000);
});
