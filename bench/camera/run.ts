// Frames delivered to a shared-memory client, and the service's CPU per frame:
// dist/devservices serve camera on a private bus, one camera streamed at a size
// and rate, a reader in this process (reader.ts, woken by the eventfd) counting
// frames for a number of seconds; CPU from /proc/PID/stat (utime + stime) of the
// service. With gst-launch-1.0 on the machine (and a V4L2 device), the same numbers
// for `gst-launch-1.0 v4l2src ! shmsink` on the same device follow; with --linux, a
// reference always follows: the device captured in this process by the FFI alone.
//   bun bench/camera/run.ts [--linux DEVICE_DIR] [WIDTH HEIGHT FPS SECONDS]
// Without --linux the virtual board's camera is used (its CPU includes drawing the
// test pattern, so it is no measure of the V4L2 path).
import { spawn, which } from "bun";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BusClient } from "../../src/bus/client";
import { startPrivateBus } from "../../src/bus/daemon";
import { closeFd } from "../../src/ffi/libc";
import { FrameReader } from "../../src/services/camera/reader";

const CAMERA = "com.vendor.service.camera2";
let serviceMsPerFrame: number | undefined;
const BINARY = join(import.meta.dir, "../../dist/devservices");
const args = process.argv.slice(2);
const li = args.indexOf("--linux");
const devDir = li >= 0 ? args.splice(li, 2)[1]! : undefined;
const [width, height, fps, seconds] = [Number(args[0] ?? 1280), Number(args[1] ?? 720), Number(args[2] ?? 30), Number(args[3] ?? 10)];

const TICK = 100; // USER_HZ
function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / TICK; // utime, stime (fields 14, 15)
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
  await client.call(CAMERA, "startCamera", { handle });
  const buf = await client.callForFd(CAMERA, "getFd", { handle, type: "buffer" });
  const ev = await client.callForFd(CAMERA, "getFd", { handle, type: "event" });
  const reader = FrameReader.fromFd(buf.fd!);
  closeFd(buf.fd!);
  await Bun.sleep(1000); // settle
  reader.skipToLatest();
  let frames = 0, bytes = 0;
  const cpu0 = cpuSeconds(service.pid), t0 = performance.now();
  const w = reader.watch(ev.fd!, (f) => {
    frames++;
    bytes += f.data.length;
  });
  await Bun.sleep(seconds * 1000);
  const cpu = cpuSeconds(service.pid) - cpu0, wall = (performance.now() - t0) / 1000;
  w.close();
  reader.close();
  closeFd(ev.fd!);
  await client.call(CAMERA, "stopCamera", { handle });
  serviceMsPerFrame = frames ? (cpu * 1000) / frames : undefined;
  console.log(JSON.stringify({
    source: devDir ? `V4L2 (${devDir})` : "virtual camera",
    format: `${width}x${height} YUYV @ ${fps}`,
    seconds: Math.round(wall * 10) / 10,
    fps: Math.round((frames / wall) * 10) / 10,
    lost: reader.lost,
    mbPerSecond: Math.round(bytes / wall / 1e5) / 10,
    serviceCpuPercent: Math.round((cpu / wall) * 1000) / 10,
    serviceCpuMsPerFrame: frames ? Math.round((cpu / frames) * 1e4) / 10 : null,
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
  const node = (await import("node:fs")).readdirSync(devDir).filter((n) => /^video\d+$/.test(n)).sort()[0]!;
  const fd = v4l2.openDevice(join(devDir, node));
  v4l2.setFormat(fd, { width, height, pixelformat: v4l2.fourcc("YUYV") });
  v4l2.setFrameRate(fd, fps);
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
  const node = (await import("node:fs")).readdirSync(devDir).find((n) => /^video\d+$/.test(n));
  const sock = join(dir, "gst.sock");
  const gst = spawn(["gst-launch-1.0", "-q", "v4l2src", `device=${join(devDir, node!)}`, "!",
    `video/x-raw,format=YUY2,width=${width},height=${height},framerate=${fps}/1`, "!", "shmsink", `socket-path=${sock}`,
    "wait-for-connection=false", `shm-size=${width * height * 2 * 16}`], { stdout: "ignore", stderr: "inherit" });
  await Bun.sleep(1000);
  const cpu0 = cpuSeconds(gst.pid);
  await Bun.sleep(seconds * 1000);
  const cpu = cpuSeconds(gst.pid) - cpu0;
  gst.kill();
  await gst.exited;
  const gstMs = (cpu * 1000) / (seconds * fps);
  console.log(JSON.stringify({
    source: "gst-launch-1.0 v4l2src ! shmsink", format: `${width}x${height} YUY2 @ ${fps}`, gstCpuPercent: Math.round((cpu / seconds) * 1000) / 10,
    gstCpuMsPerFrame: Math.round(gstMs * 10) / 10, serviceOverGstreamer: serviceMsPerFrame ? Math.round((serviceMsPerFrame / gstMs) * 100) / 100 : null,
  }));
} else if (devDir) {
  console.log(JSON.stringify({ gstreamer: "gst-launch-1.0 is not installed here: no comparison" }));
}
await bus.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
