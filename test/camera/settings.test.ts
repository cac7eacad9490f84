// Format and properties: get/set, subscriptions pushing {id, params}, and their errors.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { cameraEnv, CAMERA, err, type CameraEnv } from "./setup";
import type { Json } from "../../src/core/errors";
import { eventually } from "../helpers/harness";

let c: CameraEnv;
let h: number;
beforeAll(async () => {
  c = await cameraEnv();
});
afterAll(() => c.stop());

test("getFormat and getProperties need an opened camera (11) that exists (13)", async () => {
  expect(await c.call("getFormat", { id: "camera1" })).toEqual(err(11, "Device not opened"));
  expect(await c.call("getProperties", { id: "camera1" })).toEqual(err(11, "Device not opened"));
  expect(await c.call("getFormat", { id: "camera5" })).toEqual(err(13, "There is no device"));
  expect(await c.call("getProperties", { id: "camera5" })).toEqual(err(13, "There is no device"));
  h = (await c.call("open", { id: "camera1" })).handle as number;
});

test("format: the spec's defaults at open, set and read back, pushed to subscribers", async () => {
  expect(await c.call("getFormat", { id: "camera1" })).toEqual({ returnValue: true, params: { width: 640, height: 480, format: "YUV", fps: 30 } });
  const pushed: Json[] = [];
  const sub = await c.client.subscribe(CAMERA, "getFormat", { id: "camera1" }, (m) => pushed.push(m));
  expect(sub.first).toEqual({ returnValue: true, subscribed: true, params: { width: 640, height: 480, format: "YUV", fps: 30 } });
  const want = { width: 1280, height: 720, format: "JPEG", fps: 15 };
  expect(await c.call("setFormat", { handle: h, params: want })).toEqual({ returnValue: true });
  expect(await c.call("getFormat", { id: "camera1" })).toEqual({ returnValue: true, params: want });
  await eventually(() => pushed.length === 1);
  expect(pushed[0]).toEqual({ returnValue: true, id: "camera1", params: want });
  // width, height and format default to 640, 480, YUV.
  expect(await c.call("setFormat", { handle: h, params: { fps: 30 } })).toEqual({ returnValue: true });
  expect((await c.call("getFormat", { id: "camera1" })).params).toEqual({ width: 640, height: 480, format: "YUV", fps: 30 });
  await sub.cancel();
});

test("setFormat errors: 26 unknown format name, 30 a size or rate the camera lacks, 9 while streaming, 23 and 20", async () => {
  expect(await c.call("setFormat", { handle: h, params: { width: 640, height: 480, format: "H264", fps: 30 } })).toEqual(err(26, "Unsupported format"));
  const r = await c.call("setFormat", { handle: h, params: { width: 1920, height: 1080, format: "YUV", fps: 30 } });
  expect(r).toMatchObject({ returnValue: false, errorCode: 30 });
  expect((await c.call("setFormat", { handle: h, params: { width: 640, height: 480, format: "YUV", fps: 60 } })).errorCode).toBe(30);
  expect(await c.call("setFormat", { handle: h })).toEqual(err(23, "Param missing"));
  expect(await c.call("setFormat", { handle: h, params: { width: "wide", fps: 30 } })).toEqual(err(20, "Parsing error"));
  expect(await c.call("setFormat", { handle: 999, params: { fps: 30 } })).toEqual(err(47, "Wrong handle"));
  expect((await c.call("startCamera", { handle: h })).returnValue).toBe(true);
  expect(await c.call("setFormat", { handle: h, params: { fps: 15 } })).toEqual(err(9, "Device is already started"));
  expect(await c.call("stopCamera", { handle: h })).toEqual({ returnValue: true });
});

