// Every method of the media indexer with its success shape and each row of the
// spec's error table: JSON parsing failures of the list and metadata methods, the
// "was not handled" row of the plugin, scan and delete methods, "Scan Failed",
// "kind not registered", "serviceName field is mandatory input"; "No Error" on
// success ("No error" for requestMediaScan). Truncated and corrupt files are logged
// and skipped. getMediaDbPermission is enforced with file ACLs: a granted user reads
// the database, another cannot, and only root or the named service may ask.
import { test, expect, beforeAll, afterAll, describe } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, spawnSync } from "bun";
import { miEnv, expectError, type MiEnv } from "./env";
import { mp3, jpeg, put, mp4, mkv, hasFfmpeg } from "./media";
import { BINARY, binaryForAnyUser, eventually, openBusToAll, callAsUser } from "../helpers/harness";
import type { Json } from "../../src/core/errors";

let mi: MiEnv;
let outside: string;
beforeAll(async () => {
  mi = await miEnv();
  outside = mkdtempSync(join(tmpdir(), "mediaindexer-outside-"));
  put(join(mi.media, "a/one.mp3"), mp3({ title: "One", artist: "A" }));
  put(join(mi.media, "a/two.mp3"), mp3({ title: "Two", artist: "B" }));
  put(join(mi.media, "b/pic.jpg"), jpeg({ width: 8, height: 6 }));
  put(join(mi.media, "doc.txt"), Buffer.from("text"));
  await mi.call("requestMediaScan", { path: mi.media });
  await mi.idle();
});
afterAll(async () => {
  await mi?.stop();
  if (outside) rmSync(outside, { recursive: true, force: true });
});

const dev = () => `storage://${mi.media}`;
const parseError = /^JSON parsing failed: /;

describe("lists", () => {
  test("getAudioList, getVideoList, getImageList: No Error, count, uri filter", async () => {
    const a = await mi.call("getAudioList");
    expect(a).toMatchObject({ returnValue: true, errorCode: 0, errorText: "No Error", subscribed: false });
    expect((a.audioList as Json).count).toBe(2);
    expect((a.audioList as Json).uri).toBeUndefined();
    const one = await mi.call("getAudioList", { uri: dev(), count: 1 });
    expect(one.audioList).toMatchObject({ count: 1, uri: dev() });
    expect(((await mi.call("getAudioList", { uri: "storage:///nowhere" })).audioList as Json).count).toBe(0);
    expect(await mi.call("getVideoList")).toMatchObject({ returnValue: true, errorCode: 0, errorText: "No Error", videoList: { count: 0, results: [] } });
    expect(await mi.call("getImageList", { uri: dev() })).toMatchObject({ returnValue: true, imageList: { count: 1, uri: dev() } });
  });

  test("count defaults to 500", async () => {
    const dir = join(mi.media, "many");
    for (let i = 0; i < 510; i++) put(join(dir, `i${i}.jpg`), jpeg({ width: 2, height: 2 }));
    await mi.call("requestMediaScan", { path: dir });
    await mi.idle();
    expect(((await mi.call("getImageList")).imageList as Json).count).toBe(500);
    expect(((await mi.call("getImageList", { count: 600 })).imageList as Json).count).toBe(511);
    expect(((await mi.call("getImageList", { count: 10 ** 9 })).imageList as Json).count).toBe(511);
    rmSync(dir, { recursive: true });
    await mi.call("requestMediaScan", { path: mi.media });
    await mi.idle();
    expect(((await mi.call("getImageList")).imageList as Json).count).toBe(1);
  });

  test("bad payloads: -1 and the JSON parsing text", async () => {
    for (const m of ["getAudioList", "getVideoList", "getImageList"]) {
      expectError(await mi.call(m, "{not json"), -1, parseError);
      expectError(await mi.call(m, { count: "ten" }), -1, parseError);
      expectError(await mi.call(m, { count: 0 }), -1, parseError);
    }
    expectError(await mi.call("getDeviceList", { subscribe: "yes" }), -1, parseError);
  });
});

