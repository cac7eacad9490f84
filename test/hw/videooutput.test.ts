// The video output service on vkms and bochs-display through DRM/KMS: the shipped
// binary (dist/devservices serve videooutput) on a private bus with a linux board
// naming the card by driver. What the service does is read back by this process
// through its own (non-master) fd: GETPLANE for the framebuffer and CRTC, the
// plane's CRTC_* and SRC_* properties for the window, GETFB for the frame size.
// vkms (Linux 6.1) has a primary and a cursor plane, neither of them scaling and
// only the cursor positionable, with alpha and zpos properties in the guest's build
// (scripts/vboard); bochs has one primary plane without them. The service opens the card before this process does, so it is
// DRM master.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { BusClient } from "../../src/bus/client.ts";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon.ts";
import * as drm from "../../src/ffi/drm.ts";
import * as kms from "../../src/ffi/kms.ts";
import type { Json } from "../../src/core/errors.ts";
import { BINARY, eventually } from "../helpers/harness.ts";
import { guest } from "./vboard.ts";

const VO = "com.vendor.service.videooutput";
const OK = { returnValue: true };

function cardOf(driver: string): string {
  for (const n of readdirSync("/dev/dri").filter((n) => /^card\d+$/.test(n))) {
    const fd = drm.openCard(`/dev/dri/${n}`);
    try {
      if (drm.version(fd).name === driver) return `/dev/dri/${n}`;
    } finally {
      drm.close(fd);
    }
  }
  throw new Error(`no ${driver} card`);
}

interface Served {
  client: BusClient;
  call(method: string, payload?: Json): Promise<Json>;
  stop(): Promise<void>;
  log: string[];
}

/** dist/devservices serve videooutput on its own bus, with a board recipe for the card. */
async function serve(driver: string, extra: Json = {}): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), "videooutput-hw-"));
  const bus: PrivateBus = await startPrivateBus();
  const board = join(dir, "board.json");
  writeFileSync(board, JSON.stringify({
    name: `videooutput-${driver}`, backend: "linux", services: ["videooutput"],
    serviceConfig: {
      videooutput: {
        configFile: null, card: driver, ...extra,
        sinks: [
          { sink: "MAIN", plane: 0 },
          { sink: "SUB0", plane: 1, maxDownscaleSize: { width: 16, height: 16 }, maxUpscaleSize: { width: 1024, height: 768 } },
        ],
      },
    },
  }));
  mkdirSync(join(dir, "state"));
  const service: Subprocess<"ignore", "pipe", "pipe"> = spawn([BINARY, "serve", "--bus", bus.address, "--board", board, "--state-dir", join(dir, "state"),
    "--log-level", "info", "videooutput"], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const log: string[] = [];
  for (const stream of [service.stdout, service.stderr]) {
    (async () => {
      for await (const chunk of stream) log.push(...new TextDecoder().decode(chunk).split("\n").filter(Boolean));
    })();
  }
  const client = await BusClient.connect(bus.address);
  try {
    await eventually(() => client.hasOwner(VO), 45000, 50);
  } catch (e) {
    throw new Error(`the service did not come up: ${log.join("\n")}`);
  }
  return {
    client,
    log,
    call: (method, payload = {}) => client.call(VO, method, payload, { timeoutMs: 20000 }),
    async stop() {
      client.close();
      service.kill();
      await service.exited;
      await bus.stop();
    },
  };
}

/** What the kernel says a plane shows: GETPLANE and its window properties. */
function planeState(fd: number, planeId: number) {
  const p = drm.getPlane(fd, planeId);
  const props = drm.planeProperties(fd, planeId);
  const n = (k: string) => Number(BigInt.asIntN(32, props.get(k)?.value ?? -1n));
  return {
    fbId: p.fbId, crtcId: p.crtcId,
    crtc: { x: n("CRTC_X"), y: n("CRTC_Y"), width: n("CRTC_W"), height: n("CRTC_H") },
    src: { x: n("SRC_X") / 65536, y: n("SRC_Y") / 65536, width: n("SRC_W") / 65536, height: n("SRC_H") / 65536 },
    props: [...props.keys()],
  };
}

