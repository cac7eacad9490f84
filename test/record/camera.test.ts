// Recording the camera service's stream: a video source of the recipe that names a
// camera of com.vendor.service.camera2 (the virtual camera here), opened by the
// record service, its shared-memory frames pushed into the pipeline.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testEnv, eventually, type Env } from "../helpers/harness";
import type { BusClient } from "../../src/bus/client";
import virtual from "../../recipes/boards/virtual.json" with { type: "json" };
import { ffprobe, AUDIO, MAIN } from "./env";

const CAMERA = "com.vendor.service.camera2";
let env: Env, client: BusClient, dir: string;
beforeAll(async () => {
  env = await testEnv();
  await env.start(["camera2", "record"], {
    record: { ...virtual.record, videoSources: { camera1: { camera: "camera1", width: 640, height: 480, fps: 30 } } },
  } as any);
  client = await env.client();
  dir = mkdtempSync(join(tmpdir(), "record-camera-"));
});
afterAll(async () => {
  await env?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const video = { videoSrc: "camera1", width: 320, height: 240, codec: "H264", fps: 30, bitRate: 500_000 };

test("the camera service's stream recorded with audio, paused and resumed: H264 of the requested size, the time recorded", async () => {
  const path = join(dir, "camera.mp4");
  expect(await client.call(MAIN, "start", { video, audio: AUDIO, format: "MP4", path })).toEqual({ returnValue: true });
  await Bun.sleep(1000);
  expect(await client.call(MAIN, "pause", {})).toEqual({ returnValue: true });
  await Bun.sleep(700);
  expect(await client.call(MAIN, "resume", {})).toEqual({ returnValue: true });
  await Bun.sleep(1000);
  expect(await client.call(MAIN, "stop", {})).toEqual({ returnValue: true });
  const p = ffprobe(path);
  expect(p.streams.map((s) => `${s.codec_type}:${s.codec_name}`).sort()).toEqual(["audio:aac", "video:h264"]);
  expect(p.streams.find((s) => s.codec_type === "video")).toMatchObject({ width: 320, height: 240 });
  expect(p.duration).toBeGreaterThan(1.7);
  expect(p.duration).toBeLessThan(2.3);
  // The camera was given back: another client may open it as primary.
  await eventually(async () => {
    const o = await client.call(CAMERA, "open", { id: "camera1", mode: "primary" });
    if (o.returnValue !== true) return false;
    await client.call(CAMERA, "close", { handle: o.handle });
    return true;
  }, 5000, 100);
}, 30000);

test("an image from the camera service's stream", async () => {
  const path = join(dir, "still.jpg");
  expect(await client.call(MAIN, "start", { image: { videoSrc: "camera1", codec: "JPEG", width: 160, height: 120, quality: 70 }, format: "JPEG", path })).toEqual({
    returnValue: true,
  });
  await Bun.sleep(500);
  expect(await client.call(MAIN, "stop", {})).toEqual({ returnValue: true });
  expect(ffprobe(path).streams[0]).toMatchObject({ codec_name: "mjpeg", width: 160, height: 120 });
}, 20000);

test("2 when the camera is held by another client as primary", async () => {
  const o = await client.call(CAMERA, "open", { id: "camera1", mode: "primary" });
  expect(o.returnValue).toBe(true);
  try {
    const path = join(dir, "busy.mp4");
    expect(await client.call(MAIN, "start", { video, format: "MP4", path })).toEqual({ returnValue: false, errorCode: 2, errorText: "Failed to load recorder" });
    expect(await Bun.file(path).exists()).toBe(false);
  } finally {
    await client.call(CAMERA, "close", { handle: o.handle });
  }
}, 20000);
