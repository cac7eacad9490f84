// Streaming into shared memory, read by a client in another process through the
// reader library: POSIX memory by fd (getFd buffer) and System V by key, frames
// signalled on an eventfd (getFd event); counted, without gaps, at the camera's rate.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { cameraEnv, err, type CameraEnv } from "./setup";
import { spawnScript, eventually } from "../helpers/harness";
import { FrameReader } from "../../src/clients/camera/reader";
import { readCounter } from "../../src/services/camera/backend/virtual";
import * as tj from "../../src/ffi/turbojpeg";
import { closeFd } from "../../src/ffi/libc";

let c: CameraEnv;
let h: number;
beforeAll(async () => {
  // 16 frames of slack (half a second) for a reader process on a busy machine.
  c = await cameraEnv({ ringSlots: 16 });
  h = (await c.call("open", { id: "camera1" })).handle as number;
});
afterAll(() => c.stop());

const FRAMES = 60;

async function readInOtherProcess(mem: string) {
  const reader = spawnScript("test/fixtures/camera-reader.ts", ["camera1", mem, String(FRAMES)], { DEVSERVICES_BUS: c.env.bus.address });
  const line = await reader.waitFor((l) => l.startsWith("FRAMES") || l.startsWith("FAILED"), 20000);
  await reader.proc.exited;
  expect(line.startsWith("FRAMES")).toBe(true);
  return JSON.parse(line.slice("FRAMES ".length));
}

function expectGapless(r: any, width: number, height: number) {
  expect(r.info).toMatchObject({ width, height, fourcc: "YUYV", fps: 30 });
  expect(r.frames.length).toBe(FRAMES);
  expect(r.lost).toBe(0);
  for (let i = 1; i < FRAMES; i++) {
    expect(r.frames[i]).toBe(r.frames[i - 1] + 1);
    expect(r.deviceSequences[i]).toBe(r.deviceSequences[i - 1] + 1);
    // The pattern's own counter, read from the pixels: the frames are the camera's, in order.
    expect(r.counters[i]).toBe(r.counters[i - 1] + 1);
    expect(BigInt(r.timestamps[i])).toBeGreaterThan(BigInt(r.timestamps[i - 1]));
  }
  expect(r.sizes.every((s: number) => s === width * height * 2)).toBe(true);
  // 60 frames at 30 fps: about 2 s (loose bounds for a shared machine).
  expect(r.seconds).toBeGreaterThan(1.5);
  expect(r.seconds).toBeLessThan(4);
}

test("POSIX shared memory: another process maps the fd from getFd and reads every frame at 30 fps", async () => {
  expect(await c.call("getFd", { handle: h, type: "buffer" })).toEqual(err(200, "Invalid state"));
  expect(await c.call("startCamera", { handle: h })).toEqual({ returnValue: true, type: "posixshm" });
  expect(await c.call("startCamera", { handle: h })).toEqual(err(200, "Invalid state"));
  expectGapless(await readInOtherProcess("posix"), 640, 480);
  expect(await c.call("getFd", { handle: h, type: "ring" })).toEqual(err(46, "Unsupported Memory Type"));
  expect(await c.call("getFd", { handle: 31337, type: "buffer" })).toEqual(err(47, "Wrong handle"));
  expect(await c.call("getFd", { handle: h })).toEqual(err(23, "Param missing"));
  expect(await c.call("stopPreview", { handle: h })).toEqual(err(200, "Invalid state"));
  expect(await c.call("close", { handle: h })).toEqual(err(200, "Invalid state"));
  expect(await c.call("stopCamera", { handle: h })).toEqual({ returnValue: true });
  expect(await c.call("stopCamera", { handle: h })).toEqual(err(200, "Invalid state"));
  expect(await c.call("stopCamera", { handle: 31337 })).toEqual(err(32, "Wrong param"));
  expect(await c.call("stopCamera", {})).toEqual(err(23, "Param missing"));
});

