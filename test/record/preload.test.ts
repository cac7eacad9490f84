// GStreamer is loaded when a recording needs it, not when the service starts (the
// idle process stays small), and off the main thread (gst-worker.ts); the
// `preload` option loads it at start-up instead. Read from the shipped binary's
// memory map (/proc/PID/maps).
import { expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { binaryBuilt, eventually, staysTrue } from "../helpers/harness";
import { binaryEnv, ffprobe, recordEnv, VIDEO, AUDIO, MAIN } from "./env";

const t = binaryEnv("record-preload-");

const mapped = (pid: number) => {
  const maps = readFileSync(`/proc/${pid}/maps`, "utf8");
  return { gstreamer: maps.includes("libgstreamer-1.0"), x264: maps.includes("libgstx264") };
};

test.skipIf(!binaryBuilt())("by default GStreamer is loaded by the first start, not before", async () => {
  const proc = await t.serve();
  try {
    await staysTrue(() => !mapped(proc.pid).gstreamer && !mapped(proc.pid).x264, 500, "GStreamer is not loaded before the first start");
    expect(mapped(proc.pid)).toEqual({ gstreamer: false, x264: false });
    const path = join(t.dir, "first.mp4");
    expect(await t.client.call(MAIN, "start", { video: VIDEO, audio: AUDIO, format: "MP4", path })).toEqual({ returnValue: true });
    expect(mapped(proc.pid)).toEqual({ gstreamer: true, x264: true });
    expect(await t.client.call(MAIN, "stop", {})).toEqual({ returnValue: true });
  } finally {
    proc.kill("SIGKILL");
    await proc.exited;
  }
}, 30000);

test.skipIf(!binaryBuilt())("with preload GStreamer and the default pipeline's plugins are loaded at start-up, while the service answers", async () => {
  const virtual = JSON.parse(readFileSync(resolve(import.meta.dir, "../../recipes/boards/virtual.json"), "utf8"));
  const board = join(t.dir, "preload.json");
  writeFileSync(board, JSON.stringify({ ...virtual, serviceConfig: { ...virtual.serviceConfig, record: { preload: true } } }));
  const proc = await t.serve(board);
  try {
    // The name is owned while the plugins load on their worker thread; a call is answered meanwhile.
    expect(await t.client.call(MAIN, "stop", {})).toMatchObject({ returnValue: false });
    await eventually(() => mapped(proc.pid).x264, 10000, 50);
    expect(mapped(proc.pid).gstreamer).toBe(true);
  } finally {
    proc.kill("SIGKILL");
    await proc.exited;
  }
}, 30000);

test("a recipe whose default pipeline cannot be planned still records what it can", async () => {
  // MP4 carries only AAC on this board: the default (H264 + AAC) pipeline has no plan.
  const r = await recordEnv({ record: { formats: { MP4: { muxer: "mp4mux fragment-duration=500", codecs: ["AAC"] } } } });
  try {
    const path = join(r.dir, "audio-only.mp4");
    expect(await r.call("start", { audio: AUDIO, format: "MP4", path })).toEqual({ returnValue: true });
    await Bun.sleep(600);
    expect(await r.call("stop")).toEqual({ returnValue: true });
    expect(ffprobe(path).streams.map((s) => s.codec_name)).toEqual(["aac"]);
  } finally {
    await r.stop();
  }
}, 20000);
