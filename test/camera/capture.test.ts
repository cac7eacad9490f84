// Still capture (capture, startCapture/stopCapture), preview and camera events.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { cameraEnv, CAMERA, err, type CameraEnv } from "./setup";
import * as tj from "../../src/ffi/turbojpeg";
import { readCounter } from "../../src/services/camera/backend/virtual";
import type { Json } from "../../src/core/errors";
import { eventually, staysTrue } from "../helpers/harness";

let c: CameraEnv;
let h: number;
beforeAll(async () => {
  c = await cameraEnv();
  h = (await c.call("open", { id: "camera1" })).handle as number;
});
afterAll(() => c.stop());

const NAME = /^Picture\d{8}-\d{6}(-\d+)?\.jpg$/;
const counterOf = (file: string) => {
  const img = tj.decodeGray(readFileSync(file));
  return { ...img, counter: readCounter((x, y) => img.pixels[y * img.width + x]!) };
};

test("capture before a start is 12; nimage outside 1..30 is 22; an unwritable path is 45", async () => {
  expect(await c.call("capture", { handle: h, path: c.captureDir })).toEqual(err(12, "Device not started"));
  expect((await c.call("startCamera", { handle: h })).returnValue).toBe(true);
  expect(await c.call("capture", { handle: h, nimage: 0 })).toMatchObject({ returnValue: false, errorCode: 22 });
  expect(await c.call("capture", { handle: h, nimage: 31 })).toMatchObject({ returnValue: false, errorCode: 22 });
  expect(await c.call("capture", { handle: h, nimage: 1.5 })).toMatchObject({ returnValue: false, errorCode: 22 });
  expect(await c.call("capture", { handle: h, path: "/nonexistent/dir" })).toEqual(err(45, "Cannot write at specified location"));
  const ro = join(c.captureDir, "readonly");
  mkdirSync(ro);
  chmodSync(ro, 0o500);
  if (process.getuid?.() !== 0) expect(await c.call("capture", { handle: h, path: ro })).toEqual(err(45, "Cannot write at specified location"));
  expect(await c.call("capture", { handle: h, nimage: "two" })).toEqual(err(20, "Parsing error"));
  expect(await c.call("capture", { handle: 808 })).toEqual(err(47, "Wrong handle"));
});

test("capture of 2 images after startCamera: two JPEGs named PictureDDMMYYYY-HHMMSS that decode to consecutive frames", async () => {
  const r = await c.call("capture", { handle: h, nimage: 2, path: c.captureDir });
  expect(r.returnValue).toBe(true);
  const paths = r.path as string[];
  expect(paths.length).toBe(2);
  for (const p of paths) expect(basename(p)).toMatch(NAME);
  expect(new Set(paths).size).toBe(2);
  const [a, b] = paths.map(counterOf);
  expect([a!.width, a!.height]).toEqual([640, 480]);
  expect(b!.counter).toBe(a!.counter + 1);
  // The date in the name is today's (local time).
  const d = new Date();
  const dd = `${String(d.getDate()).padStart(2, "0")}${String(d.getMonth() + 1).padStart(2, "0")}${d.getFullYear()}`;
  expect(basename(paths[0]!).slice(7, 15)).toBe(dd);
  // Without a path: the configured capture directory (the state directory's captures/).
  const r1 = await c.call("capture", { handle: h });
  expect((r1.path as string[])[0]).toStartWith(join(c.env.stateDir, "camera2", "captures"));
  expect(await c.call("stopCamera", { handle: h })).toEqual({ returnValue: true });
});

test("MJPEG frames are written as they come", async () => {
  expect(await c.call("setFormat", { handle: h, params: { width: 1280, height: 720, format: "JPEG", fps: 30 } })).toEqual({ returnValue: true });
  expect((await c.call("startCamera", { handle: h })).returnValue).toBe(true);
  const r = await c.call("capture", { handle: h, nimage: 3, path: c.captureDir });
  const imgs = (r.path as string[]).map(counterOf);
  expect(imgs.map((i) => [i.width, i.height])).toEqual([[1280, 720], [1280, 720], [1280, 720]]);
  expect(imgs[2]!.counter - imgs[0]!.counter).toBe(2);
  expect(await c.call("stopCamera", { handle: h })).toEqual({ returnValue: true });
  expect(await c.call("setFormat", { handle: h, params: { width: 640, height: 480, format: "YUV", fps: 30 } })).toEqual({ returnValue: true });
});

