// Shared set-up of the recording pipeline tests: a private bus, the record service
// in this process on the virtual board (its `record` section and options
// overridable), a client, ffprobe on the results.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { afterAll, beforeAll } from "bun:test";
import { BINARY, eventually, testEnv, type Env } from "../helpers/harness";
import { BusClient } from "../../src/bus/client";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import type { Json } from "../../src/core/errors";
import virtual from "../../recipes/boards/virtual.json" with { type: "json" };

export const MAIN = "com.vendor.pipeline.record.main";

/** 320x240 at 30/s, 500 kbit/s H264; 48 kHz stereo AAC at 128 kbit/s. */
export const VIDEO = { videoSrc: "camera1", width: 320, height: 240, codec: "H264", fps: 30, bitRate: 500_000 };
export const AUDIO = { codec: "AAC", sampleRate: 48000, channelCount: 2, bitRate: 128_000 };

export interface RecordEnv {
  env: Env;
  client: BusClient;
  dir: string;
  call(method: string, payload?: Json | string, service?: string): Promise<Json>;
  stop(): Promise<void>;
}

export async function recordEnv(o: { record?: Json; options?: Json } = {}): Promise<RecordEnv> {
  const env = await testEnv();
  await env.start(["record"], { record: { ...virtual.record, ...o.record }, serviceConfig: { record: o.options ?? {} } } as any);
  const client = await env.client();
  const dir = mkdtempSync(join(tmpdir(), "record-test-"));
  return {
    env,
    client,
    dir,
    call: (method, payload = {}, service = MAIN) => client.call(service, method, payload, { timeoutMs: 30000 }),
    async stop() {
      await env.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Probe {
  duration: number;
  streams: { codec_type: string; codec_name: string; width?: number; height?: number; duration?: string }[];
}

/** ffprobe's view of a file (throws when ffprobe cannot read it). */
export function ffprobe(path: string): Probe {
  const r = Bun.spawnSync(["ffprobe", "-v", "error", "-print_format", "json", "-show_format", "-show_streams", path]);
  if (r.exitCode !== 0) throw new Error(`ffprobe ${path}: ${r.stderr.toString()}`);
  const j = JSON.parse(r.stdout.toString());
  return { duration: Number(j.format?.duration ?? NaN), streams: j.streams ?? [] };
}

/**
 * For tests of the shipped binary: a private bus, a client and a directory, made
 * before the file's tests and removed after them; `serve` starts the binary serving
 * the record pipelines (on a board recipe file when given) and answers once its main
 * pipeline is on the bus.
 */
export function binaryEnv(prefix: string) {
  const e = {} as { bus: PrivateBus; client: BusClient; dir: string; serve(board?: string): Promise<Subprocess> };
  beforeAll(async () => {
    e.bus = await startPrivateBus();
    e.client = await BusClient.connect(e.bus.address);
    e.dir = mkdtempSync(join(tmpdir(), prefix));
  });
  afterAll(async () => {
    e.client?.close();
    await e.bus?.stop();
    rmSync(e.dir, { recursive: true, force: true });
  });
  e.serve = (board) => serveRecordBinary(e.bus.address, e.client, mkdtempSync(join(e.dir, "state-")), board);
  return e;
}

async function serveRecordBinary(busAddress: string, client: BusClient, stateDir: string, board?: string) {
  const proc = spawn([BINARY, "serve", "record", "--bus", busAddress, ...(board ? ["--board", board] : []),
    "--state-dir", stateDir, "--log-level", "warn"], { env: { ...process.env }, stdin: "ignore", stdout: "ignore", stderr: "inherit" });
  try {
    await eventually(() => client.hasOwner(MAIN), 20000, 50);
  } catch (e) {
    proc.kill("SIGKILL");
    throw e;
  }
  return proc;
}
