// The largest frame setVideoData takes is the board's (maxFrameWidth, maxFrameHeight):
// from the recipe, or the Key=Value file videooutput.conf, whose values win.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OK, voEnv, type VoEnv } from "./env";

let v: VoEnv;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "videooutput-frames-"));
  writeFileSync(join(dir, "videooutput.conf"), "maxFrameWidth=1280\nmaxFrameHeight=720\n");
  v = await voEnv({ configFile: join(dir, "videooutput.conf"), maxFrameWidth: 4096, maxFrameHeight: 4096 });
});
afterAll(async () => {
  await v?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("videooutput.conf's maxFrameWidth and maxFrameHeight bound setVideoData (the recipe's values lose); the status keeps the last frame taken", async () => {
  expect(await v.call("connect", { source: "VDEC", sink: "MAIN" })).toEqual({ returnValue: true, planeID: 31 });
  expect(await v.call("setVideoData", { sink: "MAIN", width: 1280, height: 720, frameRate: 50 })).toEqual(OK);
  expect(await v.call("setVideoData", { sink: "MAIN", width: 1281, height: 720, frameRate: 50 })).toEqual({
    returnValue: false, errorCode: 4, errorMessage: "Invalid parameters: width 1281 is more than this board's frames take, 1280 (maxFrameWidth)",
  });
  expect(await v.call("setVideoData", { sink: "MAIN", width: 640, height: 1080, frameRate: 50 })).toEqual({
    returnValue: false, errorCode: 4, errorMessage: "Invalid parameters: height 1080 is more than this board's frames take, 720 (maxFrameHeight)",
  });
  expect((await v.status()).MAIN).toMatchObject({ width: 1280, height: 720, frameRate: 50 });
});
