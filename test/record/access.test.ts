// The recording pipeline acts with the caller's rights: recording is for root and
// devservices-record; the output file is a new file created by the caller (its uid
// and groups, no symlink on the path, never the state directory), written by
// GStreamer through its fd; a recording is the starting uid's (or root's) to pause,
// resume and stop. The services run in their own process (`bun src/main.ts serve
// record filecache`) on a private bus; callers are the shipped binary's `call` run
// as other uids (setpriv).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { binaryBuilt, binaryForAnyUser, groupGid, serveFromSource, callAsUser, swapAs, type Served } from "../helpers/harness";
import type { PrivateBus } from "../../src/bus/daemon";
import type { BusClient } from "../../src/bus/client";
import type { Json } from "../../src/core/errors";
import { ffprobe, AUDIO, MAIN, VIDEO } from "./env";
import virtual from "../../recipes/boards/virtual.json" with { type: "json" };

const GROUP = "devservices-record";
/** uid 1 (daemon): another uid the bus daemon knows (it refuses uids without a passwd entry). */
const NOBODY = 65534, OTHER = 1;
const FC = "com.vendor.service.filecache";
const skip = process.getuid?.() !== 0 ? "needs root (setpriv, chown)" : !binaryBuilt() ? "dist/devservices is not built (bun run build)" : null;
if (skip) console.warn(`record access tests skipped: ${skip}`);

const E1 = { returnValue: false, errorCode: 1, errorText: "recorder not created" };
const E4 = { returnValue: false, errorCode: 4, errorText: "Fails to unload the recorder" };
const E6 = { returnValue: false, errorCode: 6, errorText: "Invalid state" };
const OK = { returnValue: true };
const IMAGE = { videoSrc: "camera1", codec: "JPEG", width: 64, height: 48, quality: 50 };

/** Every path under dir with its size and modification time, for "untouched" checks. */
function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      const st = lstatSync(p);
      out.push(`${p} ${st.size} ${st.mtimeMs}`);
      if (e.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return out.sort();
}

