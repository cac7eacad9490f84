// CPU seconds per recorded second of the recording pipeline (the compiled binary,
// com.vendor.pipeline.record.main on a private bus) beside gst-launch-1.0 running
// the same launch description in the same run, and the ratio.
//
//   bun bench/record/run.ts [SECONDS] [WIDTH HEIGHT FPS] [ROUNDS]
//
// Both are measured over the same stretch: from the moment the pipeline is
// recording (start answered; gst-launch's file has data) to the moment end-of-stream
// is asked for, from /proc/PID/stat (utime + stime), so process start-up, plugin
// loading and finalization are left out of both. The service's figure also shows
// start to stop answered. Rounds alternate service and gst-launch.
import { spawn, which } from "bun";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BusClient } from "../../src/bus/client";
import { startPrivateBus } from "../../src/bus/daemon";
import { loadBoard } from "../../src/core/board";
import { plan, readRecipe } from "../../src/services/record/recipe";
import type { StartRequest } from "../../src/services/record/schemas";

const BINARY = join(import.meta.dir, "../../dist/devservices");
const MAIN = "com.vendor.pipeline.record.main";
const args = process.argv.slice(2).map(Number);
const seconds = args[0] || 10;
const [width, height, fps] = [args[1] || 640, args[2] || 480, args[3] || 30];
const rounds = args[4] || 2;
const TICK = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;

function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / TICK;
}
const round3 = (x: number) => Math.round(x * 1000) / 1000;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

if (!which("gst-launch-1.0")) {
  console.error("gst-launch-1.0 is not installed (scripts/setup installs gstreamer1.0-tools)");
  process.exit(1);
}
const dir = mkdtempSync(join(tmpdir(), "record-bench-"));
const request = (path: string) =>
  ({
    video: { videoSrc: "camera1", width, height, codec: "H264", fps, bitRate: 2_000_000 },
    audio: { codec: "AAC", sampleRate: 48000, channelCount: 2, bitRate: 128_000 },
    format: "MP4",
    path,
  }) as StartRequest;
// The description the service builds for this request on the virtual board.
const description = plan(request("/unused"), readRecipe(loadBoard("virtual"))).description;

const bus = await startPrivateBus();
const service = spawn([BINARY, "serve", "record", "--bus", bus.address, "--state-dir", join(dir, "state"), "--log-level", "warn"], {
  stdin: "ignore",
  stdout: "ignore",
  stderr: "inherit",
});
const client = await BusClient.connect(bus.address);

async function serviceRound(i: number) {
  const path = join(dir, `service-${i}.mp4`);
  const c0 = cpuSeconds(service.pid);
  const r = await client.call(MAIN, "start", request(path), { timeoutMs: 30000 });
  if (r.returnValue !== true) throw new Error(`start: ${JSON.stringify(r)}`);
  const c1 = cpuSeconds(service.pid), t1 = performance.now();
  await Bun.sleep(seconds * 1000);
  const c2 = cpuSeconds(service.pid), t2 = performance.now();
  const s = await client.call(MAIN, "stop", {}, { timeoutMs: 30000 });
  if (s.returnValue !== true) throw new Error(`stop: ${JSON.stringify(s)}`);
  const c3 = cpuSeconds(service.pid);
  const wall = (t2 - t1) / 1000;
  return { steady: (c2 - c1) / wall, whole: (c3 - c0) / wall };
}

async function gstRound(i: number) {
  const path = join(dir, `gst-${i}.mp4`);
  const gst = spawn(["gst-launch-1.0", "-q", "-e", ...`${description.replace("fdsink name=sink", `filesink name=sink buffer-mode=unbuffered location=${path}`)}`.split(" ")], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "inherit",
  });
  const end = Date.now() + 20000;
  for (;;) {
    let size = 0;
    try {
      size = statSync(path).size;
    } catch {}
    if (size > 0) break;
    if (Date.now() > end) throw new Error("gst-launch-1.0 wrote nothing in 20 s");
    await Bun.sleep(5);
  }
  const c1 = cpuSeconds(gst.pid), t1 = performance.now();
  await Bun.sleep(seconds * 1000);
  const c2 = cpuSeconds(gst.pid), t2 = performance.now();
  gst.kill("SIGINT");
  await gst.exited;
  return { steady: (c2 - c1) / ((t2 - t1) / 1000) };
}

try {
  const deadline = Date.now() + 20000;
  while (!(await client.hasOwner(MAIN))) {
    if (Date.now() > deadline) throw new Error("the service did not take its name in 20 s");
    await Bun.sleep(50);
  }
  // The service process's own cost when not recording (Bun, the bus, the event source).
  const i0 = cpuSeconds(service.pid), it0 = performance.now();
  await Bun.sleep(3000);
  const idle = (cpuSeconds(service.pid) - i0) / ((performance.now() - it0) / 1000);
  const svc: number[] = [], whole: number[] = [], ref: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const s = await serviceRound(i);
    svc.push(s.steady);
    whole.push(s.whole);
    ref.push((await gstRound(i)).steady);
  }
  const common = { seconds, format: `${width}x${height} @ ${fps} H264 2 Mbit/s + AAC 48 kHz stereo, fragmented MP4`, rounds };
  console.log(JSON.stringify({ ...common, what: "devservices record (compiled binary)", cpuSecondsPerRecordedSecond: round3(median(svc)), startToStopAnswered: round3(median(whole)), idleCpuSecondsPerSecond: round3(idle) }));
  console.log(JSON.stringify({ ...common, what: "gst-launch-1.0, the same description", cpuSecondsPerRecordedSecond: round3(median(ref)) }));
  console.log(JSON.stringify({ serviceOverGstLaunch: Math.round((median(svc) / median(ref)) * 1000) / 1000, perRound: svc.map((s, i) => round3(s / ref[i]!)) }));
} finally {
  client.close();
  service.kill();
  await service.exited;
  await bus.stop();
  rmSync(dir, { recursive: true, force: true });
}
