// Error 4 from the stop bound: end-of-stream queued behind a backlog that an element
// drains at one frame a second cannot reach the file within stopTimeoutMs.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { recordEnv, VIDEO, AUDIO, type RecordEnv } from "./env";

let r: RecordEnv;
beforeAll(async () => {
  r = await recordEnv({
    record: { videoSources: { slow: "videotestsrc is-live=true ! queue ! identity sleep-time=1000000" } },
    options: { stopTimeoutMs: 1000 },
  });
});
afterAll(async () => {
  await r?.stop();
});

test("4: end-of-stream does not reach the file within the stop bound", async () => {
  const path = join(r.dir, "slow.mp4");
  expect(await r.call("start", { video: { ...VIDEO, videoSrc: "slow" }, audio: AUDIO, format: "MP4", path })).toEqual({ returnValue: true });
  await Bun.sleep(500);
  const t0 = Date.now();
  expect(await r.call("stop")).toEqual({ returnValue: false, errorCode: 4, errorText: "Fails to unload the recorder" });
  expect(Date.now() - t0).toBeGreaterThanOrEqual(950);
  // Unloaded all the same.
  expect(await r.call("stop")).toEqual({ returnValue: false, errorCode: 3, errorText: "Already unloaded" });
}, 30000);