describe("metadata", () => {
  test("getAudioMetadata, getImageMetadata: the item's fields; unknown items and bad payloads fail", async () => {
    const md = await mi.call("getAudioMetadata", { uri: `${dev()}/a/one.mp3` });
    expect(md).toMatchObject({ returnValue: true, errorCode: 0, errorText: "No Error", metadata: { type: "audio", title: "One", artist: "A", file_path: `file://${mi.media}/a/one.mp3` } });
    expect(await mi.call("getImageMetadata", { uri: `${dev()}/b/pic.jpg` })).toMatchObject({ returnValue: true, metadata: { type: "image", width: 8, height: 6 } });
    expectError(await mi.call("getImageMetadata", { uri: `${dev()}/b/none.jpg` }), -1, /No such media item/);
    for (const m of ["getAudioMetadata", "getVideoMetadata", "getImageMetadata"]) {
      expectError(await mi.call(m, {}), -1, parseError);
      expectError(await mi.call(m, "[1,"), -1, parseError);
    }
  });

  test.skipIf(!hasFfmpeg)("getVideoMetadata (MP4, Matroska): container duration, size, codecs, frame rate as a fraction", async () => {
    mp4(join(mi.media, "v/clip.mp4"), { width: 320, height: 240, rate: "30000/1001", seconds: 1, title: "Clip" });
    await mi.call("requestMediaScan", { path: join(mi.media, "v") });
    await mi.idle();
    const md = await mi.call("getVideoMetadata", { uri: `${dev()}/v/clip.mp4` });
    expect(md).toMatchObject({
      returnValue: true, errorText: "No Error",
      metadata: { type: "video", mime: "video/mp4", title: "Clip", width: 320, height: 240, video_codec: "h264", audio_codec: "aac", frame_rate: "30000/1001", thumbnail: "" },
    });
    expect((md.metadata as Json).duration as number).toBeCloseTo(1, 0);
    mkv(join(mi.media, "v/film.mkv"), { width: 640, height: 360, rate: "25", seconds: 2, title: "Film" });
    await mi.call("requestMediaScan", { path: join(mi.media, "v") });
    await mi.idle();
    const mk = await mi.call("getVideoMetadata", { uri: `${dev()}/v/film.mkv` });
    expect(mk.metadata).toMatchObject({ type: "video", mime: "video/x-matroska", title: "Film", width: 640, height: 360, video_codec: "h264", audio_codec: "opus", frame_rate: "25/1" });
    expect((mk.metadata as Json).duration as number).toBeCloseTo(2, 0);
    expect(((await mi.call("getVideoList", { uri: dev() })).videoList as Json).count).toBe(2);
  });

  test("truncated or corrupt MP3, MP4 and JPEG files are skipped; the scan goes on", async () => {
    const bad = join(mi.media, "bad");
    put(join(bad, "cut.mp3"), mp3({ title: "Cut" }).subarray(0, 9)); // the ID3 header, nothing after
    put(join(bad, "noise.mp3"), Buffer.alloc(3000, 0x55));
    put(join(bad, "cut.jpg"), jpeg({ width: 10, height: 10 }).subarray(0, 40));
    put(join(bad, "cut.mp4"), Buffer.concat([Buffer.from([0, 0, 0, 0x20]), Buffer.from("ftypisom"), Buffer.alloc(8), Buffer.from([0, 0, 0x10, 0]), Buffer.from("moov")]));
    put(join(bad, "ok.jpg"), jpeg({ width: 3, height: 3 }));
    const before = (await mi.device(dev()))!;
    await mi.call("requestMediaScan", { path: bad });
    await mi.idle();
    const after = (await mi.device(dev()))!;
    expect(after.audioCount).toBe(before.audioCount);
    expect(after.imageCount).toBe((before.imageCount as number) + 1);
    expect(after.videoCount).toBe(before.videoCount);
    expectError(await mi.call("getAudioMetadata", { uri: `${dev()}/bad/cut.mp3` }), -1, /No such media item/);
    // Still serving, and a rescan does not read them again (kept as unreadable until they change).
    expect((await mi.call("getDeviceList")).returnValue).toBe(true);
    rmSync(bad, { recursive: true });
  });
});

describe("devices and plugins", () => {
  test("getDeviceList: plugins with their devices and counts", async () => {
    const r = await mi.call("getDeviceList", { subscribe: false });
    expect(r).toMatchObject({ returnValue: true, errorCode: 0, errorText: "No Error", subscribed: false });
    const p = (r.pluginList as Json[])[0]!;
    expect(p).toMatchObject({ uri: "storage", active: true });
    expect((p.deviceList as Json[])[0]).toMatchObject({ uri: dev(), name: expect.any(String), description: expect.any(String), available: true, state: "idle", audioCount: 2 });
  });

  test("getPluginList, putPlugin, getPlugin, runDetect, stopDetect", async () => {
    expect(await mi.call("getPluginList")).toEqual({ returnValue: true, pluginList: [{ uri: "storage" }] });
    expect(await mi.call("getPluginList", "{garbage")).toMatchObject({ returnValue: true });
    expect(await mi.call("putPlugin", { uri: "msc" })).toEqual({ returnValue: true, errorCode: 0, errorText: "No Error" });
    expect(await mi.call("getPluginList")).toEqual({ returnValue: true, pluginList: [{ uri: "storage" }, { uri: "msc" }] });
    expect(await mi.call("getPlugin", { uri: "storage" })).toMatchObject({ returnValue: true, errorCode: 0 });
    expect(await mi.call("stopDetect", { uri: "storage" })).toMatchObject({ returnValue: true, errorCode: 0 });
    expect(await mi.call("runDetect", { uri: "storage" })).toMatchObject({ returnValue: true, errorCode: 0 });
    expect(await mi.call("stopDetect")).toMatchObject({ returnValue: true });
    expect(await mi.call("runDetect")).toMatchObject({ returnValue: true });
    await mi.idle();
    for (const m of ["getPlugin", "putPlugin", "runDetect", "stopDetect"]) {
      expectError(await mi.call(m, { uri: "floppy" }), -1, `Method '${m}' for category '/' was not handled`);
      expectError(await mi.call(m, { uri: 7 }), -1, `Method '${m}' for category '/' was not handled`);
    }
    expectError(await mi.call("putPlugin", {}), -1, "Method 'putPlugin' for category '/' was not handled");
  });
});

