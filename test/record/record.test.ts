// Recording through the service on a real bus: video and audio with a pause, the
// file checked with ffprobe; an image of the requested size; events pushed.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import type { Json } from "../../src/core/errors";
import { recordEnv, ffprobe, VIDEO, AUDIO, MAIN, type RecordEnv } from "./env";
import { eventually } from "../helpers/harness";

let r: RecordEnv;
beforeAll(async () => {
  r = await recordEnv();
});
afterAll(async () => {
  await r?.stop();
});

test("2 s of video and audio with a pause in the middle: H264 and AAC, as long as recorded within 10%", async () => {
  const events: Json[] = [];
  const sub = await r.client.subscribe(MAIN, "subscribe", {}, (m) => events.push(m));
  expect(sub.first).toEqual({ returnValue: true, subscribed: true, state: "idle" });
  const path = join(r.dir, "av.mp4");
  /** A call and when it was sent and answered (ms). */
  const timed = async (method: string, payload?: Json) => {
    const sent = performance.now();
    expect(await r.call(method, payload)).toEqual({ returnValue: true });
    return { sent, answered: performance.now() };
  };
  // The lengths recorded (1 s, a 1 s pause, 1 s) are what the test is about.
  const start = await timed("start", { video: VIDEO, audio: AUDIO, format: "MP4", path });
  await Bun.sleep(1000);
  const pause = await timed("pause");
  await Bun.sleep(1000);
  const resume = await timed("resume");
  await Bun.sleep(1000);
  const stop = await timed("stop");
  const p = ffprobe(path);
  const kinds = p.streams.map((s) => `${s.codec_type}:${s.codec_name}`).sort();
  expect(kinds).toEqual(["audio:aac", "video:h264"]);
  expect(p.streams.find((s) => s.codec_type === "video")).toMatchObject({ width: 320, height: 240 });
  // Recorded: from start to pause and from resume to stop, each edge somewhere between a
  // call's sending and its answer (about 2 s; more when the machine is slow to answer).
  const least = (pause.sent - start.answered + (stop.sent - resume.answered)) / 1000;
  const most = (pause.answered - start.sent + (stop.answered - resume.sent)) / 1000;
  expect(least).toBeGreaterThan(1.99);
  expect(p.duration).toBeGreaterThan(least * 0.9);
  expect(p.duration).toBeLessThan(most * 1.1);
  // The pipeline's own messages reached the subscriber.
  const types = events.map((e) => e.eventType);
  expect(types).toContain("endOfStream");
  expect(events.filter((e) => e.eventType === "stateChanged").map((e) => e.state)).toEqual(
    ["ready", "paused", "playing", "paused", "playing"],
  );
  expect(events.find((e) => e.eventType === "endOfStream")).toMatchObject({ returnValue: true, id: "camera1", pipelineId: "main" });
  await sub.cancel();
}, 30000);

test("audio alone into MP4", async () => {
  const path = join(r.dir, "audio.mp4");
  expect(await r.call("start", { audio: { ...AUDIO, channelCount: 1, sampleRate: 44100 }, format: "mp4", path })).toEqual({ returnValue: true });
  await Bun.sleep(1000);
  expect(await r.call("stop")).toEqual({ returnValue: true });
  const p = ffprobe(path);
  expect(p.streams.map((s) => s.codec_name)).toEqual(["aac"]);
  expect(p.duration).toBeGreaterThan(0.8);
}, 20000);

test("an image is one JPEG of the requested size", async () => {
  const events: Json[] = [];
  const sub = await r.client.subscribe(MAIN, "subscribe", {}, (m) => events.push(m));
  const path = join(r.dir, "still.jpg");
  expect(await r.call("start", { image: { videoSrc: "camera1", codec: "JPEG", width: 200, height: 150, quality: 80 }, format: "JPEG", path })).toEqual({
    returnValue: true,
  });
  // One frame: the pipeline ends by itself and says so.
  await eventually(() => events.some((e) => e.eventType === "endOfStream"), 5000);
  expect(await r.call("stop")).toEqual({ returnValue: true });
  const p = ffprobe(path);
  expect(p.streams).toHaveLength(1);
  expect(p.streams[0]).toMatchObject({ codec_name: "mjpeg", width: 200, height: 150 });
  const bytes = new Uint8Array(await Bun.file(path).arrayBuffer());
  expect([bytes[0], bytes[1]]).toEqual([0xff, 0xd8]);
  await sub.cancel();
}, 20000);

test("a stopped recorder starts again on the same instance", async () => {
  const path = join(r.dir, "again.mp4");
  expect(await r.call("start", { video: VIDEO, format: "MP4", path })).toEqual({ returnValue: true });
  await Bun.sleep(600);
  expect(await r.call("stop")).toEqual({ returnValue: true });
  expect(ffprobe(path).streams.map((s) => s.codec_name)).toEqual(["h264"]);
}, 20000);

test("start, pause, resume and stop hold the main thread (which hosts every service) only briefly", async () => {
  let last = performance.now(), worst = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 5);
  try {
    const path = join(r.dir, "thread.mp4");
    expect(await r.call("start", { video: VIDEO, audio: AUDIO, format: "MP4", path })).toEqual({ returnValue: true });
    await Bun.sleep(300);
    expect(await r.call("pause")).toEqual({ returnValue: true });
    expect(await r.call("resume")).toEqual({ returnValue: true });
    await Bun.sleep(300);
    expect(await r.call("stop")).toEqual({ returnValue: true });
  } finally {
    clearInterval(tick);
  }
  // Quiet runs measure under 20 ms; the bound leaves room for two shared cores.
  console.log(`worst gap of a 5 ms timer: ${worst.toFixed(1)} ms`);
  expect(worst).toBeLessThan(150);
}, 20000);
