// Every method of the video output service on the virtual display, every error row
// it can reach there (the display driver's refusals, 20, are tested on vkms and
// bochs in test/hw/videooutput.test.ts), the spec's limits and the signage context
// rules.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { eventually, staysTrue } from "../helpers/harness";
import type { Json } from "../../src/core/errors";
import { OK, row, voEnv, VO, type VoEnv } from "./env";

let v: VoEnv;
beforeAll(async () => {
  v = await voEnv({
    sinks: [
      { sink: "MAIN", plane: 0 },
      { sink: "SUB0", plane: 1, maxDownscaleSize: { width: 160, height: 90 }, maxUpscaleSize: { width: 1920, height: 1080 } },
    ],
  });
});
afterAll(() => v.stop());
/** Each test starts from nothing connected and no context registered. */
beforeEach(async () => {
  for (const [sink, s] of Object.entries(await v.status())) if (s.connected) expect(await v.call("disconnect", { sink })).toEqual(OK);
  for (const c of ["A", "B"]) await v.call("unregister", { context: c });
});

const FULL = { x: 0, y: 0, width: 1920, height: 1080 };
const ZERO = { x: 0, y: 0, width: 0, height: 0 };
const invalid = (what: string) => ({ returnValue: false, errorCode: 4, errorMessage: `Invalid parameters: ${what}` });

describe("capabilities and parameters", () => {
  test("getOutputCapabilities: the display's planes and each sink's scaling sizes", async () => {
    expect(await v.call("display/getOutputCapabilities")).toEqual({
      returnValue: true,
      numPlanes: 2,
      planes: [
        { sinkId: "MAIN", maxDownscaleSize: { width: 64, height: 36 }, maxUpscaleSize: { width: 3840, height: 2160 } },
        { sinkId: "SUB0", maxDownscaleSize: { width: 160, height: 90 }, maxUpscaleSize: { width: 1920, height: 1080 } },
      ],
    });
  });

  test("getParam: NumConnector, DRMResources per sink; 4 for a missing or unknown sink, 10 for another command, 3 without command", async () => {
    expect(await v.call("display/getParam", { command: "NumConnector" })).toEqual({ returnValue: true, numConnector: 1 });
    expect(await v.call("display/getParam", { command: "DRMResources", sink: "MAIN" })).toEqual({ returnValue: true, sink: "MAIN", planeId: 31, crtcId: 40, connId: 50 });
    expect(await v.call("display/getParam", { command: "DRMResources", sink: "SUB0" })).toMatchObject({ sink: "SUB0", planeId: 32 });
    expect(await v.call("display/getParam", { command: "DRMResources" })).toMatchObject(row(4));
    expect(await v.call("display/getParam", { command: "DRMResources", sink: "SUB3" })).toMatchObject(row(4));
    expect(await v.call("display/getParam", { command: "Gamma" })).toEqual({ returnValue: false, errorCode: 10, errorMessage: "Not implemented: command Gamma (NumConnector, DRMResources)" });
    expect(await v.call("display/getParam", {})).toEqual({ returnValue: false, errorCode: 3, errorMessage: "Could not validate json message against schema" });
    expect(await v.call("display/getParam", "{not json")).toMatchObject(row(3));
  });
});