describe("requestMediaScan", () => {
  test("a directory outside the roots becomes a storage device; success text 'No error'", async () => {
    put(join(outside, "x.mp3"), mp3({ title: "Outside" }));
    expect(await mi.call("requestMediaScan", { path: outside })).toMatchObject({ returnValue: true, errorCode: 0, errorText: "No error", completed: true, files: 1 });
    await mi.idle();
    expect(await mi.device(`storage://${outside}`)).toMatchObject({ available: true, audioCount: 1 });
    // A device URI scans that device.
    expect(await mi.call("requestMediaScan", { path: `storage://${outside}` })).toMatchObject({ returnValue: true, errorText: "No error" });
    await mi.idle();
  });

  test("errors: not handled (no or bad path), Scan Failed (unreadable)", async () => {
    expectError(await mi.call("requestMediaScan", {}), -1, "Method 'requestMediaScan' for category '/' was not handled");
    expectError(await mi.call("requestMediaScan", { path: "" }), -1, "Method 'requestMediaScan' for category '/' was not handled");
    expectError(await mi.call("requestMediaScan", { path: "relative/dir" }), -1, "Method 'requestMediaScan' for category '/' was not handled");
    expectError(await mi.call("requestMediaScan", { path: "/no/such/dir" }), -1, "Scan Failed");
    expectError(await mi.call("requestMediaScan", { path: join(mi.media, "doc.txt") }), -1, "Scan Failed");
  });
});

describe("requestDelete", () => {
  test("deletes the file and its entry (item URI or file_path); count", async () => {
    const r = await mi.call("requestDelete", { uri: `${dev()}/a/two.mp3` });
    expect(r).toEqual({ returnValue: true, count: 1, errorCode: 0, errorText: "No Error" });
    expect(existsSync(join(mi.media, "a/two.mp3"))).toBe(false);
    expect(await mi.device(dev())).toMatchObject({ audioCount: 1 });
    put(join(outside, "y.mp3"), mp3({ title: "Y" }));
    await mi.call("requestMediaScan", { path: outside });
    await mi.idle();
    expect(await mi.call("requestDelete", { uri: `file://${outside}/y.mp3` })).toMatchObject({ returnValue: true, count: 1 });
    expect(existsSync(join(outside, "y.mp3"))).toBe(false);
    // Not indexed: nothing deleted.
    expect(await mi.call("requestDelete", { uri: `${dev()}/a/none.mp3` })).toMatchObject({ returnValue: true, count: 0 });
  });

  test("errors: kind not registered (-3970), not handled", async () => {
    expectError(await mi.call("requestDelete", { uri: `${dev()}/doc.txt` }), -3970, "kind not registered: 'txt'");
    expect(existsSync(join(mi.media, "doc.txt"))).toBe(true);
    expectError(await mi.call("requestDelete", {}), -1, "Method 'requestDelete' for category '/' was not handled");
    expectError(await mi.call("requestDelete", { uri: "" }), -1, "Method 'requestDelete' for category '/' was not handled");
    expectError(await mi.call("requestDelete", { uri: "one.mp3" }), -1, "Method 'requestDelete' for category '/' was not handled");
  });
});