for (const commit of ["atomic", "legacy"] as const) {
  guest(`video output on vkms (${commit} plane updates)`, () => {
    let s: Served;
    let fd: number;
    let planes: number[];
    let res: drm.Resources;
    let mode: { width: number; height: number };
    let before: { fbId: number; crtcId: number }[];
    const pushes: Json[] = [];
    let sub: Awaited<ReturnType<BusClient["subscribe"]>>;

    beforeAll(async () => {
      const card = cardOf("vkms");
      s = await serve("vkms", { commit });
      fd = drm.openCard(card);
      drm.setClientCap(fd, drm.CLIENT_CAP_UNIVERSAL_PLANES, 1);
      drm.setClientCap(fd, drm.CLIENT_CAP_ATOMIC, 1);
      planes = drm.getPlaneResources(fd).sort((a, b) => a - b);
      res = drm.getResources(fd);
      const out = kms.findOutput(fd)!;
      mode = { width: out.mode.hdisplay, height: out.mode.vdisplay };
      before = planes.map((id) => drm.getPlane(fd, id)).map((p) => ({ fbId: p.fbId, crtcId: p.crtcId }));
      sub = await s.client.subscribe(VO, "getStatus", { subscribe: true }, (m) => pushes.push(m));
    }, 60000);
    afterAll(async () => {
      await sub?.cancel();
      await s?.stop();
      if (fd !== undefined) drm.close(fd);
    });

    test("the service updates planes the way it was told", () => {
      expect(s.log.some((l) => l.includes("video output display opened") && l.includes(`"commit":"${commit}"`))).toBe(true);
    });

    test("capabilities: the card's real plane count; getParam: its plane, CRTC and connector", async () => {
      expect(planes).toHaveLength(2);
      expect(await s.call("display/getOutputCapabilities")).toMatchObject({ returnValue: true, numPlanes: 2, planes: [{ sinkId: "MAIN" }, { sinkId: "SUB0" }] });
      expect(await s.call("display/getParam", { command: "NumConnector" })).toEqual({ returnValue: true, numConnector: 1 });
      expect(await s.call("display/getParam", { command: "DRMResources", sink: "SUB0" })).toEqual({
        returnValue: true, sink: "SUB0", planeId: planes[1], crtcId: res.crtcs[0], connId: res.connectors[0],
      });
    });

    test("connect: the primary plane shows a framebuffer of the mode's size over the whole CRTC", async () => {
      expect(await s.call("connect", { source: "VDEC", sink: "MAIN" })).toEqual({ returnValue: true, planeID: planes[0] });
      const p = planeState(fd, planes[0]!);
      expect(p.fbId).not.toBe(0);
      expect(p.crtcId).toBe(res.crtcs[0]!);
      expect(p.crtc).toEqual({ x: 0, y: 0, ...mode });
      expect(p.src).toEqual({ x: 0, y: 0, ...mode });
      expect(kms.getFramebuffer(fd, p.fbId)).toMatchObject({ ...mode, bpp: 32 });
      // The primary plane cannot be moved on vkms: the driver refuses, the plane is unchanged.
      expect(await s.call("display/setDisplayWindow", { sink: "MAIN", fullScreen: false, displayOutput: { x: 10, y: 10, width: 320, height: 240 } }))
        .toMatchObject({ returnValue: false, errorCode: 20 });
      expect(planeState(fd, planes[0]!).crtc).toEqual({ x: 0, y: 0, ...mode });
    });

    test("setDisplayWindow on the cursor plane: crop and position reflected by the plane; scaling refused (20) by vkms", async () => {
      expect(await s.call("connect", { source: "VDEC", sink: "SUB0" })).toEqual({ returnValue: true, planeID: planes[1] });
      const win = { sink: "SUB0", fullScreen: false, sourceInput: { x: 64, y: 32, width: 256, height: 128 }, displayOutput: { x: 100, y: 50, width: 256, height: 128 } };
      expect(await s.call("display/setDisplayWindow", win)).toEqual(OK);
      let p = planeState(fd, planes[1]!);
      expect(p.fbId).not.toBe(0);
      expect(p.crtcId).toBe(res.crtcs[0]!);
      expect(p.crtc).toEqual(win.displayOutput);
      expect(p.src).toEqual(win.sourceInput);
      const scaled = { ...win, displayOutput: { x: 100, y: 50, width: 512, height: 256 } };
      expect(await s.call("display/setDisplayWindow", scaled)).toMatchObject({ returnValue: false, errorCode: 20 });
      expect(planeState(fd, planes[1]!).crtc).toEqual(win.displayOutput);
      // setVideoData: a new framebuffer of the frame's size; the crop still fits, so it stays.
      const before = p.fbId;
      expect(await s.call("setVideoData", { sink: "SUB0", width: 400, height: 300, frameRate: 25, scanType: "progressive" })).toEqual(OK);
      p = planeState(fd, planes[1]!);
      expect(p.fbId).not.toBe(before);
      expect(kms.getFramebuffer(fd, p.fbId)).toMatchObject({ width: 400, height: 300 });
      expect(p.src).toEqual(win.sourceInput);
    });

    test("setCompositing: opacity and zOrder become the planes' alpha and zpos properties, both planes in one change", async () => {
      const prop = (id: number, name: string) => drm.planeProperties(fd, id).get(name)?.value;
      // As connected: opaque, in the sinks' order.
      expect([prop(planes[0]!, "alpha"), prop(planes[0]!, "zpos"), prop(planes[1]!, "alpha"), prop(planes[1]!, "zpos")]).toEqual([0xffffn, 0n, 0xffffn, 1n]);
      expect(await s.call("register", { context: "hw" })).toEqual(OK);
      expect(await s.call("display/setCompositing", { composeOrder: [{ sink: "MAIN", opacity: 255, zOrder: 1, context: "hw" }, { sink: "SUB0", opacity: 128, zOrder: 0, context: "hw" }] })).toEqual(OK);
      expect([prop(planes[0]!, "alpha"), prop(planes[0]!, "zpos"), prop(planes[1]!, "alpha"), prop(planes[1]!, "zpos")]).toEqual([0xffffn, 1n, 0x8080n, 0n]);
      expect(((await s.call("getStatus")).video as Json[]).map((v) => [v.sink, v.opacity, v.zOrder])).toEqual([["MAIN", 255, 1], ["SUB0", 128, 0]]);
      // A zOrder collision is refused before the planes change.
      expect(await s.call("display/setCompositing", { composeOrder: { sink: "SUB0", opacity: 0, zOrder: 1, context: "hw" } })).toMatchObject({ returnValue: false, errorCode: 4 });
      expect(prop(planes[1]!, "alpha")).toBe(0x8080n);
    });

    test("disconnect gives the planes back (off, or what they showed before); status subscribers got every change", async () => {
      expect(await s.call("disconnect", { sink: "SUB0" })).toEqual(OK);
      expect(planeState(fd, planes[1]!)).toMatchObject({ fbId: 0, crtcId: 0 });
      expect(await s.call("disconnect", { sink: "MAIN" })).toEqual(OK);
      expect(planeState(fd, planes[0]!)).toMatchObject(before[0]!);
      expect(await s.call("disconnect", { sink: "MAIN" })).toMatchObject({ returnValue: false, errorCode: 100 });
      // connect MAIN, connect SUB0, window SUB0, setVideoData SUB0, compositing, disconnect SUB0, disconnect MAIN.
      await eventually(() => pushes.length === 7, 5000);
      const connected = pushes.map((m) => (m.video as Json[]).map((v) => v.connected));
      expect(connected).toEqual([[true, false], [true, true], [true, true], [true, true], [true, true], [true, false], [false, false]]);
      expect((pushes[2]!.video as Json[])[1]).toMatchObject({ displayOutput: { x: 100, y: 50, width: 256, height: 128 } });
      expect((pushes[3]!.video as Json[])[1]).toMatchObject({ width: 400, height: 300, frameRate: 25 });
    });
  });
}

