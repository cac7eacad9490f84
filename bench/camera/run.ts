// Frames delivered to a shared-memory client, and the service's CPU per frame:
// dist/devservices serve camera on a private bus, one camera streamed at a size
// and rate, a reader in this process (reader.ts, woken by the eventfd) counting
// frames for a number of seconds; CPU from /proc/PID/stat (utime + stime) of the
// service. With gst-launch-1.0 on the machine (and a V4L2 device), the same numbers
// for `gst-launch-1.0 v4l2src ! shmsink` on the same device follow; with --linux, a
// reference always follows: the device captured in this process by the FFI alone.
//   bun bench/camera/run.ts [--linux DEVICE_DIR [--hdmi]] [WIDTH HEIGHT FPS SECONDS]
// Without --linux the virtual board's camera is used (its CPU includes drawing the
// test pattern, so it is no measure of the V4L2 path). With --hdmi the device is first
// put on its HDMI input with the DV timings of WIDTH x HEIGHT at FPS (hdmi-input.c,
// built by `bun bench/camera/run.ts --build` on the host): vivid's webcam input offers
// 1920x1080 at 5 fps at most. The service's idle CPU (camera open, not streaming) is
// printed too: at a low frame rate it is a visible share of the CPU per frame.
import { $, spawn, which } from "bun";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { BusClient } from "../../src/bus/client";
import { startPrivateBus } from "../../src/bus/daemon";
import { closeFd } from "../../src/ffi/libc";
import { FrameReader } from "../../src/clients/camera/reader";

const CAMERA = "com.vendor.service.camera2";
let serviceMsPerFrame: number | undefined;
const BINARY = join(import.meta.dir, "../../dist/devservices");
const HDMI_INPUT = resolve(import.meta.dir, "../../dist/bench/hdmi-input");
if (process.argv[2] === "--build") {
  mkdirSync(resolve(HDMI_INPUT, ".."), { recursive: true });
  await $`gcc -O2 -static -o ${HDMI_INPUT} ${join(import.meta.dir, "hdmi-input.c")} -lm`;
  console.log(`built ${HDMI_INPUT}`);
  process.exit(0);
}
const args = process.argv.slice(2);
const li = args.indexOf("--linux");
const devDir = li >= 0 ? args.splice(li, 2)[1]! : undefined;
const hi = args.indexOf("--hdmi");
const hdmi = hi >= 0 && args.splice(hi, 1).length > 0;
if (hdmi && !devDir) throw new Error("--hdmi needs --linux DEVICE_DIR");
const [width, height, fps, seconds] = [Number(args[0] ?? 1280), Number(args[1] ?? 720), Number(args[2] ?? 30), Number(args[3] ?? 10)];

const TICK = 100; // USER_HZ
function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / TICK; // utime, stime (fields 14, 15)
}

const videoNode = devDir ? join(devDir, readdirSync(devDir).filter((n) => /^video\d+$/.test(n)).sort()[0]!) : undefined;
if (hdmi) {
  if (!existsSync(HDMI_INPUT)) throw new Error(`no ${HDMI_INPUT}: run bun bench/camera/run.ts --build on the host first`);
  console.log(JSON.stringify({ hdmiInput: JSON.parse(await $`${HDMI_INPUT} ${videoNode!} ${width} ${height} ${fps}`.text()) }));
}