test("startCapture: burst of nimage, continuous until stopCapture; 12, 9, 23, 30, 32, 45", async () => {
  const dir = join(c.captureDir, "burst");
  mkdirSync(dir);
  const fmt = { width: 640, height: 480, format: "YUV" };
  expect(await c.call("startCapture", { handle: h, params: { ...fmt, mode: "MODE_BURST", nimage: 3 }, path: dir })).toEqual(err(12, "Device not started"));
  expect((await c.call("startCamera", { handle: h })).returnValue).toBe(true);
  expect(await c.call("startCapture", { handle: h, params: { ...fmt, mode: "MODE_BURST" }, path: dir })).toMatchObject({ returnValue: false, errorCode: 23 });
  expect(await c.call("startCapture", { handle: h, params: { ...fmt, mode: "MODE_SLOW" }, path: dir })).toMatchObject({ returnValue: false, errorCode: 32 });
  expect(await c.call("startCapture", { handle: h, params: { ...fmt, width: 1280, height: 720, mode: "MODE_BURST", nimage: 2 }, path: dir })).toEqual(err(30, "Format unsupported"));
  expect(await c.call("startCapture", { handle: h, params: { ...fmt, mode: "MODE_BURST", nimage: 2 }, path: "/proc/none" })).toEqual(err(45, "Cannot write at specified location"));
  expect(await c.call("startCapture", { handle: h, params: { ...fmt, mode: "MODE_BURST", nimage: 3 }, path: dir })).toEqual({ returnValue: true, path: dir });
  await eventually(() => readdirSync(dir).length === 3, 5000);
  for (const f of readdirSync(dir)) expect(f).toMatch(NAME);
  expect(await c.call("stopCapture", { handle: h })).toEqual({ returnValue: true, path: expect.any(Array) });
  expect(await c.call("stopCapture", { handle: h })).toEqual(err(12, "Device not started"));

  const cont = join(c.captureDir, "continuous");
  mkdirSync(cont);
  expect(await c.call("startCapture", { handle: h, params: { ...fmt, mode: "MODE_CONTINUOUS" }, path: cont })).toEqual({ returnValue: true, path: cont });
  expect(await c.call("startCapture", { handle: h, params: { ...fmt, mode: "MODE_CONTINUOUS" }, path: cont })).toEqual(err(9, "Device is already started"));
  await eventually(() => readdirSync(cont).length >= 4, 5000);
  const stopped = await c.call("stopCapture", { handle: h });
  expect(stopped.returnValue).toBe(true);
  const written = stopped.path as string[];
  expect(written.length).toBeGreaterThanOrEqual(4);
  await staysTrue(() => readdirSync(cont).length === written.length, 300, "no frame is written after stopCapture");
  for (const p of written) expect(tj.readHeader(readFileSync(p))).toMatchObject({ width: 640, height: 480 });
  expect(await c.call("stopCamera", { handle: h })).toEqual({ returnValue: true });
});

test("preview: a configured window (106 otherwise), capture while previewing, the matching stop (200)", async () => {
  const events: Json[] = [];
  const sub = await c.client.subscribe(CAMERA, "getEventNotification", {}, (m) => events.push(m));
  expect(sub.first).toEqual({ returnValue: true, subscribed: true });
  expect(await c.call("getEventNotification", { subscribe: false })).toEqual({ returnValue: true, subscribed: false });
  expect(await c.call("startPreview", { handle: h, windowId: "window9" })).toEqual(err(106, "Invalid windowId"));
  expect(await c.call("startPreview", { handle: h })).toEqual(err(23, "Param missing"));
  expect(await c.call("startPreview", { handle: 77, windowId: "window0" })).toEqual(err(32, "Wrong param"));
  expect(await c.call("stopPreview", { handle: h })).toEqual(err(200, "Invalid state"));
  expect(await c.call("startPreview", { handle: h, windowId: "window0" })).toEqual({ returnValue: true });
  expect(await c.call("startPreview", { handle: h, windowId: "window0" })).toEqual(err(200, "Invalid state"));
  expect(await c.call("startCamera", { handle: h })).toEqual(err(200, "Invalid state"));
  const r = await c.call("capture", { handle: h, path: c.captureDir });
  expect((r.path as string[]).length).toBe(1);
  expect(await c.call("stopCamera", { handle: h })).toEqual(err(200, "Invalid state"));
  expect(await c.call("stopPreview", { handle: h })).toEqual({ returnValue: true });
  expect(events).toEqual([]);

  // A previewing camera unplugged: preview_fault to the event subscribers.
  writeFileSync(join(c.plugDir, "usb"), "USB Camera\n");
  await eventually(async () => ((await c.call("getCameraList")).deviceList as Json[]).length === 2, 3000);
  const h2 = (await c.call("open", { id: "camera2" })).handle as number;
  expect(await c.call("startPreview", { handle: h2, windowId: "window0" })).toEqual({ returnValue: true });
  rmSync(join(c.plugDir, "usb"));
  await eventually(() => events.length === 1, 3000);
  expect(events[0]).toEqual({ returnValue: true, id: "camera2", eventType: "preview_fault" });
  expect(await c.call("stopPreview", { handle: h2 })).toEqual(err(13, "There is no device"));
  expect(await c.call("close", { handle: h2 })).toEqual({ returnValue: true });
  await sub.cancel();
});

test("names an image may take are bounded (captureNameTries): past them the capture is 39 and nothing is replaced", async () => {
  const env = await cameraEnv({ captureNameTries: 2 });
  try {
    const handle = (await env.call("open", { id: "camera1" })).handle as number;
    expect((await env.call("startCamera", { handle })).returnValue).toBe(true);
    // The first two names of this second and the next few are taken.
    const { pictureBase } = await import("../../src/services/camera/service");
    const taken: string[] = [];
    for (let s = 0; s < 4; s++) {
      const base = pictureBase(new Date(Date.now() + s * 1000));
      for (const f of [`${base}.jpg`, `${base}-1.jpg`]) {
        writeFileSync(join(env.captureDir, f), "taken");
        taken.push(f);
      }
    }
    expect(await env.call("capture", { handle, path: env.captureDir })).toEqual(err(39, "Fail to write file"));
    expect(readdirSync(env.captureDir).sort()).toEqual(taken.sort());
    for (const f of taken) expect(readFileSync(join(env.captureDir, f), "utf8")).toBe("taken");
    expect(await env.call("stopCamera", { handle })).toEqual({ returnValue: true });
  } finally {
    await env.stop();
  }
});