guest("video output on bochs-display", () => {
  let s: Served;
  let fd: number;
  let planes: number[];
  let mode: { width: number; height: number };
  let before: { fbId: number; crtcId: number };
  beforeAll(async () => {
    const card = cardOf("bochs-drm");
    s = await serve("bochs-drm");
    fd = drm.openCard(card);
    drm.setClientCap(fd, drm.CLIENT_CAP_UNIVERSAL_PLANES, 1);
    drm.setClientCap(fd, drm.CLIENT_CAP_ATOMIC, 1);
    planes = drm.getPlaneResources(fd).sort((a, b) => a - b);
    const out = kms.findOutput(fd)!;
    mode = { width: out.mode.hdisplay, height: out.mode.vdisplay };
    const p = drm.getPlane(fd, planes[0]!);
    before = { fbId: p.fbId, crtcId: p.crtcId };
  }, 60000);
  afterAll(async () => {
    await s?.stop();
    if (fd !== undefined) drm.close(fd);
  });

  test("one plane without alpha or zpos: capabilities say so, the sink without a plane is left out, compositing is kept in the status", async () => {
    expect(drm.planeProperties(fd, planes[0]!).has("alpha")).toBe(false);
    expect(await s.call("register", { context: "hw" })).toEqual(OK);
    expect(await s.call("display/setCompositing", { composeOrder: { sink: "MAIN", opacity: 10, zOrder: 0, context: "hw" } })).toEqual(OK);
    expect(((await s.call("getStatus")).video as Json[])).toEqual([expect.objectContaining({ sink: "MAIN", opacity: 10, zOrder: 0 })]);
    expect(await s.call("display/getOutputCapabilities")).toMatchObject({ returnValue: true, numPlanes: planes.length, planes: [{ sinkId: "MAIN" }] });
    expect(planes).toHaveLength(1);
    expect(await s.call("connect", { source: "VDEC", sink: "SUB0" })).toMatchObject({ returnValue: false, errorCode: 52 });
  });

  test("connect, a window the primary plane cannot take (20), disconnect (the plane shows what it showed before): reflected by GETPLANE", async () => {
    expect(await s.call("connect", { source: "VDEC", sink: "MAIN" })).toEqual({ returnValue: true, planeID: planes[0] });
    const p = planeState(fd, planes[0]!);
    expect(p.fbId).not.toBe(0);
    expect(p.crtc).toEqual({ x: 0, y: 0, ...mode });
    expect(kms.getFramebuffer(fd, p.fbId)).toMatchObject(mode);
    expect(await s.call("display/setDisplayWindow", { sink: "MAIN", fullScreen: false, displayOutput: { x: 0, y: 0, width: 320, height: 200 } }))
      .toMatchObject({ returnValue: false, errorCode: 20 });
    expect(await s.call("display/setDisplayWindow", { sink: "MAIN", fullScreen: true })).toEqual(OK);
    expect(await s.call("disconnect", { sink: "MAIN" })).toEqual(OK);
    const after = planeState(fd, planes[0]!);
    if (before.fbId) expect(after).toMatchObject(before);
    else expect(after.fbId).not.toBe(p.fbId); // a primary plane bochs keeps on: the black background
  });
});
