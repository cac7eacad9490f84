// Every error of the recording pipeline (spec codes 1-7) from its real cause.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Json } from "../../src/core/errors";
import { recordEnv, VIDEO, AUDIO, MAIN, type RecordEnv } from "./env";
import { eventually } from "../helpers/harness";

const E1 = { returnValue: false, errorCode: 1, errorText: "recorder not created" };
const E2 = { returnValue: false, errorCode: 2, errorText: "Failed to load recorder" };
const E3 = { returnValue: false, errorCode: 3, errorText: "Already unloaded" };
const E4 = { returnValue: false, errorCode: 4, errorText: "Fails to unload the recorder" };
const E5 = { returnValue: false, errorCode: 5, errorText: "Resource release failed" };
const E6 = { returnValue: false, errorCode: 6, errorText: "Invalid state" };
const E7 = { returnValue: false, errorCode: 7, errorText: "Subscription add fail" };
const OK = { returnValue: true };

let r: RecordEnv;
beforeAll(async () => {
  r = await recordEnv({
    record: {
      pipelines: ["main", "second"],
      videoSources: {
        camera1: "videotestsrc is-live=true pattern=ball",
        // A device that does not exist: the pipeline builds, READY fails.
        missing: "v4l2src device=/nonexistent/video9",
        // A branch that swallows everything: nothing reaches the file, PLAYING is never reached.
        stuck: "videotestsrc is-live=true ! valve drop=true",
        // A device that fails after a second of frames.
        failing: "videotestsrc is-live=true ! identity error-after=30",
      },
      encoders: { BROKEN: { kind: "video", element: "no-such-encoder", parser: "h264parse" } },
      formats: { MP4: { muxer: "mp4mux fragment-duration=500", codecs: ["H264", "AAC", "BROKEN"] } },
    },
    options: { startTimeoutMs: 1500, maxSubscribers: 2 },
  });
});
afterAll(async () => {
  await r?.stop();
});

const av = (path: string, video: object = VIDEO) => ({ video, audio: AUDIO, format: "MP4", path });

test("1: the request cannot become a recorder", async () => {
  const path = join(r.dir, "one.mp4");
  expect(await r.call("start", av(path, { ...VIDEO, videoSrc: "camera9" }))).toEqual(E1); // no such source
  expect(await r.call("start", av(path, { ...VIDEO, codec: "VP8" }))).toEqual(E1); // no such codec
  expect(await r.call("start", { ...av(path), format: "AVI" })).toEqual(E1); // no such format
  expect(await r.call("start", av(path, { ...VIDEO, codec: "BROKEN" }))).toEqual(E1); // the pipeline cannot be built
  expect(await r.call("start", { format: "MP4", path })).toEqual(E1); // nothing to record
  expect(await r.call("start", { video: VIDEO })).toEqual(E1); // no path
  expect(await r.call("start", "{not json")).toEqual(E1);
  expect(await r.call("start", { ...av(path), image: { videoSrc: "camera1", codec: "JPEG", width: 64, height: 48, quality: 50 } })).toEqual(E1);
  expect(await r.call("start", { image: { videoSrc: "camera1", codec: "JPEG", width: 64, height: 48, quality: 50 }, format: "MP4", path })).toEqual(E1);
  // Paths that cannot be written.
  expect(await r.call("start", av(join(r.dir, "no-dir", "x.mp4")))).toEqual(E1);
  expect(await r.call("start", av("relative.mp4"))).toEqual(E1);
  expect(await r.call("start", av(r.dir))).toEqual(E1);
  const ro = join(r.dir, "ro");
  mkdirSync(ro);
  chmodSync(ro, 0o500);
  if (process.getuid?.() !== 0) expect(await r.call("start", av(join(ro, "x.mp4")))).toEqual(E1);
  expect(await r.call("start", av("/dev/null"))).toEqual(E1); // not a regular file
  // An existing file is not replaced (a recording makes a new file).
  await Bun.write(join(r.dir, "existing.mp4"), "kept");
  expect(await r.call("start", av(join(r.dir, "existing.mp4")))).toEqual(E1);
  expect(await Bun.file(join(r.dir, "existing.mp4")).text()).toBe("kept");
  // A recorder is already loaded.
  expect(await r.call("start", av(path))).toEqual(OK);
  expect(await r.call("start", av(join(r.dir, "other.mp4")))).toEqual(E1);
  expect(await r.call("stop")).toEqual(OK);
});

test("2: the pipeline does not reach PLAYING (nothing is left behind)", async () => {
  const path = join(r.dir, "two.mp4");
  expect(await r.call("start", av(path, { ...VIDEO, videoSrc: "missing" }))).toEqual(E2);
  expect(await Bun.file(path).exists()).toBe(false);
  // The instance is idle again.
  expect(await r.call("stop")).toEqual(E3);
  // Built, but no data ever reaches the file: the start bound (1.5 s here) passes.
  const t0 = Date.now();
  expect(await r.call("start", av(path, { ...VIDEO, videoSrc: "stuck" }))).toEqual(E2);
  expect(Date.now() - t0).toBeGreaterThanOrEqual(1400);
  expect(await Bun.file(path).exists()).toBe(false);
  expect(await r.call("start", av(path))).toEqual(OK);
  expect(await r.call("stop")).toEqual(OK);
});