describe("connect and disconnect", () => {
  test("connect gives the sink's plane (planeID); the status says nothing is set yet (fullScreen false, zero rectangles, 0x0) until setVideoData and setDisplayWindow; disconnect turns it off", async () => {
    expect(await v.call("connect", { source: "VDEC", sourcePort: 1, sink: "MAIN", appId: "com.example.player" })).toEqual({ returnValue: true, planeID: 31 });
    const s = (await v.status()).MAIN!;
    expect(s).toEqual({
      connected: true, connectedSource: "VDEC", connectedSourcePort: 1, contentType: "unknown", displayOutput: ZERO, frameRate: 0,
      fullScreen: false, height: 0, width: 0, muted: false, opacity: 255, scanType: "unknown", sink: "MAIN", sourceInput: ZERO, zOrder: 0,
    });
    expect((await v.status()).SUB0!.connected).toBe(false);
    expect(await v.call("disconnect", { sink: "MAIN" })).toEqual(OK);
    expect(await v.status()).toMatchObject({ MAIN: { connected: false, connectedSource: null, width: 0, height: 0 } });
  });

  test("connect: 53 on a connected sink, 52 for an unknown sink, -1 without source or sink, 65 beyond a limit; disconnect: 100 on a sink not connected, 4 unknown, 3 without sink", async () => {
    expect(await v.call("connect", { source: "VDEC", sink: "SUB0" })).toEqual({ returnValue: true, planeID: 32 });
    expect(await v.call("connect", { source: "VDEC", sink: "SUB0" })).toEqual({ returnValue: false, errorCode: 53, errorMessage: "Sink already connected: SUB0" });
    expect(await v.call("connect", { source: "VDEC", sink: "SUB9" })).toEqual({ returnValue: false, errorCode: 52, errorMessage: "Unknown sink: SUB9 (sinks: MAIN, SUB0)" });
    expect(await v.call("disconnect", { sink: "MAIN" })).toEqual({ returnValue: false, errorCode: 100, errorMessage: "Video not connected: MAIN" });
    expect(await v.call("disconnect", { sink: "SUB9" })).toMatchObject(row(4));
    expect(await v.call("connect", { sink: "MAIN" })).toMatchObject(row(-1));
    expect(await v.call("connect", { source: "VDEC" })).toMatchObject(row(-1));
    expect(await v.call("connect", { source: "VDEC", sink: "MAIN", sourcePort: 300 })).toMatchObject(row(65));
    expect(await v.call("disconnect", {})).toMatchObject(row(3));
  });
});

// The spec lists connect's codes (-1, 20, 52, 53, 54, 65, 67) without their meanings;
// the service gives each condition connect detects one of them
// (docs/decisions/videooutput.md). 20 (the driver refused) is test/hw/videooutput.test.ts;
// 67 for another uid is test/videooutput/access.test.ts and contexts.test.ts.
describe("connect answers the spec's codes for connect", () => {
  const failure = (errorCode: number, errorMessage: string) => ({ returnValue: false, errorCode, errorMessage });
  test("-1: not JSON, not an object, a required field missing or of the wrong type", async () => {
    const schema = failure(-1, "Could not validate json message against schema");
    expect(await v.call("connect", "{not json")).toEqual(schema);
    expect(await v.call("connect", "[1]")).toEqual(schema);
    expect(await v.call("connect", { sink: "MAIN" })).toEqual(schema);
    expect(await v.call("connect", { source: "VDEC" })).toEqual(schema);
    expect(await v.call("connect", { source: "VDEC", sink: 7 })).toEqual(schema);
    expect(await v.call("connect", { source: "VDEC", sink: "MAIN", context: 3 })).toEqual(schema);
  });
  test("52: a sink this board does not have", async () => {
    expect(await v.call("connect", { source: "VDEC", sink: "SUB9" })).toEqual(failure(52, "Unknown sink: SUB9 (sinks: MAIN, SUB0)"));
  });
  test("53: a sink already connected (without contexts, or under the same one)", async () => {
    expect(await v.call("connect", { source: "VDEC", sink: "SUB0" })).toEqual({ returnValue: true, planeID: 32 });
    expect(await v.call("connect", { source: "VDEC", sink: "SUB0" })).toEqual(failure(53, "Sink already connected: SUB0"));
    expect(await v.call("disconnect", { sink: "SUB0" })).toEqual(OK);
    expect(await v.call("register", { context: "A" })).toEqual(OK);
    expect(await v.call("connect", { source: "VDEC", sink: "SUB0", context: "A" })).toEqual({ returnValue: true, planeID: 32 });
    expect(await v.call("connect", { source: "VDEC", sink: "SUB0", context: "A" })).toEqual(failure(53, "Sink already connected: SUB0 (context A)"));
  });
  test("54: a context nobody registered", async () => {
    expect(await v.call("connect", { source: "VDEC", sink: "MAIN", context: "B" })).toEqual(failure(54, "Context not registered: B"));
    expect((await v.status()).MAIN!.connected).toBe(false);
  });
  test("65: a value beyond its range, said in a sentence naming the field", async () => {
    expect(await v.call("connect", { source: "VDEC", sink: "MAIN", sourcePort: 300 })).toEqual(failure(65, "Invalid parameters: sourcePort must be -128 to 127 (int8)"));
    expect(await v.call("connect", { source: "VDEC", sink: "" })).toEqual(failure(65, "Invalid parameters: sink must not be empty"));
    expect(await v.call("connect", { source: "", sink: "MAIN" })).toEqual(failure(65, "Invalid parameters: source must not be empty"));
    expect((await v.status()).MAIN!.connected).toBe(false);
  });
  test("the other methods keep their codes", async () => {
    expect(await v.call("disconnect", { sink: "SUB9" })).toMatchObject(row(4));
    expect(await v.call("disconnect", {})).toMatchObject(row(3));
    expect(await v.call("setVideoData", { sink: "MAIN", width: 16, height: 16, frameRate: 1, context: "B" })).toMatchObject(row(100));
  });
});

