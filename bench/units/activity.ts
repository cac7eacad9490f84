// Idle memory before and after work: `dist/devservices serve` with every service of
// the virtual board (its media indexer given one media root) idles, then a
// recording (H264 + AAC into MP4 from the virtual board's sources), a camera stream
// (the virtual camera open and streaming into its ring) and a media scan each run and
// end; after each, the process idles again and is measured. Two rounds, so that what
// is loaded once (GStreamer's libraries and plugin registry, the first use of a
// thread) shows in the first round and what grows with every use in the second.
// Memory from /proc/PID/status (RssAnon, threads) and /proc/PID/smaps: the resident
// pages of the shared libraries mapped since start (GStreamer, its plugins and the
// libraries they load: GStreamer stays loaded once used, and its share is listed on
// its own). The anonymous memory those libraries keep (their data, the plugin
// registry) is inside RssAnon: it is the step of the first recording, and the goal
// compares the rounds after it with the value after it.
// IDLE_MS is longer than the time a thread that started for the work idles before it
// ends (the media indexer's metadata thread: 30 s).
//   bun bench/units/activity.ts [IDLE_MS] [WORK_MS] [ROUNDS]      (defaults 45000, 3000, 2)
import { spawn } from "bun";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { writeSampleMedia } from "../../src/cli/demo-media";
import virtual from "../../recipes/boards/virtual.json" with { type: "json" };

const BINARY = process.env.DEVSERVICES_BINARY ?? join(import.meta.dir, "../../dist/devservices");
const IDLE_MS = Number(process.argv[2] ?? 45000);
const WORK_MS = Number(process.argv[3] ?? 3000);
const ROUNDS = Number(process.argv[4] ?? 2);
const dir = mkdtempSync(join(tmpdir(), "bench-activity-"));
const media = join(dir, "media");
mkdirSync(media);
// A few copies of the demo's sample files (audio, images) to scan.
for (let i = 0; i < 20; i++) writeSampleMedia(join(media, `set${i}`));
const board = join(dir, "board.json");
const config = virtual as Record<string, any>;
writeFileSync(board, JSON.stringify({
  ...config,
  name: "activity",
  serviceConfig: { ...config.serviceConfig, mediaindexer: { ...config.serviceConfig?.mediaindexer, mediaRoots: [media] } },
}));

const bus = await startPrivateBus();
const p = spawn([BINARY, "serve", "--bus", bus.address, "--board", board, "--state-dir", join(dir, "state"), "--log-level", "info"], {
  stdout: "pipe",
  stderr: "inherit",
});
const cleanup = () => {
  p.kill();
  rmSync(dir, { recursive: true, force: true });
};
process.on("exit", cleanup);
const reader = (p.stdout as ReadableStream<Uint8Array>).getReader();
let text = "";
while (!text.includes("devservices ready")) {
  const { value, done } = await reader.read();
  if (done) throw new Error(`serve exited: ${text}`);
  text += new TextDecoder().decode(value);
}
void (async () => {
  while (!(await reader.read()).done) {}
})();
const client = await BusClient.connect(bus.address);

interface Sample { state: string; anon: number; threads: number; libs: number; libNames: Set<string> }
let atStart: Set<string> | undefined;
function sample(state: string): Sample {
  const status = readFileSync(`/proc/${p.pid}/status`, "utf8");
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)![1]);
  let libs = 0;
  let path = "";
  const libNames = new Set<string>();
  for (const line of readFileSync(`/proc/${p.pid}/smaps`, "utf8").split("\n")) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s+(.*)$/.exec(line);
    if (head) {
      path = /\.so(\.|$)/.test(head[1]!) ? head[1]! : "";
      if (path) libNames.add(path);
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && path && atStart && !atStart.has(path)) libs += Number(rss[1]);
  }
  atStart ??= libNames;
  return { state, anon: kb("RssAnon"), threads: kb("Threads"), libs, libNames };
}
const idle = async (state: string) => {
  await Bun.sleep(IDLE_MS);
  return sample(state);
};
const must = (what: string, r: Record<string, unknown>) => {
  if (r.returnValue !== true) throw new Error(`${what}: ${JSON.stringify(r)}`);
  return r;
};

