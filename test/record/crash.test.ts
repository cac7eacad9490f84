// A recording cut by SIGKILL still plays: the compiled binary records for 3 s, is
// killed, and ffprobe reads at least 2 s (fragmented MP4: each fragment is on disk
// once written).
import { expect, test } from "bun:test";
import { join } from "node:path";
import { binaryBuilt } from "../helpers/harness";
import { ffprobe, binaryEnv, VIDEO, AUDIO, MAIN } from "./env";

const t = binaryEnv("record-crash-");

test.skipIf(!binaryBuilt())("a service killed with SIGKILL mid-recording leaves a file ffprobe reads, as long as what was recorded less one second", async () => {
  const proc = await t.serve();
  try {
    const path = join(t.dir, "cut.mp4");
    expect(await t.client.call(MAIN, "start", { video: VIDEO, audio: AUDIO, format: "MP4", path })).toEqual({ returnValue: true });
    const started = Date.now();
    await Bun.sleep(3000);
    proc.kill("SIGKILL");
    await proc.exited;
    const recorded = (Date.now() - started) / 1000;
    const p = ffprobe(path);
    expect(p.streams.map((s) => s.codec_name).sort()).toEqual(["aac", "h264"]);
    expect(p.duration).toBeGreaterThanOrEqual(recorded - 1);
    expect(p.duration).toBeLessThanOrEqual(recorded + 0.5);
  } finally {
    proc.kill("SIGKILL");
  }
}, 40000);

test.skipIf(!binaryBuilt())("a service stopped with SIGTERM mid-recording finishes the file first", async () => {
  const proc = await t.serve();
  try {
    const path = join(t.dir, "term.mp4");
    expect(await t.client.call(MAIN, "start", { video: VIDEO, audio: AUDIO, format: "MP4", path })).toEqual({ returnValue: true });
    const started = Date.now();
    await Bun.sleep(1800);
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
    const recorded = (Date.now() - started) / 1000;
    const p = ffprobe(path);
    expect(p.streams.map((s) => s.codec_name).sort()).toEqual(["aac", "h264"]);
    // Finished, not cut at a fragment: within a frame or two of what was recorded.
    expect(p.duration).toBeGreaterThan(recorded - 0.3);
  } finally {
    proc.kill("SIGKILL");
  }
}, 40000);
