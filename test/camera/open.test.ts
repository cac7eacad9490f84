// Handles: open/close as leases, one primary opener (44), secondary openers that
// read, the appId permission, and a SIGKILLed holder's camera released.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { cameraEnv, CAMERA, err, type CameraEnv } from "./setup";
import { spawnScript, eventually } from "../helpers/harness";

let c: CameraEnv;
beforeAll(async () => {
  c = await cameraEnv();
});
afterAll(() => c.stop());

const leases = () => c.env.rt!.server.leases.count("camera2/");

test("open and close: a handle is a lease, closed once", async () => {
  const r = await c.call("open", { id: "camera1" });
  expect(r).toEqual({ returnValue: true, handle: expect.any(Number) });
  expect(leases()).toBe(1);
  expect(await c.call("close", { handle: r.handle as number })).toEqual({ returnValue: true });
  expect(leases()).toBe(0);
  expect(await c.call("close", { handle: r.handle as number })).toEqual(err(200, "Invalid state"));
  expect(await c.call("open", { id: "camera7" })).toEqual(err(13, "There is no device"));
  expect(await c.call("open", { id: "camera1", mode: "exclusive" })).toEqual(err(20, "Parsing error"));
  expect(await c.call("open", "{id:")).toEqual(err(20, "Parsing error"));
  expect(await c.call("open", { id: 1 })).toEqual(err(20, "Parsing error"));
});

test("one primary opener per camera (44); secondary openers read but may not change or stream", async () => {
  const other = await c.env.client();
  const primary = (await c.call("open", { id: "camera1", mode: "primary" })).handle as number;
  expect(await other.call(CAMERA, "open", { id: "camera1" })).toEqual(err(44, "Already another device opened as primary"));
  expect(await other.call(CAMERA, "open", { id: "camera1", mode: "primary" })).toEqual(err(44, "Already another device opened as primary"));
  // Even the holder cannot take a second primary handle.
  expect(await c.call("open", { id: "camera1" })).toEqual(err(44, "Already another device opened as primary"));
  const sec = await other.call(CAMERA, "open", { id: "camera1", mode: "secondary" });
  expect(sec).toEqual({ returnValue: true, handle: expect.any(Number) });
  const s = sec.handle as number;
  expect((await other.call(CAMERA, "getFormat", { id: "camera1" })).returnValue).toBe(true);
  expect((await other.call(CAMERA, "getProperties", { id: "camera1" })).returnValue).toBe(true);
  expect(await other.call(CAMERA, "setFormat", { handle: s, params: { width: 640, height: 480, format: "YUV", fps: 15 } })).toEqual(err(47, "Wrong handle"));
  expect(await other.call(CAMERA, "setProperties", { handle: s, params: { brightness: { value: 3 } } })).toEqual(err(47, "Wrong handle"));
  expect(await other.call(CAMERA, "startCamera", { handle: s })).toEqual(err(32, "Wrong param"));
  expect(leases()).toBe(2);
  expect(await c.call("close", { handle: primary })).toEqual({ returnValue: true });
  // Free again: the secondary opener may now take it as primary.
  const p2 = await other.call(CAMERA, "open", { id: "camera1" });
  expect(p2.returnValue).toBe(true);
  expect(await other.call(CAMERA, "close", { handle: p2.handle as number })).toEqual({ returnValue: true });
  expect(await other.call(CAMERA, "close", { handle: s })).toEqual({ returnValue: true });
  expect(leases()).toBe(0);
});

test("a client that leaves the bus closes its handles; a SIGKILLed streaming holder releases the camera", async () => {
  const holder = spawnScript("test/fixtures/camera-holder.ts", ["camera1"], { DEVSERVICES_BUS: c.env.bus.address });
  try {
    const opened = JSON.parse((await holder.waitFor("OPENED")).slice("OPENED ".length));
    expect(opened.returnValue).toBe(true);
    expect(await holder.waitFor("STARTED")).toContain('"returnValue":true');
    expect(await c.call("open", { id: "camera1" })).toEqual(err(44, "Already another device opened as primary"));
    // (A handle is its owner's: other clients of other uids are refused it in access.test.ts; this client is root, who may act on it.)
  } finally {
    await holder.kill("SIGKILL");
  }
  await eventually(() => leases() === 0, 5000);
  const r = await c.call("open", { id: "camera1" });
  expect(r.returnValue).toBe(true);
  // The dead holder's stream was stopped with its handle: this one can start its own.
  expect((await c.call("startCamera", { handle: r.handle as number })).returnValue).toBe(true);
  expect(await c.call("stopCamera", { handle: r.handle as number })).toEqual({ returnValue: true });
  expect(await c.call("close", { handle: r.handle as number })).toEqual({ returnValue: true });

  const gone = await c.env.client();
  expect((await gone.call(CAMERA, "open", { id: "camera1" })).returnValue).toBe(true);
  expect((await gone.call(CAMERA, "open", { id: "camera1", mode: "secondary" })).returnValue).toBe(true);
  expect(leases()).toBe(2);
  gone.close();
  await eventually(() => leases() === 0, 5000);
});

test("appId: with a configured list, only the listed applications may open", async () => {
  const env = await cameraEnv({ appIds: ["com.vendor.app.camera"] });
  try {
    expect(await env.call("open", { id: "camera1", appId: "com.other.app" })).toEqual(err(3, "Cannot open device"));
    const r = await env.call("open", { id: "camera1", appId: "com.vendor.app.camera" });
    expect(r.returnValue).toBe(true);
    expect(await env.call("close", { handle: r.handle as number })).toEqual({ returnValue: true });
  } finally {
    await env.stop();
  }
});
