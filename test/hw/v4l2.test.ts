// vivid through V4L2: capabilities, formats, controls and an mmap capture.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import * as v4l2 from "../../src/ffi/v4l2.ts";
import { libc, O_NONBLOCK } from "../../src/ffi/libc.ts";
import { collect, guest } from "./vboard.ts";

function openVivid(): number {
  for (const node of readdirSync("/dev").filter((n) => n.startsWith("video"))) {
    const fd = v4l2.openDevice(`/dev/${node}`);
    if (v4l2.querycap(fd).driver === "vivid") return fd;
    v4l2.close(fd);
  }
  throw new Error("no vivid node");
}

guest("V4L2 on vivid", () => {
  let fd = -1;
  beforeAll(() => { fd = openVivid(); });
  afterAll(() => v4l2.close(fd));

  test("VIDIOC_QUERYCAP names the driver and a streaming capture node", () => {
    const cap = v4l2.querycap(fd);
    expect(cap.driver).toBe("vivid");
    expect(cap.card).toContain("vivid");
    expect(cap.deviceCaps & (v4l2.Cap.VIDEO_CAPTURE | v4l2.Cap.STREAMING)).toBe(v4l2.Cap.VIDEO_CAPTURE | v4l2.Cap.STREAMING);
  });

  test("formats and frame sizes", () => {
    const formats = v4l2.enumFormats(fd);
    expect(formats.map((f) => f.fourcc)).toContain("YUYV");
    const sizes = v4l2.enumFrameSizes(fd, v4l2.fourcc("YUYV"));
    if (sizes.type === v4l2.FRMSIZE_TYPE_DISCRETE) expect(sizes.sizes).toContainEqual({ width: 320, height: 180 });
    else expect(sizes.maxWidth).toBeGreaterThanOrEqual(320);
    const f = v4l2.setFormat(fd, { width: 320, height: 180, pixelformat: v4l2.fourcc("YUYV") });
    expect(f).toMatchObject({ width: 320, height: 180, pixelformat: v4l2.fourcc("YUYV"), bytesperline: 640, sizeimage: 320 * 180 * 2 });
    expect(v4l2.getFormat(fd)).toEqual(f);
  });

  test("controls", () => {
    const info = v4l2.queryCtrl(fd, v4l2.CID.BRIGHTNESS);
    expect(info).toMatchObject({ name: "Brightness", type: v4l2.CTRL_TYPE_INTEGER, minimum: 0, maximum: 255 });
    expect(v4l2.setCtrl(fd, v4l2.CID.BRIGHTNESS, 200)).toBe(200);
    expect(v4l2.getCtrl(fd, v4l2.CID.BRIGHTNESS)).toBe(200);
    v4l2.setCtrl(fd, v4l2.CID.BRIGHTNESS, info.defaultValue);
    expect(v4l2.enumCtrls(fd).map((c) => c.id)).toContain(v4l2.CID.CONTRAST);
  });

  test("mmap capture delivers full frames in sequence on the event source", async () => {
    v4l2.setFormat(fd, { width: 320, height: 180, pixelformat: v4l2.fourcc("YUYV") });
    const cap = new v4l2.MmapCapture(fd, 3);
    try {
      expect(cap.buffers).toBeGreaterThanOrEqual(2);
      // DQBUF never waits: the device is open O_NONBLOCK, so it answers a frame if one is
      // done, else null (EAGAIN). (A wall-clock bound told nothing in an emulated guest.)
      const F_GETFL = 3;
      expect(libc.fcntl(fd, F_GETFL, 0) & O_NONBLOCK).toBe(O_NONBLOCK);
      cap.dequeue(); // a frame (its buffer re-queued at once) or null
      const [a, b] = await collect<v4l2.Frame>((push) => v4l2.watchFrames(cap, push), 2, 15000);
      expect(a!.data.length).toBe(320 * 180 * 2);
      expect(b!.sequence).toBeGreaterThan(a!.sequence);
      expect(b!.timestampUs).toBeGreaterThan(a!.timestampUs);
      expect(a!.data.some((x) => x !== 0)).toBe(true);
      const c = await cap.nextFrame(15000);
      expect(c!.sequence).toBeGreaterThan(b!.sequence);
    } finally {
      cap.stop();
    }
  });
});