test("3: stop with nothing loaded", async () => {
  expect(await r.call("stop", {}, "com.vendor.pipeline.record.second")).toEqual(E3);
  const path = join(r.dir, "three.mp4");
  expect(await r.call("start", av(path))).toEqual(OK);
  expect(await r.call("stop")).toEqual(OK);
  expect(await r.call("stop")).toEqual(E3);
});

test("4: the recording ended with an error before stop", async () => {
  const events: Json[] = [];
  const sub = await r.client.subscribe(MAIN, "subscribe", {}, (m) => events.push(m));
  const path = join(r.dir, "four.mp4");
  expect(await r.call("start", av(path, { ...VIDEO, videoSrc: "failing" }))).toEqual(OK);
  await eventually(() => events.some((e) => e.eventType === "error"), 10000);
  expect(events.find((e) => e.eventType === "error")).toMatchObject({ returnValue: true, id: "failing", pipelineId: "main" });
  expect(await r.call("stop")).toEqual(E4);
  // Unloaded all the same (a recording makes a new file: the next one names another).
  expect(await r.call("stop")).toEqual(E3);
  expect(await r.call("start", av(join(r.dir, "four-again.mp4")))).toEqual(OK);
  expect(await r.call("stop")).toEqual(OK);
  await sub.cancel();
});

test("5: the output file is gone when the pipeline stops", async () => {
  const path = join(r.dir, "five.mp4");
  expect(await r.call("start", av(path))).toEqual(OK);
  await eventually(() => existsSync(path) && statSync(path).size > 0, 10000); // the pipeline writes it
  rmSync(path);
  expect(await r.call("stop")).toEqual(E5);
  expect(await r.call("stop")).toEqual(E3);
});

test("6: pause and resume in the wrong state", async () => {
  expect(await r.call("pause")).toEqual(E6);
  expect(await r.call("resume")).toEqual(E6);
  const path = join(r.dir, "six.mp4");
  expect(await r.call("start", av(path))).toEqual(OK);
  expect(await r.call("resume")).toEqual(E6);
  expect(await r.call("pause")).toEqual(OK);
  expect(await r.call("pause")).toEqual(E6);
  expect(await r.call("resume")).toEqual(OK);
  expect(await r.call("stop")).toEqual(OK);
  expect(await r.call("pause")).toEqual(E6);
  expect(await r.call("resume")).toEqual(E6);
});

test("subscribe without subscribe true (absent or false) answers the state once and keeps no subscription", async () => {
  const watching = await r.client.subscribe(MAIN, "subscribe", {}, () => {});
  const state = watching.first.state;
  expect(typeof state).toBe("string");
  await watching.cancel();
  await eventually(() => r.env.rt!.server.topics.count() === 0);
  expect(await r.call("subscribe", {})).toEqual({ returnValue: true, subscribed: false, state });
  expect(await r.call("subscribe", { subscribe: false })).toEqual({ returnValue: true, subscribed: false, state });
  expect(r.env.rt!.server.topics.count()).toBe(0);
});

test("7: a subscription that cannot be added", async () => {
  const a = await r.client.subscribe(MAIN, "subscribe", {}, () => {});
  const b = await r.client.subscribe(MAIN, "subscribe", {}, () => {});
  expect(a.first).toMatchObject({ returnValue: true, subscribed: true });
  expect(b.first).toMatchObject({ returnValue: true, subscribed: true });
  // maxSubscribers is 2 here.
  const c = await r.client.subscribe(MAIN, "subscribe", {}, () => {});
  expect(c.first).toEqual(E7);
  await a.cancel();
  // A place is free again once a subscription ends.
  const d = await r.client.subscribe(MAIN, "subscribe", {}, () => {});
  expect(d.first).toMatchObject({ returnValue: true, subscribed: true });
  await b.cancel();
  await d.cancel();
});

test("instances are independent: each pipeline ID has its own bus name and recorder", async () => {
  const second = "com.vendor.pipeline.record.second";
  const p1 = join(r.dir, "inst1.mp4"), p2 = join(r.dir, "inst2.mp4");
  expect(await r.call("start", av(p1))).toEqual(OK);
  expect(await r.call("start", { audio: AUDIO, format: "MP4", path: p2 }, second)).toEqual(OK);
  expect(await r.call("pause", {}, second)).toEqual(OK);
  expect(await r.call("resume")).toEqual(E6);
  expect(await r.call("stop", {}, second)).toEqual(OK);
  expect(await r.call("stop")).toEqual(OK);
});
