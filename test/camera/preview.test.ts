// Preview drawing: YUYV to XRGB8888 (BT.601), and a display that cannot be used.
import { test, expect } from "bun:test";
import { yuyvToXrgb } from "../../src/services/camera/preview";
import { cameraEnv, err } from "./setup";

test("YUYV converts to XRGB8888 with BT.601 limited range, clipped to the screen", () => {
  // Two pixel pairs: white (235,128,128) and 75 % red (65,100,212) in YUYV.
  const src = new Uint8Array([235, 128, 235, 128, 65, 100, 65, 212]);
  const dst = new Uint32Array(8).fill(0xdeadbeef);
  yuyvToXrgb(src, 4, 1, dst, 16, 4, 2);
  const rgb = (v: number) => [(v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff];
  expect(rgb(dst[0]!)).toEqual([255, 255, 255]);
  expect(rgb(dst[1]!)).toEqual([255, 255, 255]);
  const [r, g, b] = rgb(dst[2]!);
  expect(Math.abs(r! - 191)).toBeLessThan(4);
  expect(g!).toBeLessThan(4);
  expect(b!).toBeLessThan(4);
  // The second row of the screen is beyond the frame: untouched.
  expect(dst[4]).toBe(0xdeadbeef);
  // A screen narrower than the frame: only what fits.
  const narrow = new Uint32Array(2).fill(7);
  yuyvToXrgb(src, 4, 1, narrow, 8, 2, 1);
  expect(rgb(narrow[0]!)).toEqual([255, 255, 255]);
});

test("a window whose display cannot be used is 106, and the camera stays startable", async () => {
  const c = await cameraEnv({ displays: { screen0: { card: "/nonexistent/card0" } } });
  try {
    const h = (await c.call("open", { id: "camera1" })).handle as number;
    const r = await c.call("startPreview", { handle: h, windowId: "screen0" });
    expect(r).toMatchObject({ returnValue: false, errorCode: 106 });
    expect(String(r.errorText)).toStartWith("Invalid windowId: ");
    expect(await c.call("startPreview", { handle: h, windowId: "screen1" })).toEqual(err(106, "Invalid windowId"));
    expect((await c.call("startCamera", { handle: h })).returnValue).toBe(true);
    expect(await c.call("stopCamera", { handle: h })).toEqual({ returnValue: true });
  } finally {
    await c.stop();
  }
});
