// GStreamer is loaded when a recording needs it, not when the service starts (the
// idle process stays small), and off the main thread (gst-worker.ts); the
// `preload` option loads it at start-up instead. Read from the shipped binary's
// memory map (/proc/PID/maps).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawn } from "bun";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { BINARY, binaryBuilt, eventually } from "../helpers/harness";
import { VIDEO, AUDIO, MAIN } from "./env";

let bus: PrivateBus;
let client: BusClient;
let dir: string;
beforeAll(async () => {
  bus = await startPrivateBus();
  client = await BusClient.connect(bus.address);
  dir = mkdtempSync(join(tmpdir(), "record-preload-"));
});
afterAll(async () => {
  client?.close();
  await bus?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const mapped = (pid: number) => {
  const maps = readFileSync(`/proc/${pid}/maps`, "utf8");
  return { gstreamer: maps.includes("libgstreamer-1.0"), x264: maps.includes("libgstx264") };
};

async function serveRecord(board?: string) {
  const proc = spawn([BINARY, "serve", "record", "--bus", bus.address, ...(board ? ["--board", board] : []),
    "--state-dir", mkdtempSync(join(dir, "state-")), "--log-level", "warn"], { stdin: "ignore", stdout: "ignore", stderr: "inherit" });
  try {
    await eventually(() => client.hasOwner(MAIN), 20000, 50);
  } catch (e) {
    proc.kill("SIGKILL");
    throw e;
  }
  return proc;
}

test.skipIf(!binaryBuilt())("by default GStreamer is loaded by the first start, not before", async () => {
  const proc = await serveRecord();
  try {
    await Bun.sleep(500);
    expect(mapped(proc.pid)).toEqual({ gstreamer: false, x264: false });
    const path = join(dir, "first.mp4");
    expect(await client.call(MAIN, "start", { video: VIDEO, audio: AUDIO, format: "MP4", path })).toEqual({ returnValue: true });
    expect(mapped(proc.pid)).toEqual({ gstreamer: true, x264: true });
    expect(await client.call(MAIN, "stop", {})).toEqual({ returnValue: true });
  } finally {
    proc.kill("SIGKILL");
    await proc.exited;
  }
}, 30000);

test.skipIf(!binaryBuilt())("with preload GStreamer and the default pipeline's plugins are loaded at start-up, while the service answers", async () => {
  const virtual = JSON.parse(readFileSync(resolve(import.meta.dir, "../../recipes/boards/virtual.json"), "utf8"));
  const board = join(dir, "preload.json");
  writeFileSync(board, JSON.stringify({ ...virtual, serviceConfig: { ...virtual.serviceConfig, record: { preload: true } } }));
  const proc = await serveRecord(board);
  try {
    // The name is owned while the plugins load on their worker thread; a call is answered meanwhile.
    expect(await client.call(MAIN, "stop", {})).toMatchObject({ returnValue: false });
    await eventually(() => mapped(proc.pid).x264, 10000, 50);
    expect(mapped(proc.pid).gstreamer).toBe(true);
  } finally {
    proc.kill("SIGKILL");
    await proc.exited;
  }
}, 30000);
