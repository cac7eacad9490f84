// The storage plugin and the database: a configured media root is scanned, its
// entries listed with their metadata; a rescan skips unchanged files (size and
// mtime), reads changed ones and drops deleted files and directories; the database
// survives a restart.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { miEnv, type MiEnv } from "./env";
import { mp3, jpeg, put, PNG_1x1 } from "./media";
import type { Json } from "../../src/core/errors";

let mi: MiEnv;
beforeAll(async () => {
  mi = await miEnv();
});
afterAll(() => mi.stop());

const storage = () => `storage://${mi.media}`;
const titles = (list: Json) => ((list.results as Json[]).map((e) => e.title as string)).sort();

test("a media root is a storage device; its files are indexed with their metadata", async () => {
  put(join(mi.media, "music/a.mp3"), mp3({ title: "Alpha", artist: "Ann", album: "First", genre: "Jazz", track: "1/2", cover: PNG_1x1 }));
  put(join(mi.media, "music/sub/b.mp3"), mp3({ title: "Beta", artist: "Bob" }));
  put(join(mi.media, "photos/p.jpg"), jpeg({ width: 640, height: 480, date: "2020:03:04 05:06:07", lat: 48.8584, lon: -2.2945 }));
  put(join(mi.media, "notes.txt"), Buffer.from("not media"));
  put(join(mi.media, ".hidden/c.mp3"), mp3({ title: "Hidden" }));
  expect((await mi.call("requestMediaScan", { path: mi.media })).returnValue).toBe(true);
  const plugins = await mi.idle();
  const dev = (plugins[0]!.deviceList as Json[]).find((d) => d.uri === storage())!;
  expect(dev).toMatchObject({ available: true, state: "idle", audioCount: 2, videoCount: 0, imageCount: 1 });

  const audio = await mi.call("getAudioList", {});
  expect(audio).toMatchObject({ returnValue: true, errorCode: 0, errorText: "No Error", subscribed: false });
  expect(titles(audio.audioList as Json)).toEqual(["Alpha", "Beta"]);
  const a = (audio.audioList as Json as { results: Json[] }).results.find((e) => e.title === "Alpha")!;
  expect(a).toMatchObject({
    uri: `${storage()}/music/a.mp3`,
    file_path: `file://${mi.media}/music/a.mp3`,
    artist: "Ann", album: "First", genre: "Jazz", dirty: false,
  });
  expect(a.file_size).toBeGreaterThan(3000);
  expect(typeof a.duration).toBe("number");
  expect(a.thumbnail as string).toMatch(/\.png$/);
  expect(Bun.file(a.thumbnail as string).size).toBe(PNG_1x1.length);
  expect(new Date(a.last_modified_date as string).getTime()).toBeGreaterThan(0);

  const md = await mi.call("getAudioMetadata", { uri: a.uri });
  expect(md.errorText).toBe("No Error");
  expect(md.metadata).toMatchObject({ type: "audio", mime: "audio/mpeg", track: "1/2", total_track: "2", sample_rate: 44100, channels: 2, bit_rate: 128000 });
  expect((md.metadata as Json).hash as string).toMatch(/^[0-9a-f]{16}$/);

  const images = (await mi.call("getImageList", { uri: storage() })).imageList as Json;
  expect(images.uri).toBe(storage());
  expect(images.count).toBe(1);
  expect((images.results as Json[])[0]).toMatchObject({ title: "p", width: 640, height: 480 });
  const im = await mi.call("getImageMetadata", { uri: `${storage()}/photos/p.jpg` });
  expect(im.metadata).toMatchObject({
    type: "image", mime: "image/jpeg", width: 640, height: 480, date_of_creation: "2020-03-04T05:06:07",
    geo_location_latitude: 48.8584, geo_location_longitude: -2.2945,
  });
  // An item of another kind, or none, is not found.
  expect((await mi.call("getVideoMetadata", { uri: `${storage()}/photos/p.jpg` })).returnValue).toBe(false);
  expect((await mi.call("getAudioMetadata", { uri: `${storage()}/nothing.mp3` })).errorCode).toBe(-1);
});

test("a rescan reads only new and changed files and drops deleted files and directories", async () => {
  // Changed: same size, new mtime; new file; deleted file; deleted directory.
  const a = join(mi.media, "music/a.mp3");
  writeFileSync(a, mp3({ title: "Alpha 2", artist: "Ann" , album: "First", genre: "Jazz", track: "1/2", cover: PNG_1x1 }));
  utimesSync(a, new Date(), new Date(Date.now() + 5000));
  put(join(mi.media, "music/new.mp3"), mp3({ title: "New" }));
  rmSync(join(mi.media, "music/sub"), { recursive: true });
  rmSync(join(mi.media, "photos/p.jpg"));
  await mi.call("requestMediaScan", { path: mi.media });
  await mi.idle();
  expect(titles((await mi.call("getAudioList")).audioList as Json)).toEqual(["Alpha 2", "New"]);
  expect(((await mi.call("getImageList")).imageList as Json).count).toBe(0);
  expect(await mi.device(storage())).toMatchObject({ audioCount: 2, imageCount: 0 });
});

test("the database survives a restart: entries are there before any scan; the device is available again without detection", async () => {
  await mi.start({ detect: false });
  const list = (await mi.call("getAudioList", { uri: storage() })).audioList as Json;
  expect(titles(list)).toEqual(["Alpha 2", "New"]);
  // Available when the last run ended and still a readable directory: available again at start, without runDetect.
  expect(await mi.device(storage())).toMatchObject({ available: true, audioCount: 2 });
  expect((list.results as Json[]).every((e) => e.dirty === false)).toBe(true);
  expect(((await mi.call("getAudioList")).audioList as Json).count).toBe(2);
});

test("a device whose directory is gone at a restart is listed unavailable, its entries dirty, until detection finds it", async () => {
  const away = `${mi.media}.away`;
  await mi.env.stopServices();
  renameSync(mi.media, away);
  try {
    await mi.start({ detect: false });
  } finally {
    renameSync(away, mi.media);
  }
  const list = (await mi.call("getAudioList", { uri: storage() })).audioList as Json;
  expect(await mi.device(storage())).toMatchObject({ available: false, audioCount: 2 });
  expect((list.results as Json[]).every((e) => e.dirty === true)).toBe(true);
  expect(((await mi.call("getAudioList")).audioList as Json).count).toBe(0);
  await mi.call("runDetect", { uri: "storage" });
  await mi.idle();
  expect(await mi.device(storage())).toMatchObject({ available: true, audioCount: 2 });
  expect(((await mi.call("getAudioList")).audioList as Json).count).toBe(2);
});

test("tracks sharing one cover picture, read at the same time, share one thumbnail file", async () => {
  const cover = Buffer.concat([PNG_1x1, Buffer.from("album-art")]);
  for (let i = 0; i < 24; i++) put(join(mi.media, "album", `t${i}.mp3`), mp3({ title: `T${i}`, album: "Shared", cover }));
  await mi.call("requestMediaScan", { path: join(mi.media, "album") });
  await mi.idle();
  const list = ((await mi.call("getAudioList", { uri: storage(), count: 100 })).audioList as Json).results as Json[];
  const album = list.filter((e) => e.album === "Shared");
  expect(album.length).toBe(24);
  expect(new Set(album.map((e) => e.thumbnail)).size).toBe(1);
  expect(Bun.file(album[0]!.thumbnail as string).size).toBe(cover.length);
});