describe("setDisplayWindow", () => {
  test("the source crop and output rectangle are the sink's; fullScreen covers the display; 100 when not connected", async () => {
    const win = { sink: "MAIN", fullScreen: false, displayOutput: { x: 100, y: 50, width: 640, height: 360 } };
    expect(await v.call("display/setDisplayWindow", win)).toEqual({ returnValue: false, errorCode: 100, errorMessage: "Video not connected: MAIN" });
    await v.call("connect", { source: "VDEC", sink: "MAIN" });
    expect(await v.call("display/setDisplayWindow", { ...win, sourceInput: { x: 480, y: 270, width: 960, height: 540 } })).toEqual(OK);
    expect((await v.status()).MAIN).toMatchObject({ fullScreen: false, displayOutput: win.displayOutput, sourceInput: { x: 480, y: 270, width: 960, height: 540 } });
    // Without sourceInput: the whole frame.
    expect(await v.call("display/setDisplayWindow", win)).toEqual(OK);
    expect((await v.status()).MAIN).toMatchObject({ displayOutput: win.displayOutput, sourceInput: FULL });
    expect(await v.call("display/setDisplayWindow", { sink: "MAIN", fullScreen: true })).toEqual(OK);
    expect((await v.status()).MAIN).toMatchObject({ fullScreen: true, displayOutput: FULL, sourceInput: FULL });
  });

  test("4: no displayOutput without fullScreen, a crop outside the frame, an empty or off-display rectangle, beyond 3840x2160; 3: fullScreen missing", async () => {
    await v.call("connect", { source: "VDEC", sink: "MAIN" });
    const bad = [
      { sink: "MAIN", fullScreen: false },
      { sink: "MAIN", fullScreen: true, sourceInput: { x: 1000, y: 0, width: 1000, height: 100 } },
      { sink: "MAIN", fullScreen: true, sourceInput: { x: -1, y: 0, width: 100, height: 100 } },
      { sink: "MAIN", fullScreen: false, displayOutput: { x: 0, y: 0, width: 0, height: 100 } },
      { sink: "MAIN", fullScreen: false, displayOutput: { x: 1920, y: 0, width: 100, height: 100 } },
      { sink: "MAIN", fullScreen: false, displayOutput: { x: 0, y: 0, width: 3841, height: 100 } },
      { sink: "NONE", fullScreen: true },
    ];
    for (const p of bad) expect([p, await v.call("display/setDisplayWindow", p)]).toEqual([p, expect.objectContaining(row(4))]);
    // Beyond a declared range: a sentence naming the field, not the validator's text.
    expect(await v.call("display/setDisplayWindow", { sink: "MAIN", fullScreen: false, displayOutput: { x: 0, y: 0, width: -1, height: 5 } }))
      .toEqual(invalid("displayOutput.width must be 0 to 2147483647 (int32)"));
    expect(await v.call("display/setDisplayWindow", { sink: "MAIN", fullScreen: false, displayOutput: { x: 2 ** 31, y: 0, width: 1, height: 5 } }))
      .toEqual(invalid("displayOutput.x must be -2147483648 to 2147483647 (int32)"));
    expect(await v.call("display/setDisplayWindow", { sink: "", fullScreen: true })).toEqual(invalid("sink must not be empty"));
    expect(await v.call("display/setDisplayWindow", { sink: "MAIN" })).toMatchObject(row(3));
    expect(await v.call("display/setDisplayWindow", { sink: "MAIN", fullScreen: false, displayOutput: { x: 0, y: 0, width: "10", height: 5 } })).toMatchObject(row(3));
    // Nothing was set: the status is still connect's.
    expect((await v.status()).MAIN).toMatchObject({ fullScreen: false, displayOutput: ZERO, sourceInput: ZERO });
  });

  test("102 below the plane's maxDownscaleSize, 103 above its maxUpscaleSize; the window is kept", async () => {
    await v.call("connect", { source: "VDEC", sink: "SUB0" });
    const small = { sink: "SUB0", fullScreen: false, displayOutput: { x: 0, y: 0, width: 159, height: 200 } };
    expect(await v.call("display/setDisplayWindow", small)).toEqual({ returnValue: false, errorCode: 102, errorMessage: "Downscale limit exceeded: SUB0 scales down to at least 160x90" });
    // At the limit: accepted.
    expect(await v.call("display/setDisplayWindow", { ...small, displayOutput: { x: 0, y: 0, width: 160, height: 90 } })).toEqual(OK);
    // A 320x180 crop shown at 2560x1440 (partly off the display) is above 1920x1080.
    const big = { sink: "SUB0", fullScreen: false, sourceInput: { x: 0, y: 0, width: 320, height: 180 }, displayOutput: { x: 0, y: 0, width: 2560, height: 1440 } };
    expect(await v.call("display/setDisplayWindow", big)).toEqual({ returnValue: false, errorCode: 103, errorMessage: "Upscale limit exceeded: SUB0 scales up to at most 1920x1080" });
    expect((await v.status()).SUB0).toMatchObject({ displayOutput: { x: 0, y: 0, width: 160, height: 90 }, sourceInput: FULL });
    // No scaling is no limit: a 100x50 crop shown at 100x50.
    expect(await v.call("display/setDisplayWindow", { sink: "SUB0", fullScreen: false, sourceInput: { x: 0, y: 0, width: 100, height: 50 }, displayOutput: { x: 5, y: 5, width: 100, height: 50 } })).toEqual(OK);
  });
});

