// The camera service against vivid in the guest: the shipped binary
// (dist/devservices serve camera2) on a private bus with a board recipe selecting the
// linux backend; list, info, open (44), format and every control vivid offers set
// and read back, streaming into POSIX and System V shared memory read through the
// reader library (in this process and another), capture whose JPEGs decode.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { BusClient } from "../../src/bus/client.ts";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon.ts";
import { closeFd } from "../../src/ffi/libc.ts";
import * as tj from "../../src/ffi/turbojpeg.ts";
import * as drm from "../../src/ffi/drm.ts";
import * as kms from "../../src/ffi/kms.ts";
import { FrameReader } from "../../src/clients/camera/reader.ts";
import { BINARY, eventually, spawnScript } from "../helpers/harness.ts";
import { guest } from "./vboard.ts";

const CAMERA = "com.vendor.service.camera2";

/** The vkms card's node (a virtual display with one connected connector). */
function vkmsCard(): string {
  for (const n of readdirSync("/dev/dri").filter((n) => /^card\d+$/.test(n))) {
    const fd = drm.openCard(`/dev/dri/${n}`);
    try {
      if (drm.version(fd).name === "vkms") return `/dev/dri/${n}`;
    } finally {
      drm.close(fd);
    }
  }
  throw new Error("no vkms card");
}
const row = (errorCode: number, errorText: string) => ({ returnValue: false, errorCode, errorText });