describe("subscriptions", () => {
  test("a list subscription receives the entries indexed after it, at most count per message", async () => {
    const msgs: Json[] = [];
    const sub = await mi.client.subscribe("com.vendor.service.mediaindexer", "getAudioList", { subscribe: true, count: 3, uri: dev() }, (m) => void msgs.push(m));
    expect(sub.first).toMatchObject({ returnValue: true, subscribed: true, errorText: "No Error" });
    const first = (sub.first.audioList as Json).count as number;
    expect(first).toBeLessThanOrEqual(3);
    for (let i = 0; i < 20; i++) put(join(mi.media, "new", `n${i}.mp3`), mp3({ title: `N${i}` }));
    await mi.call("requestMediaScan", { path: join(mi.media, "new") });
    await mi.idle();
    const titles = () => msgs.flatMap((m) => ((m.audioList as Json).results as Json[]).map((e) => e.title));
    await eventually(() => titles().filter((t) => String(t).startsWith("N")).length === 20, 5000);
    for (const m of msgs) {
      expect(m).toMatchObject({ returnValue: true, subscribed: true });
      expect((m.audioList as Json).count).toBeLessThanOrEqual(3);
      expect((m.audioList as Json).count).toBe(((m.audioList as Json).results as Json[]).length);
      expect((m.audioList as Json).uri).toBe(dev());
    }
    expect(msgs.length).toBeGreaterThanOrEqual(7);
    sub.cancel();
  });

  test("a device list subscription receives the full plugin list on changes", async () => {
    const msgs: Json[] = [];
    const sub = await mi.client.subscribe("com.vendor.service.mediaindexer", "getDeviceList", { subscribe: true }, (m) => void msgs.push(m));
    expect(sub.first).toMatchObject({ returnValue: true, subscribed: true });
    put(join(mi.media, "later/l.jpg"), jpeg({ width: 4, height: 4 }));
    await mi.call("requestMediaScan", { path: mi.media });
    await eventually(() => msgs.some((m) => ((m.pluginList as Json[])[0]!.deviceList as Json[]).some((d) => d.state === "scanning")), 5000);
    await eventually(() => msgs.length && ((msgs.at(-1)!.pluginList as Json[])[0]!.deviceList as Json[]).every((d) => d.state === "idle"), 5000);
    expect(msgs.at(-1)!.pluginList).toEqual((await mi.call("getDeviceList")).pluginList as Json[]);
    sub.cancel();
  });
});

describe("getMediaDbPermission", () => {
  const NOBODY = 65534;
  const readAs = (uid: number) => {
    const db = join(mi.stateDir, "db", "media.db");
    const r = spawnSync(
      ["setpriv", `--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", "/usr/bin/python3", "-c",
        `import sqlite3,sys\nc=sqlite3.connect("file:${db}?mode=ro", uri=True)\nprint(c.execute("select count(*) from media").fetchone()[0])`],
      { stdout: "pipe", stderr: "pipe", env: { PATH: "/usr/bin:/bin" } },
    );
    return { code: r.exitCode, out: r.stdout.toString().trim(), err: r.stderr.toString() };
  };
  const isRoot = process.getuid?.() === 0;

  test("without serviceName: -1, serviceName field is mandatory input", async () => {
    expectError(await mi.call("getMediaDbPermission", {}), -1, "serviceName field is mandatory input");
    expectError(await mi.call("getMediaDbPermission", { serviceName: 42 }), -1, "serviceName field is mandatory input");
  });

  test.skipIf(!isRoot)("a grant gives the named user read access to the database (ACL); others have none", async () => {
    chmodSync(mi.env.stateDir, 0o711); // the test's state directory stands for /var/lib/devservices
    expect(readAs(NOBODY).err).toMatch(/unable to open database/);
    expect(await mi.call("getMediaDbPermission", { serviceName: "nobody" })).toEqual({ returnValue: true, errorCode: 0, errorText: "No Error" });
    const r = readAs(NOBODY);
    expect(r.err).toBe("");
    expect(Number(r.out)).toBeGreaterThan(0);
    expect(readAs(NOBODY - 1).err).toMatch(/unable to open database/);
    expectError(await mi.call("getMediaDbPermission", { serviceName: "com.vendor.nobody.here" }), -1, /Permission could not be granted/);
  });

  test.skipIf(!isRoot || !existsSync(BINARY))("another uid may not ask for a service other than itself", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mediaindexer-app-"));
    openBusToAll(mi.env.bus.address);
    const app = binaryForAnyUser(dir);
    const callAs = async (uid: number, payload: object) => {
      return callAsUser({ app, bus: mi.env.bus.address, cwd: dir, uid, groups: [] }, `com.vendor.service.mediaindexer/getMediaDbPermission`, payload);
    };
    try {
      const r = await callAs(NOBODY, { serviceName: "com.vendor.service.mediaindexer" });
      expect(r).toMatchObject({ returnValue: false, errorCode: -1, errorText: "getMediaDbPermission: permission denied" });
      expect(await callAs(NOBODY, { serviceName: "root" })).toMatchObject({ returnValue: false });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