describe("setVideoData", () => {
  test("frame size, rate, content and scan type in the status; a crop beyond the new frame goes back to the whole frame", async () => {
    const data = { sink: "MAIN", width: 1280, height: 720, frameRate: 29.97, contentType: "movie", scanType: "progressive" };
    expect(await v.call("setVideoData", data)).toEqual({ returnValue: false, errorCode: 100, errorMessage: "Video not connected: MAIN" });
    await v.call("connect", { source: "VDEC", sink: "MAIN" });
    await v.call("display/setDisplayWindow", { sink: "MAIN", fullScreen: true, sourceInput: { x: 0, y: 0, width: 1600, height: 900 } });
    expect(await v.call("setVideoData", data)).toEqual(OK);
    expect((await v.status()).MAIN).toMatchObject({ width: 1280, height: 720, frameRate: 29.97, contentType: "movie", scanType: "progressive", sourceInput: { x: 0, y: 0, width: 1280, height: 720 } });
    await v.call("display/setDisplayWindow", { sink: "MAIN", fullScreen: true, sourceInput: { x: 0, y: 0, width: 640, height: 360 } });
    expect(await v.call("setVideoData", { sink: "MAIN", width: 1280, height: 720, frameRate: 25 })).toEqual(OK);
    expect((await v.status()).MAIN).toMatchObject({ frameRate: 25, contentType: "movie", sourceInput: { x: 0, y: 0, width: 640, height: 360 } });
  });

  test("width and height are uint32: DCI 4K (4096x2160) and up to the board's largest frame (8192x4320 by default) are taken", async () => {
    await v.call("connect", { source: "VDEC", sink: "MAIN" });
    expect(await v.call("setVideoData", { sink: "MAIN", width: 4096, height: 2160, frameRate: 24 })).toEqual(OK);
    expect((await v.status()).MAIN).toMatchObject({ width: 4096, height: 2160, frameRate: 24 });
    // The crop may cover the whole DCI 4K frame; the output stays within 3840x2160.
    const crop = { x: 0, y: 0, width: 4096, height: 2160 };
    expect(await v.call("display/setDisplayWindow", { sink: "MAIN", fullScreen: true, sourceInput: crop })).toEqual(OK);
    expect((await v.status()).MAIN).toMatchObject({ sourceInput: crop, displayOutput: FULL, fullScreen: true });
    expect(await v.call("setVideoData", { sink: "MAIN", width: 8192, height: 4320, frameRate: 60 })).toEqual(OK);
    expect(await v.call("setVideoData", { sink: "MAIN", width: 3841, height: 2161, frameRate: 60 })).toEqual(OK);
  });

  test("4 with a sentence per field: zero, negative, beyond uint32, beyond the board's largest frame, a negative frameRate; 3: frameRate, width or sink missing, a string width", async () => {
    await v.call("connect", { source: "VDEC", sink: "MAIN" });
    const cases: [Json, string][] = [
      [{ width: 0, height: 10 }, "width must be at least 1"],
      [{ width: 10, height: 0 }, "height must be at least 1"],
      [{ width: -1, height: 10 }, "width must be 0 to 4294967295 (uint32)"],
      [{ width: 10, height: 2 ** 32 }, "height must be 0 to 4294967295 (uint32)"],
      [{ width: 8193, height: 10 }, "width 8193 is more than this board's frames take, 8192 (maxFrameWidth)"],
      [{ width: 10, height: 4321 }, "height 4321 is more than this board's frames take, 4320 (maxFrameHeight)"],
      [{ width: 10, height: 10, frameRate: -1 }, "frameRate must not be negative"],
    ];
    for (const [p, text] of cases) expect(await v.call("setVideoData", { sink: "MAIN", frameRate: 30, ...p })).toEqual(invalid(text));
    expect((await v.status()).MAIN).toMatchObject({ width: 0, height: 0 });
    expect(await v.call("setVideoData", { sink: "MAIN", width: 3840, height: 2160, frameRate: 60 })).toEqual(OK);
    for (const p of [{ sink: "MAIN", width: 10, height: 10 }, { sink: "MAIN", height: 10, frameRate: 1 }, { width: 10, height: 10, frameRate: 1 }, { sink: "MAIN", width: "10", height: 10, frameRate: 1 }]) {
      expect(await v.call("setVideoData", p)).toEqual({ returnValue: false, errorCode: 3, errorMessage: "Could not validate json message against schema" });
    }
  });
});

