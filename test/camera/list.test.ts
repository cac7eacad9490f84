// Discovery: the list, its subscription, hotplug through the virtual plug directory
// (inotify), stable IDs, getInfo, and error 100 to subscribers of a camera that goes.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cameraEnv, CAMERA, err, type CameraEnv } from "./setup";
import type { Json } from "../../src/core/errors";
import { eventually } from "../helpers/harness";

let c: CameraEnv;
beforeAll(async () => {
  c = await cameraEnv();
});
afterAll(() => c.stop());

test("getCameraList lists the virtual board's camera", async () => {
  expect(await c.call("getCameraList")).toEqual({ returnValue: true, deviceList: [{ id: "camera1" }] });
  expect(await c.call("getCameraList", { subscribe: false })).toEqual({ returnValue: true, deviceList: [{ id: "camera1" }] });
});

test("getInfo: name, type, builtin and resolutions as <width>,<height>,<fps> per format", async () => {
  const r = await c.call("getInfo", { id: "camera1" });
  expect(r).toEqual({
    returnValue: true,
    info: {
      name: "Virtual Camera",
      type: "camera",
      builtin: true,
      supported: true,
      resolution: {
        YUV: ["640,480,30", "640,480,15", "1280,720,30", "1280,720,15"],
        JPEG: ["640,480,30", "640,480,15", "1280,720,30", "1280,720,15"],
      },
    },
  });
  expect(await c.call("getInfo", { id: "camera9" })).toEqual(err(13, "There is no device"));
  expect(await c.call("getInfo", {})).toEqual(err(23, "Param missing"));
});

test("hotplug: a camera plugged is listed within a second with the next ID, pushed to subscribers; unplugged, it goes with error 100 to its subscribers", async () => {
  const lists: Json[] = [];
  const sub = await c.client.subscribe(CAMERA, "getCameraList", {}, (m) => lists.push(m));
  expect(sub.first).toEqual({ returnValue: true, subscribed: true, deviceList: [{ id: "camera1" }] });

  const t0 = performance.now();
  writeFileSync(join(c.plugDir, "usb1"), "USB Camera\n");
  await eventually(() => lists.length >= 1, 3000, 10);
  expect(performance.now() - t0).toBeLessThan(1000 + 500); // within a second, with slack for a loaded machine
  expect(lists[0]).toEqual({ returnValue: true, deviceList: [{ id: "camera1" }, { id: "camera2" }] });
  const info = await c.call("getInfo", { id: "camera2" });
  expect(info.info).toMatchObject({ name: "USB Camera", builtin: false });

  // Subscribers of the plugged camera's format and properties.
  const owner = await c.env.client();
  const h = (await owner.call(CAMERA, "open", { id: "camera2" })).handle as number;
  expect(typeof h).toBe("number");
  const formatMsgs: Json[] = [];
  const propMsgs: Json[] = [];
  const fsub = await c.client.subscribe(CAMERA, "getFormat", { id: "camera2" }, (m) => formatMsgs.push(m));
  const psub = await c.client.subscribe(CAMERA, "getProperties", { id: "camera2" }, (m) => propMsgs.push(m));
  expect(fsub.first.subscribed).toBe(true);
  expect(psub.first.subscribed).toBe(true);

  rmSync(join(c.plugDir, "usb1"));
  await fsub.ended;
  await psub.ended;
  expect(formatMsgs.at(-1)).toEqual({ ...err(100, "The subscribed camera is disconnected"), id: "camera2" });
  expect(propMsgs.at(-1)).toEqual({ ...err(100, "The subscribed camera is disconnected"), id: "camera2" });
  await eventually(() => lists.length >= 2, 3000, 10);
  expect(lists[1]).toEqual({ returnValue: true, deviceList: [{ id: "camera1" }] });
  // The handle of the gone camera: its device is gone (13); close still ends it.
  expect(await owner.call(CAMERA, "startCamera", { handle: h })).toEqual(err(13, "There is no device"));
  expect(await owner.call(CAMERA, "close", { handle: h })).toEqual({ returnValue: true });
  expect(c.env.rt!.server.leases.count("camera/")).toBe(0);

  // camera1 kept its ID all along; a new camera takes the free number again.
  writeFileSync(join(c.plugDir, "usb2"), "Another Camera\n");
  await eventually(() => lists.length >= 3, 3000, 10);
  expect(lists[2]).toEqual({ returnValue: true, deviceList: [{ id: "camera1" }, { id: "camera2" }] });
  rmSync(join(c.plugDir, "usb2"));
  await eventually(() => lists.length >= 4, 3000, 10);
  await sub.cancel();
  expect(c.env.rt!.server.topics.count("camera/")).toBe(0);
});

test("getCameraList pushes carry returnValue true, as the first reply does (every response has returnValue)", async () => {
  const lists: Json[] = [];
  const sub = await c.client.subscribe(CAMERA, "getCameraList", {}, (m) => lists.push(m));
  expect(sub.first).toEqual({ returnValue: true, subscribed: true, deviceList: [{ id: "camera1" }] });
  writeFileSync(join(c.plugDir, "usb9"), "Pushed Camera\n");
  await eventually(() => lists.length >= 1, 3000, 10);
  rmSync(join(c.plugDir, "usb9"));
  await eventually(() => lists.length >= 2, 3000, 10);
  await sub.cancel();
  expect(lists[0]).toEqual({ returnValue: true, deviceList: [{ id: "camera1" }, { id: "camera2" }] });
  expect(lists[1]).toEqual({ returnValue: true, deviceList: [{ id: "camera1" }] });
});