describe.skipIf(skip !== null)("record: the caller's rights", () => {
  let bus: PrivateBus;
  let control: BusClient;
  let dir: string, state: string, rootDir: string, pub: string, mine: string, app: string;
  let gid: number;
  let service: Subprocess;
  let served: Served | undefined;

  beforeAll(async () => {
    gid = groupGid(GROUP);
    dir = mkdtempSync(join(tmpdir(), "record-access-"));
    app = binaryForAnyUser(dir);
    state = join(dir, "state");
    rootDir = join(dir, "root");
    pub = join(dir, "pub");
    mine = join(dir, "mine");
    for (const d of [state, rootDir, pub, mine]) mkdirSync(d, { mode: 0o755 });
    chmodSync(pub, 0o1777); // like /tmp: anyone creates, only owners replace
    chownSync(mine, NOBODY, NOBODY);
    writeFileSync(join(pub, "root.mp4"), "root's file\n");
    writeFileSync(join(rootDir, "root.mp4"), "root's file\n");
    // The virtual board with two containers that seek back in their file: MP4 without fragments, Matroska.
    const board = join(dir, "board.json");
    writeFileSync(board, JSON.stringify({
      ...virtual,
      record: { ...virtual.record, formats: { MOV: { muxer: "mp4mux", codecs: ["H264", "AAC"] }, MKV: { muxer: "matroskamux", codecs: ["H264", "AAC"] } } },
    }));
    served = await serveFromSource(["record", "filecache", "--board", board, "--state-dir", state, "--log-level", "warn"], [MAIN, FC], rootDir);
    ({ bus, control, service } = served);
  }, 30000);

  afterAll(async () => {
    await served?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function callAs(uid: number, groups: number[], method: string, payload: Json = {}): Promise<Json> {
    return callAsUser({ app, bus: bus.address, cwd: dir, uid, groups }, `${MAIN}/${method}`, payload);
  }
  const member = (method: string, payload: Json = {}) => callAs(NOBODY, [gid], method, payload);

  /** Recordings always end: a test that failed midway leaves the instance idle for the next. */
  const idle = async () => {
    const r = await control.call(MAIN, "stop", {});
    expect([true, 3]).toContain(r.returnValue === true ? true : (r.errorCode as number));
  };

  test("without devservices-record a uid may not start (1), pause, resume (6) or stop (4) a recording; nothing is written", async () => {
    const path = join(mine, "nobody.mp4");
    try {
      expect(await callAs(NOBODY, [], "start", { video: VIDEO, format: "MP4", path })).toEqual(E1);
      expect(await callAs(NOBODY, [], "start", { video: VIDEO, format: "MP4", path: join(pub, "root.mp4") })).toEqual(E1);
      expect(readdirSync(mine)).toEqual([]);
      expect(readFileSync(join(pub, "root.mp4"), "utf8")).toBe("root's file\n");
      // A recording of root's: the uid cannot touch it.
      expect(await control.call(MAIN, "start", { image: IMAGE, format: "JPEG", path: join(dir, "root-still.jpg") })).toEqual(OK);
      expect(await callAs(NOBODY, [], "pause")).toEqual(E6);
      expect(await callAs(NOBODY, [], "resume")).toEqual(E6);
      expect(await callAs(NOBODY, [], "stop")).toEqual(E4);
      // Watching stays open to every caller.
      expect(await callAs(NOBODY, [], "subscribe", { subscribe: false })).toMatchObject({ returnValue: true, subscribed: false });
      expect(await control.call(MAIN, "stop", {})).toEqual(OK);
    } finally {
      await idle();
    }
  }, 60000);

  test("with the group: root's files, root's directory, the state directory, relative paths and symlinks are 1 and untouched; the caller's own file is a new file of the caller's", async () => {
    const stateBefore = tree(state);
    expect(stateBefore.some((l) => l.includes("/filecache/"))).toBe(true);
    symlinkSync(rootDir, join(mine, "to-root"));
    symlinkSync(join(pub, "root.mp4"), join(mine, "link.mp4"));
    const start = (path: string) => member("start", { video: VIDEO, format: "MP4", path });
    try {
      expect(await start(join(pub, "root.mp4"))).toEqual(E1); // root's file in a directory anyone writes
      expect(await start(join(rootDir, "root.mp4"))).toEqual(E1); // root's file
      expect(await start(join(rootDir, "new.mp4"))).toEqual(E1); // a new file in root's directory
      expect(await start(join(state, "new.mp4"))).toEqual(E1); // the state directory
      for (const f of readdirSync(join(state, "filecache"))) expect(await start(join(state, "filecache", f))).toEqual(E1);
      expect(await start("relative.mp4")).toEqual(E1); // relative: not against the service's directory
      expect(await start(join(mine, "to-root", "new.mp4"))).toEqual(E1); // through a symlinked directory
      expect(await start(join(mine, "link.mp4"))).toEqual(E1); // a symlink to root's file
      expect(await start(`${mine}/../root/new.mp4`)).toEqual(E1);
      expect(readFileSync(join(pub, "root.mp4"), "utf8")).toBe("root's file\n");
      expect(readFileSync(join(rootDir, "root.mp4"), "utf8")).toBe("root's file\n");
      expect(readdirSync(rootDir).sort()).toEqual(["root.mp4"]);
      expect(tree(state)).toEqual(stateBefore);

      // The caller's directory: a new file, the caller's, that plays.
      const path = join(mine, "mine.mp4");
      expect(await start(path)).toEqual(OK);
      expect(statSync(path).uid).toBe(NOBODY);
      await Bun.sleep(800);
      // Another uid of the group cannot pause or stop it; root can pause it.
      expect(await callAs(OTHER, [gid], "pause")).toEqual(E6);
      expect(await callAs(OTHER, [gid], "stop")).toEqual(E4);
      expect(await control.call(MAIN, "pause", {})).toEqual(OK);
      expect(await member("resume")).toEqual(OK);
      await Bun.sleep(500);
      expect(await member("stop")).toEqual(OK);
      const p = ffprobe(path);
      expect(p.streams.map((s) => s.codec_name)).toEqual(["h264"]);
      expect(p.duration).toBeGreaterThan(0.5);
      // An existing file is never replaced, the caller's own included.
      expect(await start(path)).toEqual(E1);
      expect(ffprobe(path).duration).toBe(p.duration);
      // The filecache still starts on its database (it was never written).
      expect((await control.call(FC, "GetCacheStatus", {})).returnValue).toBe(true);
    } finally {
      await idle();
      rmSync(join(mine, "to-root"));
      rmSync(join(mine, "link.mp4"));
    }
  }, 90000);

  test("a recording paused by its uid: another uid of the group may not resume (6) or stop (4) it; it stays paused for its owner", async () => {
    const path = join(mine, "paused.mp4");
    try {
      expect(await member("start", { video: VIDEO, format: "MP4", path })).toEqual(OK);
      expect(await member("pause")).toEqual(OK);
      expect(await callAs(OTHER, [gid], "resume")).toEqual(E6);
      expect(await callAs(OTHER, [gid], "stop")).toEqual(E4);
      // Still paused: the owner's resume is the one that applies.
      expect(await member("pause")).toEqual(E6);
      expect(await member("resume")).toEqual(OK);
      expect(await member("stop")).toEqual(OK);
      expect(statSync(path).uid).toBe(NOBODY);
    } finally {
      await idle();
    }
  }, 60000);

  test("containers that seek in their file (mp4mux without fragments, matroskamux) write the caller's file through its fd", async () => {
    try {
      for (const [format, file] of [["MOV", "plain.mp4"], ["MKV", "rec.mkv"]] as const) {
        const path = join(mine, file);
        expect(await member("start", { video: VIDEO, audio: AUDIO, format, path })).toEqual(OK);
        await Bun.sleep(1200);
        expect(await member("stop")).toEqual(OK);
        expect(statSync(path).uid).toBe(NOBODY);
        const p = ffprobe(path);
        expect(p.streams.map((s) => s.codec_name).sort()).toEqual(["aac", "h264"]);
        expect(p.duration).toBeGreaterThan(0.9);
        expect(p.duration).toBeLessThan(1.8);
      }
      // mp4mux without fragments wrote its index (moov) after the media, then went back
      // through the fd to write the media box's size: the top-level boxes tile the file.
      const mp4 = readFileSync(join(mine, "plain.mp4"));
      const boxes: string[] = [];
      let off = 0;
      while (off + 8 <= mp4.length) {
        let size = mp4.readUInt32BE(off);
        if (size === 1) size = Number(mp4.readBigUInt64BE(off + 8));
        boxes.push(mp4.toString("latin1", off + 4, off + 8));
        if (size < 8) break;
        off += size;
      }
      expect(off).toBe(mp4.length);
      expect(boxes.filter((b) => b !== "free")).toEqual(["ftyp", "mdat", "moov"]);
    } finally {
      await idle();
    }
  }, 60000);

  test("a directory swapped with a symlink to a directory of root's while start writes there: root's directory is never written", async () => {
    const outside = join(dir, "outside");
    mkdirSync(outside, { mode: 0o755 });
    // Another process of the caller's uid swaps mine/swap between a directory and a symlink.
    const swapper = swapAs(NOBODY, join(mine, "swap"), outside, 10);
    let started = 0, refused = 0;
    try {
      const end = Date.now() + 15000;
      for (let i = 0; i < 40 && Date.now() < end; i++) {
        const r = await member("start", { image: IMAGE, format: "JPEG", path: join(mine, "swap", `still-${i}.jpg`) });
        if (r.returnValue === true) {
          started++;
          await member("stop");
        } else refused++;
        expect(readdirSync(outside)).toEqual([]);
      }
    } finally {
      swapper.kill("SIGKILL");
      await swapper.exited;
      await idle();
    }
    console.log(`start into a swapped directory: ${started} started, ${refused} refused`);
    expect(started + refused).toBeGreaterThan(10);
    // The swap raced the starts: some met the symlink (refused), some the directory.
    expect(refused).toBeGreaterThan(0);
    expect(started).toBeGreaterThan(0);
    expect(readdirSync(outside)).toEqual([]);
  }, 60000);
});

describe.skipIf(skip !== null)("record: a configured access group", () => {
  /** The group the board names in place of devservices-record. */
  const CONFIGURED = "devservices-rectest";
  let bus: PrivateBus;
  let control: BusClient;
  let dir: string, mine: string, app: string;
  let service: Subprocess;
  let served: Served | undefined;
  const gidOf = groupGid;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "record-access-group-"));
    app = binaryForAnyUser(dir);
    mine = join(dir, "mine");
    mkdirSync(mine, { mode: 0o755 });
    chownSync(mine, NOBODY, NOBODY);
    const board = join(dir, "board.json");
    writeFileSync(board, JSON.stringify({ ...virtual, serviceConfig: { ...(virtual as any).serviceConfig, record: { accessGroup: CONFIGURED } } }));
    served = await serveFromSource(["record", "--board", board, "--state-dir", join(dir, "state"), "--log-level", "error"], [MAIN], dir);
    ({ bus, control, service } = served);
  }, 30000);

  afterAll(async () => {
    await served?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("start, pause, resume and stop are for the configured group in place of devservices-record", async () => {
    const callAs = (groups: number[], method: string, payload: Json = {}) => callAsUser({ app, bus: bus.address, cwd: dir, uid: NOBODY, groups }, `${MAIN}/${method}`, payload);
    const table = [gidOf(GROUP)], configured = [gidOf(CONFIGURED)];
    const path = join(mine, "still.jpg");
    try {
      expect(await callAs(table, "start", { image: IMAGE, format: "JPEG", path })).toEqual(E1);
      expect(readdirSync(mine)).toEqual([]);
      expect(await callAs(configured, "start", { video: VIDEO, format: "MP4", path: join(mine, "rec.mp4") })).toEqual(OK);
      expect(await callAs(table, "pause")).toEqual(E6);
      expect(await callAs(configured, "pause")).toEqual(OK);
      expect(await callAs(table, "resume")).toEqual(E6);
      expect(await callAs(configured, "resume")).toEqual(OK);
      expect(await callAs(table, "stop")).toEqual(E4);
      expect(await callAs(configured, "stop")).toEqual(OK);
      expect(statSync(join(mine, "rec.mp4")).uid).toBe(NOBODY);
    } finally {
      const r = await control.call(MAIN, "stop", {});
      expect([true, 3]).toContain(r.returnValue === true ? true : (r.errorCode as number));
    }
  }, 60000);
});