describe("setCompositing", () => {
  test("opacity and zOrder of one sink (one object) or both at once (an array); zOrder unique per sink", async () => {
    expect(await v.call("register", { context: "A" })).toEqual(OK);
    expect(await v.call("display/setCompositing", { composeOrder: { sink: "SUB0", opacity: 128, zOrder: 1, context: "A" } })).toEqual(OK);
    expect(await v.status()).toMatchObject({ MAIN: { opacity: 255, zOrder: 0 }, SUB0: { opacity: 128, zOrder: 1 } });
    // Swapping needs both at once: one alone would collide.
    expect(await v.call("display/setCompositing", { composeOrder: [{ sink: "SUB0", opacity: 200, zOrder: 0, context: "A" }] })).toEqual({
      returnValue: false, errorCode: 4, errorMessage: "Invalid parameters: zOrder must be unique per sink (MAIN=0, SUB0=0)",
    });
    expect(await v.call("display/setCompositing", { composeOrder: [{ sink: "SUB0", opacity: 200, zOrder: 0, context: "A" }, { sink: "MAIN", opacity: 0, zOrder: 1, context: "A" }] })).toEqual(OK);
    expect(await v.status()).toMatchObject({ MAIN: { opacity: 0, zOrder: 1 }, SUB0: { opacity: 200, zOrder: 0 } });
    expect(await v.call("display/setCompositing", { composeOrder: [{ sink: "SUB0", opacity: 255, zOrder: 1, context: "A" }, { sink: "MAIN", opacity: 255, zOrder: 0, context: "A" }] })).toEqual(OK);
  });

  test("4: opacity beyond 0..255, zOrder beyond 0..3 or the sink count, a sink twice, an unknown sink; 3: fields missing (an empty list: 4)", async () => {
    await v.call("register", { context: "A" });
    const c = { sink: "SUB0", opacity: 10, zOrder: 1, context: "A" };
    for (const p of [{ ...c, opacity: 256 }, { ...c, opacity: -1 }, { ...c, zOrder: 4 }, { ...c, zOrder: -1 }, { ...c, zOrder: 2 }, { ...c, sink: "SUB1" }]) {
      expect([p, await v.call("display/setCompositing", { composeOrder: p })]).toEqual([p, expect.objectContaining(row(4))]);
    }
    expect(await v.call("display/setCompositing", { composeOrder: [c, c] })).toEqual({ returnValue: false, errorCode: 4, errorMessage: "Invalid parameters: sink SUB0 given twice" });
    expect(await v.call("display/setCompositing", { composeOrder: { ...c, opacity: 256 } })).toEqual(invalid("composeOrder.opacity must be 0 (transparent) to 255 (opaque)"));
    expect(await v.call("display/setCompositing", { composeOrder: [c, { ...c, sink: "MAIN", zOrder: 4 }] })).toEqual(invalid("composeOrder[1].zOrder must be 0 to 3"));
    expect(await v.call("display/setCompositing", { composeOrder: [] })).toEqual(invalid("composeOrder must have at least one entry"));
    expect(await v.call("display/setCompositing", { composeOrder: { sink: "SUB0", opacity: 10, zOrder: 1 } })).toMatchObject(row(3));
    expect(await v.call("display/setCompositing", {})).toMatchObject(row(3));
    expect((await v.status()).SUB0).toMatchObject({ opacity: 255, zOrder: 1 });
  });

  test("registration is optional: a sink connected without a context is composed under a context nobody registered", async () => {
    expect(await v.call("connect", { source: "VDEC", sink: "SUB0" })).toEqual({ returnValue: true, planeID: 32 });
    expect(await v.call("display/setCompositing", { composeOrder: { sink: "SUB0", opacity: 64, zOrder: 1, context: "never-registered" } })).toEqual(OK);
    expect((await v.status()).SUB0).toMatchObject({ connected: true, opacity: 64, zOrder: 1 });
    expect((await v.status()).SUB0!.context).toBeUndefined();
    // A sink not connected too, and both at once.
    expect(await v.call("display/setCompositing", { composeOrder: [{ sink: "MAIN", opacity: 10, zOrder: 1, context: "Z" }, { sink: "SUB0", opacity: 255, zOrder: 0, context: "Z" }] })).toEqual(OK);
    expect(await v.status()).toMatchObject({ MAIN: { opacity: 10, zOrder: 1 }, SUB0: { opacity: 255, zOrder: 0 } });
    expect(await v.call("display/setCompositing", { composeOrder: [{ sink: "MAIN", opacity: 255, zOrder: 0, context: "Z" }, { sink: "SUB0", opacity: 255, zOrder: 1, context: "Z" }] })).toEqual(OK);
  });
});