const dir = mkdtempSync(join(tmpdir(), "camera-bench-"));
const bus = await startPrivateBus();
const board = join(dir, "board.json");
writeFileSync(board, JSON.stringify({
  name: "camera-bench", backend: devDir ? "linux" : "virtual", services: ["camera2"],
  serviceConfig: { camera2: devDir ? { devDir, ringSlots: 16 } : { ringSlots: 16 } },
}));
const service = spawn([BINARY, "serve", "--bus", bus.address, "--board", board, "--state-dir", dir, "--log-level", "warn", "camera2"], {
  stdout: "ignore", stderr: "inherit",
});
const client = await BusClient.connect(bus.address);
for (let i = 0; !(await client.hasOwner(CAMERA)); i++) {
  if (i > 400) throw new Error("the camera service did not start");
  await Bun.sleep(25);
}
try {
  const { handle } = await client.call(CAMERA, "open", { id: "camera1" });
  const set = await client.call(CAMERA, "setFormat", { handle, params: { width, height, format: "YUV", fps } });
  if (set.returnValue !== true) {
    const info = await client.call(CAMERA, "getInfo", { id: "camera1" });
    throw new Error(`setFormat ${width}x${height}@${fps}: ${JSON.stringify(set)}; the camera offers ${JSON.stringify((info.info as any)?.resolution)}`);
  }
  // Idle: the camera open, nothing streaming.
  const idle0 = cpuSeconds(service.pid), ti = performance.now();
  await Bun.sleep(5000);
  const idleMsPerSecond = ((cpuSeconds(service.pid) - idle0) * 1000) / ((performance.now() - ti) / 1000);
  await client.call(CAMERA, "startCamera", { handle });
  const buf = await client.callForFd(CAMERA, "getFd", { handle, type: "buffer" });
  const ev = await client.callForFd(CAMERA, "getFd", { handle, type: "event" });
  const reader = FrameReader.fromFd(buf.fd!);
  closeFd(buf.fd!);
  await Bun.sleep(1000); // settle
  reader.skipToLatest();
  let frames = 0, bytes = 0;
  // The service's count is the ring's: frames it wrote into shared memory. A reader
  // slower than the camera (this one, under emulation) skips frames; those are `lost`
  // to it, not to the service.
  const cpu0 = cpuSeconds(service.pid), t0 = performance.now(), w0 = reader.writeIndex;
  const w = reader.watch(ev.fd!, (f) => {
    frames++;
    bytes += f.data.length;
  });
  await Bun.sleep(seconds * 1000);
  const cpu = cpuSeconds(service.pid) - cpu0, wall = (performance.now() - t0) / 1000, written = reader.writeIndex - w0;
  w.close();
  reader.close();
  closeFd(ev.fd!);
  await client.call(CAMERA, "stopCamera", { handle });
  serviceMsPerFrame = written ? (cpu * 1000) / written : undefined;
  console.log(JSON.stringify({
    source: devDir ? `V4L2 (${devDir})` : "virtual camera",
    format: `${width}x${height} YUYV @ ${fps}`,
    seconds: Math.round(wall * 10) / 10,
    fps: Math.round((written / wall) * 10) / 10,
    readerFps: Math.round((frames / wall) * 10) / 10,
    lost: reader.lost,
    mbPerSecond: Math.round(bytes / wall / 1e5) / 10,
    serviceCpuPercent: Math.round((cpu / wall) * 1000) / 10,
    serviceCpuMsPerFrame: serviceMsPerFrame ? Math.round(serviceMsPerFrame * 10) / 10 : null,
    serviceIdleCpuMsPerSecond: Math.round(idleMsPerSecond * 10) / 10,
  }));
} finally {
  client.close();
  service.kill();
  await service.exited;
}

let reference: number | undefined;
if (devDir) {
  // Reference: the same device captured in this process with the FFI alone (MmapCapture copies each frame once).
  const v4l2 = await import("../../src/ffi/v4l2");
  const fd = v4l2.openDevice(videoNode!);
  v4l2.setFormat(fd, { width, height, pixelformat: v4l2.fourcc("YUYV") });
  try {
    v4l2.setFrameRate(fd, fps);
  } catch {
    // An HDMI input's rate is its timings'.
  }
  const cap = new v4l2.MmapCapture(fd, 4);
  let frames = 0;
  await Bun.sleep(1000);
  const u0 = process.cpuUsage(), t0 = performance.now();
  const w = v4l2.watchFrames(cap, () => frames++);
  await Bun.sleep(seconds * 1000);
  const u = process.cpuUsage(u0), wall = (performance.now() - t0) / 1000;
  w.close();
  cap.stop();
  v4l2.close(fd);
  reference = (u.user + u.system) / 1000 / frames;
  console.log(JSON.stringify({
    source: "reference: MmapCapture in one process (one copy a frame)",
    fps: Math.round((frames / wall) * 10) / 10,
    cpuMsPerFrame: Math.round(reference * 10) / 10,
    serviceOverReference: serviceMsPerFrame && reference ? Math.round((serviceMsPerFrame / reference) * 100) / 100 : null,
  }));
}

if (devDir && which("gst-launch-1.0")) {
  const sock = join(dir, "gst.sock");
  const gst = spawn(["gst-launch-1.0", "-q", "v4l2src", `device=${videoNode!}`, "!",
    `video/x-raw,format=YUY2,width=${width},height=${height},framerate=${fps}/1`, "!", "shmsink", `socket-path=${sock}`,
    "wait-for-connection=false", `shm-size=${width * height * 2 * 16}`], { stdout: "ignore", stderr: "inherit" });
  await Bun.sleep(1000);
  const cpu0 = cpuSeconds(gst.pid), t0 = performance.now();
  await Bun.sleep(seconds * 1000);
  const cpu = cpuSeconds(gst.pid) - cpu0, wall = (performance.now() - t0) / 1000;
  gst.kill();
  await gst.exited;
  // shmsink without a client counts nothing, so GStreamer is taken to capture at the
  // full rate (the service does on the same device): if it captured fewer frames, its
  // CPU per frame is higher than this.
  const gstMs = (cpu * 1000) / (wall * fps);
  console.log(JSON.stringify({
    source: "gst-launch-1.0 v4l2src ! shmsink", format: `${width}x${height} YUY2 @ ${fps}`, gstCpuPercent: Math.round((cpu / wall) * 1000) / 10,
    gstCpuMsPerFrame: Math.round(gstMs * 10) / 10, serviceOverGstreamer: serviceMsPerFrame ? Math.round((serviceMsPerFrame / gstMs) * 100) / 100 : null,
  }));
} else if (devDir) {
  console.log(JSON.stringify({ gstreamer: "gst-launch-1.0 is not installed here: no comparison" }));
}
await bus.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