const RECORD = "com.vendor.pipeline.record.main";
const CAMERA = "com.vendor.service.camera2";
async function recording(i: number) {
  must("record start", await client.call(RECORD, "start", {
    video: { videoSrc: "camera1", width: 640, height: 480, codec: "H264", fps: 30, bitRate: 2_000_000 },
    audio: { codec: "AAC", sampleRate: 48000, channelCount: 2, bitRate: 128_000 },
    format: "MP4",
    path: join(dir, `recording-${i}.mp4`),
  }, { timeoutMs: 30000 }));
  await Bun.sleep(WORK_MS);
  must("record stop", await client.call(RECORD, "stop", {}, { timeoutMs: 30000 }));
}
async function cameraStream() {
  const { handle } = must("camera open", await client.call(CAMERA, "open", { id: "camera1" }));
  must("camera setFormat", await client.call(CAMERA, "setFormat", { handle, params: { width: 640, height: 480, format: "YUV", fps: 30 } }));
  must("camera startCamera", await client.call(CAMERA, "startCamera", { handle }));
  await Bun.sleep(WORK_MS);
  must("camera stopCamera", await client.call(CAMERA, "stopCamera", { handle }));
  must("camera close", await client.call(CAMERA, "close", { handle }));
}
async function mediaScan() {
  must("requestMediaScan", await client.call("com.vendor.service.mediaindexer", "requestMediaScan", { path: media }));
  for (let i = 0; ; i++) {
    const list = await client.call("com.vendor.service.mediaindexer", "getDeviceList", {});
    const device = ((list.pluginList as any[])?.[0]?.deviceList ?? [])[0];
    if (i > 10 && device?.state === "idle") return;
    if (i > 3000) throw new Error("the media scan did not end");
    await Bun.sleep(10);
  }
}

const samples: Sample[] = [await idle("idle after start")];
for (let round = 1; round <= ROUNDS; round++) {
  await recording(round);
  samples.push(await idle(`after a recording (round ${round})`));
  await cameraStream();
  samples.push(await idle(`after a camera stream (round ${round})`));
  await mediaScan();
  samples.push(await idle(`after a media scan (round ${round})`));
}
client.close();

const mb = (k: number) => (k / 1024).toFixed(1);
const first = samples[0]!;
console.log(`devservices serve, virtual board, every service; each figure after ${IDLE_MS} ms idle (MB)`);
const loaded = samples[1]!; // after the first recording: GStreamer loaded
const signed = (k: number) => (k >= 0 ? "+" : "") + mb(k);
console.log(`${"".padEnd(36)} ${"RssAnon".padStart(8)} ${"vs start".padStart(9)} ${"vs 1st rec".padStart(10)} ${"threads".padStart(8)} ${"new libs".padStart(9)}`);
for (const s of samples) {
  console.log(`${s.state.padEnd(36)} ${mb(s.anon).padStart(8)} ${signed(s.anon - first.anon).padStart(9)} ${(s === first ? "" : signed(s.anon - loaded.anon)).padStart(10)} ${String(s.threads).padStart(8)} ${mb(s.libs).padStart(9)}`);
}
const last = samples[samples.length - 1]!;
console.log(`new libs: resident pages of the shared libraries mapped since start (${[...last.libNames].filter((n) => !first.libNames.has(n)).length}: GStreamer, its plugins and their libraries).`);
console.log(`GStreamer's share (the first recording's step, RssAnon): ${mb(loaded.anon - first.anon)} MB; after every later step RssAnon is within ${mb(Math.max(...samples.slice(1).map((s) => s.anon - loaded.anon)))} MB of the value after it (goal: 5).`);
p.kill();
await p.exited;
await bus.stop();
process.exit(0);