guest("camera service on vivid", () => {
  let bus: PrivateBus;
  let service: Subprocess;
  let client: BusClient;
  let dir: string;
  let h = 0;
  let info: any;
  const call = (method: string, payload: Record<string, unknown> = {}) => client.call(CAMERA, method, payload as any, { timeoutMs: 30000 });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "camera-hw-"));
    bus = await startPrivateBus();
    const board = join(dir, "board.json");
    writeFileSync(board, JSON.stringify({
      name: "camera-guest", backend: "linux", services: ["camera2"],
      serviceConfig: { camera2: { devDir: "/dev", frameTimeoutMs: 20000, ringSlots: 16, displays: { screen0: { card: vkmsCard() } } } },
    }));
    mkdirSync(join(dir, "state"));
    mkdirSync(join(dir, "pictures"));
    service = spawn([BINARY, "serve", "--bus", bus.address, "--board", board, "--state-dir", join(dir, "state"), "camera2"], {
      stdout: "ignore", stderr: "inherit",
    });
    client = await BusClient.connect(bus.address);
    await eventually(() => client.hasOwner(CAMERA), 30000, 50);
  }, 60000);

  afterAll(async () => {
    client?.close();
    service?.kill();
    await service?.exited;
    await bus?.stop();
  });

  test("getCameraList names vivid's capture node; getInfo has its formats and sizes", async () => {
    expect(await call("getCameraList")).toEqual({ returnValue: true, deviceList: [{ id: "camera1" }] });
    const r = await call("getInfo", { id: "camera1" });
    expect(r.returnValue).toBe(true);
    info = r.info;
    expect(info).toMatchObject({ type: "camera", builtin: true, supported: true });
    expect(info.name).toContain("vivid");
    expect(info.resolution.YUV.length).toBeGreaterThan(0);
    for (const s of info.resolution.YUV) expect(s).toMatch(/^\d+,\d+,\d+(\.\d+)?$/);
    expect(info.resolution.YUV.some((s: string) => s.startsWith("640,480,"))).toBe(true);
    expect(await call("getInfo", { id: "camera2" })).toEqual(row(13, "There is no device"));
  });

  test("open: one primary (44), the spec's default format", async () => {
    const r = await call("open", { id: "camera1" });
    expect(r.returnValue).toBe(true);
    h = r.handle as number;
    const other = await BusClient.connect(bus.address);
    expect(await other.call(CAMERA, "open", { id: "camera1" })).toEqual(row(44, "Already another device opened as primary"));
    other.close();
    const f = await call("getFormat", { id: "camera1" });
    expect(f.params).toMatchObject({ width: 640, height: 480, format: "YUV" });
  });

  test("setFormat and read back: every size and rate getInfo lists up to 1280x720 is taken", async () => {
    const sizes = (info.resolution.YUV as string[]).map((s) => s.split(",").map(Number) as [number, number, number]).filter(([w]) => w <= 1280);
    expect(sizes.length).toBeGreaterThan(0);
    for (const [width, height, fps] of sizes) {
      const params = { width, height, format: "YUV", fps };
      expect([params, await call("setFormat", { handle: h, params })]).toEqual([params, { returnValue: true }]);
      const got = (await call("getFormat", { id: "camera1" })).params as any;
      expect(got).toMatchObject({ width, height, format: "YUV" });
      expect(Math.abs(got.fps - fps)).toBeLessThan(0.5);
    }
    expect((await call("setFormat", { handle: h, params: { width: 641, height: 479, format: "YUV", fps: 30 } })).errorCode).toBe(30);
    const at640 = sizes.find(([w, hh]) => w === 640 && hh === 480)!;
    expect(await call("setFormat", { handle: h, params: { width: 640, height: 480, format: "YUV", fps: at640[2] } })).toEqual({ returnValue: true });
  });

  test("every property vivid offers is set and read back, pushed to subscribers", async () => {
    const all = (await call("getProperties", { id: "camera1" })).params as Record<string, { min: number; max: number; step: number; default: number; value: number }>;
    const names = Object.keys(all);
    expect(names).toEqual(expect.arrayContaining(["brightness", "contrast", "saturation", "hue"]));
    const pushed: any[] = [];
    const sub = await client.subscribe(CAMERA, "getProperties", { id: "camera1" }, (m) => pushed.push(m));
    for (const name of names) {
      const p = all[name]!;
      const target = p.value !== p.max ? p.max : p.min;
      expect([name, await call("setProperties", { handle: h, params: { [name]: { value: target } } })]).toEqual([name, { returnValue: true }]);
      const back = (await call("getProperties", { id: "camera1", params: [name] })).params as any;
      expect([name, back[name].value]).toEqual([name, target]);
    }
    await eventually(() => pushed.length === names.length, 5000);
    expect(pushed[0]).toMatchObject({ id: "camera1", params: { [names[0]!]: { value: expect.any(Number) } } });
    await sub.cancel();
    for (const name of names) await call("setProperties", { handle: h, params: { [name]: { value: all[name]!.default } } });
    const b = all.brightness!;
    expect((await call("setProperties", { handle: h, params: { brightness: { value: b.max + 1 } } })).errorCode).toBe(22);
  });

  test("POSIX shared memory: frames from DQBUF in the ring, read here and in another process", async () => {
    expect(await call("startCamera", { handle: h })).toEqual({ returnValue: true, type: "posixshm" });
    const { fd } = await client.callForFd(CAMERA, "getFd", { handle: h, type: "buffer" });
    const ev = await client.callForFd(CAMERA, "getFd", { handle: h, type: "event" });
    const reader = FrameReader.fromFd(fd!);
    closeFd(fd!);
    expect(reader.info).toMatchObject({ width: 640, height: 480, fourcc: "YUYV" });
    reader.skipToLatest();
    const frames = await new Promise<any[]>((resolve) => {
      const got: any[] = [];
      reader.watch(ev.fd!, (f) => {
        got.push(f);
        if (got.length === 10) resolve(got);
      });
    });
    reader.close();
    closeFd(ev.fd!);
    expect(reader.lost).toBe(0);
    for (let i = 1; i < frames.length; i++) {
      expect(frames[i].frame).toBe(frames[i - 1].frame + 1);
      expect(frames[i].deviceSequence).toBeGreaterThan(frames[i - 1].deviceSequence);
      expect(frames[i].timestampUs).toBeGreaterThan(frames[i - 1].timestampUs);
    }
    for (const f of frames) expect(f.data.length).toBe(640 * 480 * 2);
    expect(frames.at(-1)!.data.some((b: number) => b !== 0)).toBe(true);

    const other = spawnScript("test/fixtures/camera-reader.ts", ["camera1", "posix", "10"], { DEVSERVICES_BUS: bus.address });
    const line = await other.waitFor((l) => l.startsWith("FRAMES") || l.startsWith("FAILED"), 60000);
    expect(line.startsWith("FRAMES")).toBe(true);
    const seen = JSON.parse(line.slice(7));
    expect(seen.lost).toBe(0);
    expect(seen.sizes).toEqual(Array(10).fill(640 * 480 * 2));
    for (let i = 1; i < 10; i++) expect(seen.frames[i]).toBe(seen.frames[i - 1] + 1);
    await other.proc.exited;
  }, 120000);

  test("capture while streaming: two JPEGs that decode at the stream's size", async () => {
    const r = await call("capture", { handle: h, nimage: 2, path: join(dir, "pictures") });
    expect(r.returnValue).toBe(true);
    const paths = r.path as string[];
    expect(paths.length).toBe(2);
    for (const p of paths) {
      expect(p).toMatch(/Picture\d{8}-\d{6}(-\d+)?\.jpg$/);
      const img = tj.decodeGray(readFileSync(p));
      expect([img.width, img.height]).toEqual([640, 480]);
    }
    expect(await call("stopCamera", { handle: h })).toEqual({ returnValue: true });
  }, 120000);

  test("System V shared memory by key", async () => {
    const r = await call("startCamera", { handle: h, params: { type: "sysvshm" } });
    const key = r.key as number; // read before toMatchObject, which puts its matchers into the object it checks
    expect(r).toMatchObject({ returnValue: true, type: "sysvshm", key: expect.any(Number) });
    const other = spawnScript("test/fixtures/camera-reader.ts", ["camera1", `sysv:${key}`, "10"], { DEVSERVICES_BUS: bus.address });
    const line = await other.waitFor((l) => l.startsWith("FRAMES") || l.startsWith("FAILED"), 60000);
    expect(line.startsWith("FRAMES")).toBe(true);
    const seen = JSON.parse(line.slice(7));
    expect(seen.lost).toBe(0);
    expect(seen.info).toMatchObject({ width: 640, height: 480, fourcc: "YUYV" });
    await other.proc.exited;
    expect(await call("stopCamera", { handle: h })).toEqual({ returnValue: true });
  }, 120000);

  test("preview on vkms: the camera's frames on the display's primary plane, the CRTC as it was after stopPreview", async () => {
    expect(await call("startPreview", { handle: h, windowId: "nowhere" })).toEqual(row(106, "Invalid windowId"));
    // The first opener of a card is its DRM master, which mode setting needs: look, close, let the service open it.
    let fd = drm.openCard(vkmsCard());
    const out = kms.findOutput(fd)!;
    const before = drm.getCrtc(fd, out.crtcId).fbId; // the console's framebuffer, or 0
    drm.close(fd);
    expect(await call("startPreview", { handle: h, windowId: "screen0" })).toEqual({ returnValue: true });
    fd = drm.openCard(vkmsCard());
    try {
      const crtc = drm.getCrtc(fd, out.crtcId);
      expect(crtc.fbId).toBeGreaterThan(0);
      expect(crtc.fbId).not.toBe(before);
      expect(crtc.mode).toMatchObject({ hdisplay: out.mode.hdisplay, vdisplay: out.mode.vdisplay });
      // Read the framebuffer back (root may map another client's buffer): vivid's colour bars are drawn.
      const fb = kms.getFramebuffer(fd, crtc.fbId);
      expect(fb).toMatchObject({ width: out.mode.hdisplay, height: out.mode.vdisplay, bpp: 32 });
      await Bun.sleep(1500);
      const map = kms.mapDumb(fd, fb.handle, fb.pitch * fb.height);
      const px = new Uint32Array(map.buffer.buffer, map.buffer.byteOffset, map.buffer.byteLength >> 2);
      const at = (x: number, y: number) => px[y * (fb.pitch >> 2) + x]!;
      const rgb = (v: number) => [(v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff];
      // Inside the 640x480 frame: not black; the first bar (white or light grey) bright in every channel.
      expect(rgb(at(20, 240)).every((c) => c > 120)).toBe(true);
      // Outside it: the black the framebuffer started with.
      if (fb.width > 700) expect(at(700, 240) & 0xffffff).toBe(0);
      map.unmap();
      expect(await call("capture", { handle: h, path: join(dir, "pictures") })).toMatchObject({ returnValue: true });
      expect(await call("stopCamera", { handle: h })).toEqual(row(200, "Invalid state"));
      expect(await call("stopPreview", { handle: h })).toEqual({ returnValue: true });
      expect(drm.getCrtc(fd, out.crtcId).fbId).toBe(before);
    } finally {
      drm.close(fd);
    }
  }, 120000);

  test("a SIGKILLed holder's camera is released", async () => {
    expect(await call("close", { handle: h })).toEqual({ returnValue: true });
    const holder = spawnScript("test/fixtures/camera-holder.ts", ["camera1"], { DEVSERVICES_BUS: bus.address });
    expect(await holder.waitFor("STARTED", 60000)).toContain('"returnValue":true');
    expect(await call("open", { id: "camera1" })).toEqual(row(44, "Already another device opened as primary"));
    await holder.kill("SIGKILL");
    const r = (await eventually(async () => {
      const o = await call("open", { id: "camera1" });
      return o.returnValue === true ? o : undefined;
    }, 20000, 100))!;
    expect(await call("startCamera", { handle: r.handle as number })).toMatchObject({ returnValue: true });
    expect(await call("stopCamera", { handle: r.handle as number })).toEqual({ returnValue: true });
    expect(await call("close", { handle: r.handle as number })).toEqual({ returnValue: true });
  }, 120000);

  test("hotplug: vivid unloaded and loaded again is noticed within a second, and gets camera1 again", async () => {
    const lists: any[] = [];
    const sub = await client.subscribe(CAMERA, "getCameraList", {}, (m) => lists.push(m));
    expect(sub.first.deviceList).toEqual([{ id: "camera1" }]);
    const run = (cmd: string[]) => {
      const r = Bun.spawnSync(cmd, { stderr: "pipe" });
      if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")}: ${r.stderr.toString()}`);
    };
    let t0 = performance.now();
    // The module can be busy for a moment after the last test closed its node (the
    // guest's udev probes a node that was open for writing once it is closed): retried.
    for (let i = 0; ; i++) {
      const r = Bun.spawnSync(["rmmod", "vivid"], { stderr: "pipe" });
      if (r.exitCode === 0) break;
      if (i >= 50 || !/temporarily unavailable|in use/i.test(r.stderr.toString())) throw new Error(`rmmod vivid: ${r.stderr.toString()}`);
      await Bun.sleep(100);
    }
    t0 = performance.now();
    try {
      await eventually(() => lists.length >= 1, 10000, 10);
      // Within a second of the node going, with slack for an emulated machine.
      expect(performance.now() - t0).toBeLessThan(3000);
      expect(lists[0]).toEqual({ returnValue: true, deviceList: [] });
    } finally {
      t0 = performance.now();
      run(["modprobe", "vivid", "n_devs=1", "node_types=0x1"]);
    }
    await eventually(() => lists.length >= 2, 10000, 10);
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(lists[1]).toEqual({ returnValue: true, deviceList: [{ id: "camera1" }] });
    await sub.cancel();
  }, 60000);
});