test("properties: ranges and values, the named ones, set and pushed; 22, 23, 32 and 20", async () => {
  const all = await c.call("getProperties", { id: "camera1" });
  expect(all.params).toMatchObject({ brightness: { min: 0, max: 255, step: 1, default: 128, value: 128 }, contrast: { value: 128 } });
  expect(await c.call("getProperties", { id: "camera1", params: ["brightness", "zoomAbsolute"] })).toEqual({
    returnValue: true,
    params: { brightness: { min: 0, max: 255, step: 1, default: 128, value: 128 } },
  });
  expect(await c.call("getProperties", { id: "camera1", params: ["loudness"] })).toEqual(err(32, "Wrong param"));

  const pushed: Json[] = [];
  const sub = await c.client.subscribe(CAMERA, "getProperties", { id: "camera1" }, (m) => pushed.push(m));
  expect(sub.first.subscribed).toBe(true);
  expect(await c.call("setProperties", { handle: h, params: { brightness: { value: 200 }, hue: { value: 10 } } })).toEqual({ returnValue: true });
  await eventually(() => pushed.length === 1);
  expect(pushed[0]).toEqual({
    returnValue: true,
    id: "camera1",
    params: { brightness: { min: 0, max: 255, step: 1, default: 128, value: 200 }, hue: { min: 0, max: 255, step: 1, default: 128, value: 10 } },
  });
  expect((await c.call("getProperties", { id: "camera1", params: ["brightness"] })).params).toEqual({ brightness: { min: 0, max: 255, step: 1, default: 128, value: 200 } });
  // An empty object succeeds and pushes nothing.
  expect(await c.call("setProperties", { handle: h, params: {} })).toEqual({ returnValue: true });
  expect(await c.call("setProperties", { handle: h, params: { brightness: { value: 256 } } })).toMatchObject({ returnValue: false, errorCode: 22 });
  expect(await c.call("setProperties", { handle: h, params: { brightness: { min: 0 } } })).toMatchObject({ returnValue: false, errorCode: 23 });
  expect(await c.call("setProperties", { handle: h, params: { zoomAbsolute: { value: 1 } } })).toMatchObject({ returnValue: false, errorCode: 32 });
  expect(await c.call("setProperties", { handle: h, params: { loudness: { value: 1 } } })).toEqual(err(20, "Parsing error"));
  // Nothing was set by the refused calls.
  expect((await c.call("getProperties", { id: "camera1", params: ["brightness"] })).params).toEqual({ brightness: { min: 0, max: 255, step: 1, default: 128, value: 200 } });
  expect(pushed.length).toBe(1);
  await sub.cancel();
});

test("solutions: AutoContrast can be enabled; face detection needs a model the virtual board lacks", async () => {
  const r = await c.call("getSolutions", { id: "camera1" });
  expect(r).toEqual({
    returnValue: true,
    solutions: [
      { name: "AutoContrast", params: { enable: false }, supported: true },
      { name: "FaceDetection", params: { enable: false }, supported: false },
      { name: "FaceDetectionCNN", params: { enable: false }, supported: false },
    ],
  });
  expect(await c.call("setSolutions", { handle: h, solutions: [{ name: "AutoContrast", params: { enable: true } }] })).toEqual({ returnValue: true });
  expect((await c.call("getSolutions", { handle: h })).solutions).toContainEqual({ name: "AutoContrast", params: { enable: true }, supported: true });
  expect(await c.call("setSolutions", { id: "camera1", solutions: [{ name: "FaceDetection", params: { enable: true } }] })).toMatchObject({ returnValue: false, errorCode: 32 });
  expect(await c.call("setSolutions", { id: "camera1", solutions: [{ name: "Sepia", params: { enable: true } }] })).toMatchObject({ returnValue: false, errorCode: 32 });
  expect(await c.call("getSolutions", {})).toEqual(err(32, "Wrong param"));
  expect(await c.call("getSolutions", { handle: 4242 })).toEqual(err(47, "Wrong handle"));
  const other = await c.env.client();
  const s = await other.call(CAMERA, "open", { id: "camera1", mode: "secondary" });
  expect(await c.call("close", { handle: h })).toEqual({ returnValue: true });
  expect(await other.call(CAMERA, "close", { handle: s.handle as number })).toEqual({ returnValue: true });
  expect(await c.call("getSolutions", { id: "camera1" })).toEqual(err(11, "Device not opened"));
  expect(await c.call("setSolutions", { id: "camera1", solutions: [] })).toEqual(err(11, "Device not opened"));
  expect(await c.call("getSolutions", { id: 5 })).toEqual(err(20, "Parsing error"));
});