describe("contexts (signage rules)", () => {
  test("register and unregister; 5 registering twice or unregistering a context not registered; connect naming one: 54", async () => {
    expect(await v.call("register", { context: "A" })).toEqual(OK);
    expect(await v.call("register", { context: "A" })).toEqual({ returnValue: false, errorCode: 5, errorMessage: "Invalid status: context A is already registered" });
    expect(await v.call("connect", { source: "VDEC", sink: "MAIN", context: "B" })).toEqual({ returnValue: false, errorCode: 54, errorMessage: "Context not registered: B" });
    expect(await v.call("unregister", { context: "A" })).toEqual(OK);
    expect(await v.call("unregister", { context: "A" })).toEqual({ returnValue: false, errorCode: 5, errorMessage: "Invalid status: context A is not registered" });
    expect(await v.call("register", {})).toMatchObject(row(3));
    expect(await v.call("unregister", { context: 5 })).toMatchObject(row(3));
  });

  test("one context connected at a time: connecting B disconnects A's sinks; a context's own calls name it; unregistering disconnects", async () => {
    await v.call("register", { context: "A" });
    await v.call("register", { context: "B" });
    expect(await v.call("connect", { source: "VDEC", sink: "MAIN", context: "A" })).toEqual({ returnValue: true, planeID: 31 });
    expect((await v.status()).MAIN).toMatchObject({ connected: true, context: "A" });
    // Another context's name on A's sink: 5.
    expect(await v.call("disconnect", { sink: "MAIN", context: "B" })).toMatchObject(row(5));
    expect(await v.call("setVideoData", { sink: "MAIN", context: "B", width: 10, height: 10, frameRate: 1 })).toMatchObject(row(5));
    expect(await v.call("connect", { source: "VDEC", sink: "MAIN", context: "A" })).toMatchObject(row(53));
    expect(await v.call("connect", { source: "VDEC", sink: "SUB0", context: "B" })).toEqual({ returnValue: true, planeID: 32 });
    expect(await v.status()).toMatchObject({ MAIN: { connected: false }, SUB0: { connected: true, context: "B" } });
    // B takes MAIN too, then A takes MAIN back: B's sinks go.
    expect(await v.call("connect", { source: "VDEC", sink: "MAIN", context: "B" })).toEqual({ returnValue: true, planeID: 31 });
    expect(await v.call("connect", { source: "HDMI", sink: "MAIN", context: "A" })).toEqual({ returnValue: true, planeID: 31 });
    expect(await v.status()).toMatchObject({ MAIN: { connected: true, context: "A", connectedSource: "HDMI" }, SUB0: { connected: false } });
    expect(await v.call("unregister", { context: "A" })).toEqual(OK);
    expect((await v.status()).MAIN).toMatchObject({ connected: false });
    expect((await v.status()).MAIN!.context).toBeUndefined();
  });

  test("a context outlives the connection that registered it: another connection of the uid uses and unregisters it", async () => {
    const other = await v.env.client();
    // Its subscription's end shows when the service has seen the connection go.
    await other.subscribe(VO, "getStatus", { subscribe: true }, () => {});
    expect(await other.call(VO, "register", { context: "A" })).toEqual(OK);
    expect(await other.call(VO, "connect", { source: "VDEC", sink: "SUB0", context: "A" })).toMatchObject(OK);
    other.close();
    await eventually(() => v.env.rt!.server.topics.count("videooutput/") === 0, 5000);
    expect((await v.status()).SUB0).toMatchObject({ connected: true, context: "A" });
    expect(await v.call("register", { context: "A" })).toEqual({ returnValue: false, errorCode: 5, errorMessage: "Invalid status: context A is already registered" });
    expect(await v.call("setVideoData", { sink: "SUB0", context: "A", width: 640, height: 480, frameRate: 25 })).toEqual(OK);
    expect(await v.call("unregister", { context: "A" })).toEqual(OK);
    expect((await v.status()).SUB0).toMatchObject({ connected: false });
    expect(await v.call("register", { context: "A" })).toEqual(OK);
  });
});