test("System V shared memory: the key from startCamera, 1280x720", async () => {
  expect(await c.call("setFormat", { handle: h, params: { width: 1280, height: 720, format: "YUV", fps: 30 } })).toEqual({ returnValue: true });
  const r = await c.call("startCamera", { handle: String(h), params: { type: "sysvshm" } });
  expect(r).toEqual({ returnValue: true, type: "sysvshm", key: expect.any(Number) });
  expect(await c.call("getFd", { handle: h, type: "buffer" })).toEqual(err(49, "Handle is not in POSIXSHM mode"));
  expectGapless(await readInOtherProcess(`sysv:${r.key}`), 1280, 720);
  expect(await c.call("stopCamera", { handle: h })).toEqual({ returnValue: true });
  // The segment is gone with the stream.
  expect(() => FrameReader.fromKey(r.key as number)).toThrow();
  expect(await c.call("startCamera", { handle: h, params: { type: "dmabuf" } })).toEqual(err(46, "Unsupported Memory Type"));
  expect(await c.call("setFormat", { handle: h, params: { width: 640, height: 480, format: "YUV", fps: 30 } })).toEqual({ returnValue: true });
});

test("the ring says when the writer stopped; MJPEG frames are whole JPEGs", async () => {
  expect(await c.call("setFormat", { handle: h, params: { width: 640, height: 480, format: "JPEG", fps: 30 } })).toEqual({ returnValue: true });
  expect((await c.call("startCamera", { handle: h })).returnValue).toBe(true);
  const { fd } = await c.client.callForFd("com.vendor.service.camera2", "getFd", { handle: h, type: "buffer" });
  const reader = FrameReader.fromFd(fd!);
  closeFd(fd!);
  expect(reader.info).toMatchObject({ width: 640, height: 480, fourcc: "MJPG" });
  await eventually(() => reader.writeIndex >= 3, 5000);
  const frames = reader.read();
  expect(frames.length).toBeGreaterThan(0);
  const last = frames.at(-1)!;
  const img = tj.decodeGray(last.data);
  expect([img.width, img.height]).toEqual([640, 480]);
  expect(readCounter((x, y) => img.pixels[y * 640 + x]!)).toBe(last.deviceSequence);
  expect(reader.stopped).toBe(false);
  expect(await c.call("stopCamera", { handle: h })).toEqual({ returnValue: true });
  // The service's mapping is gone, ours stays: the stopped flag was written before it went.
  expect(reader.stopped).toBe(true);
  reader.close();
  expect(await c.call("setFormat", { handle: h, params: { width: 640, height: 480, format: "YUV", fps: 30 } })).toEqual({ returnValue: true });
});

test("AutoContrast stretches the luma of the frames written", async () => {
  expect(await c.call("setProperties", { handle: h, params: { contrast: { value: 40 } } })).toEqual({ returnValue: true });
  const lumaRange = async () => {
    expect((await c.call("startCamera", { handle: h })).returnValue).toBe(true);
    const { fd } = await c.client.callForFd("com.vendor.service.camera2", "getFd", { handle: h, type: "buffer" });
    const reader = FrameReader.fromFd(fd!);
    closeFd(fd!);
    await eventually(() => reader.writeIndex >= 2, 5000);
    const f = reader.read().at(-1)!;
    reader.close();
    expect(f.data.length).toBe(640 * 480 * 2);
    expect(await c.call("stopCamera", { handle: h })).toEqual({ returnValue: true });
    let lo = 255, hi = 0;
    // Below the counter row and away from the moving bar: the colour bars alone.
    for (let x = 0; x < 640; x += 8) {
      const y = f.data[(240 * 640 + x) * 2]!;
      lo = Math.min(lo, y);
      hi = Math.max(hi, y);
    }
    return hi - lo;
  };
  const flat = await lumaRange();
  expect(await c.call("setSolutions", { handle: h, solutions: [{ name: "AutoContrast", params: { enable: true } }] })).toEqual({ returnValue: true });
  const stretched = await lumaRange();
  expect(stretched).toBeGreaterThan(flat * 2);
  expect(await c.call("setSolutions", { handle: h, solutions: [{ name: "AutoContrast", params: { enable: false } }] })).toEqual({ returnValue: true });
  expect(await c.call("setProperties", { handle: h, params: { contrast: { value: 128 } } })).toEqual({ returnValue: true });
});