describe("getStatus subscriptions", () => {
  test("the whole list on every change, nothing when a call changes nothing, until cancelled", async () => {
    const got: Json[] = [];
    const sub = await v.client.subscribe(VO, "getStatus", { subscribe: true }, (m) => got.push(m));
    expect(sub.first).toMatchObject({ returnValue: true, subscribed: true, videoInfo: null });
    expect((sub.first.video as Json[]).map((x) => x.sink)).toEqual(["MAIN", "SUB0"]);
    await v.call("register", { context: "A" });
    expect(got).toHaveLength(0); // registering changes no sink
    await v.call("connect", { source: "VDEC", sink: "MAIN" });
    await eventually(() => got.length === 1);
    expect(got[0]).toMatchObject({ returnValue: true, videoInfo: null, video: [{ sink: "MAIN", connected: true }, { sink: "SUB0", connected: false }] });
    await v.call("display/setDisplayWindow", { sink: "MAIN", fullScreen: false, displayOutput: { x: 10, y: 20, width: 300, height: 200 } });
    await eventually(() => got.length === 2);
    expect((got[1]!.video as Json[])[0]).toMatchObject({ displayOutput: { x: 10, y: 20, width: 300, height: 200 }, fullScreen: false });
    // The same window again: no change, no message.
    await v.call("display/setDisplayWindow", { sink: "MAIN", fullScreen: false, displayOutput: { x: 10, y: 20, width: 300, height: 200 } });
    await v.call("display/setCompositing", { composeOrder: { sink: "SUB0", opacity: 77, zOrder: 1, context: "A" } });
    await eventually(() => got.length === 3);
    expect((got[2]!.video as Json[])[1]).toMatchObject({ opacity: 77 });
    await v.call("setVideoData", { sink: "MAIN", width: 640, height: 480, frameRate: 30, contentType: "movie", scanType: "progressive" });
    await eventually(() => got.length === 4);
    expect((got[3]!.video as Json[])[0]).toMatchObject({ width: 640, height: 480, frameRate: 30 });
    // A failed call changes nothing.
    await v.call("display/setDisplayWindow", { sink: "MAIN", fullScreen: false });
    await v.call("disconnect", { sink: "MAIN" });
    await eventually(() => got.length === 5);
    expect((got[4]!.video as Json[])[0]).toMatchObject({ connected: false });
    await sub.cancel();
    await v.call("display/setCompositing", { composeOrder: { sink: "SUB0", opacity: 255, zOrder: 1, context: "A" } });
    await staysTrue(() => got.length === 5, 100, "no push after Cancel");
    expect(got).toHaveLength(5);
    await eventually(() => v.env.rt!.server.topics.count("videooutput/") === 0);
  });
});
