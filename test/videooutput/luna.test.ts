// The luna-send flow: a media framework module of the media group drives the service
// with one-shot calls, each from its own short-lived process (register in one, connect
// in another, setVideoData, setDisplayWindow and setCompositing in others), while a
// fourth process holds the status subscription. A context survives the connection
// that registered it and ends with unregister; a sink connected without registration
// is composed; the status starts empty after connect (upstream's state).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { binaryBuilt, eventually } from "../helpers/harness";
import { testAccounts } from "../layer/accounts";
import { OK } from "./env";
import { serveVideoOutput, type Served } from "./served";

const NOBODY = 65534;
const ZERO = { x: 0, y: 0, width: 0, height: 0 };

const skip = process.getuid?.() !== 0 ? "needs root (setpriv)" : !binaryBuilt() ? "dist/devservices is not built (bun run build)" : null;
if (skip) console.warn(`videooutput luna-send flow tests skipped: ${skip}`);

describe.skipIf(skip !== null)("the luna-send flow: every call a one-shot process", () => {
  let s: Served;
  let media: number;
  beforeAll(async () => {
    media = testAccounts().gids["devservices-media"];
    s = await serveVideoOutput();
  }, 40000);
  afterAll(async () => {
    await s?.stop();
  });

  const as = (method: string, payload: object) => s.call(NOBODY, [media], method, payload);
  const status = async () =>
    Object.fromEntries(((await as("getStatus", {})).video as { sink: string }[]).map((v) => [v.sink, v])) as Record<string, Record<string, unknown>>;

  test("register, connect, set video data, window and compositing from separate processes; the subscriber sees each change; unregister ends the context", async () => {
    const sub = s.hold(NOBODY, [media], "getStatus", { subscribe: true });
    await eventually(() => sub.messages.length === 1, 10000);
    expect(sub.messages[0]).toMatchObject({ returnValue: true, subscribed: true });

    expect(await as("register", { context: "luna-1" })).toEqual(OK);
    // The registering process has exited: its connection is gone, the context is not.
    expect(await as("connect", { source: "VDEC", sink: "MAIN", context: "luna-1" })).toEqual({ returnValue: true, planeID: 31 });
    // Nothing set yet: upstream's state after connect.
    expect((await status()).MAIN).toEqual({
      connected: true, connectedSource: "VDEC", connectedSourcePort: 0, contentType: "unknown", context: "luna-1", displayOutput: ZERO, frameRate: 0,
      fullScreen: false, height: 0, width: 0, muted: false, opacity: 255, scanType: "unknown", sink: "MAIN", sourceInput: ZERO, zOrder: 0,
    });
    // DCI 4K.
    expect(await as("setVideoData", { sink: "MAIN", context: "luna-1", width: 4096, height: 2160, frameRate: 24, contentType: "movie", scanType: "progressive" })).toEqual(OK);
    const window = { sink: "MAIN", fullScreen: false, sourceInput: { x: 0, y: 0, width: 4096, height: 2160 }, displayOutput: { x: 100, y: 100, width: 1024, height: 540 } };
    expect(await as("display/setDisplayWindow", window)).toEqual(OK);
    // A sink connected without registration, composed under a context nobody registered.
    expect(await as("connect", { source: "HDMI", sink: "SUB0" })).toEqual({ returnValue: true, planeID: 32 });
    expect(await as("display/setCompositing", { composeOrder: [{ sink: "MAIN", opacity: 255, zOrder: 0, context: "luna-1" }, { sink: "SUB0", opacity: 128, zOrder: 1, context: "overlay" }] })).toEqual(OK);
    const st = await status();
    expect(st.MAIN).toMatchObject({
      connected: true, context: "luna-1", width: 4096, height: 2160, frameRate: 24, fullScreen: false, sourceInput: window.sourceInput, displayOutput: window.displayOutput, opacity: 255, zOrder: 0,
    });
    expect(st.SUB0).toMatchObject({ connected: true, connectedSource: "HDMI", opacity: 128, zOrder: 1 });
    expect(st.SUB0!.context).toBeUndefined();
    // Still registered after all those connections came and went.
    expect(await as("register", { context: "luna-1" })).toEqual({ returnValue: false, errorCode: 5, errorMessage: "Invalid status: context luna-1 is already registered" });

    // The subscriber got every change: connect, setVideoData, window, connect SUB0, compositing.
    await eventually(() => sub.messages.length === 6, 10000);
    const mainOf = (m: any) => (m.video as Record<string, unknown>[])[0]!;
    expect(mainOf(sub.messages[1])).toMatchObject({ connected: true, fullScreen: false, width: 0, displayOutput: ZERO });
    expect(mainOf(sub.messages[2])).toMatchObject({ width: 4096, height: 2160 });
    expect(mainOf(sub.messages[3])).toMatchObject({ displayOutput: window.displayOutput });
    expect((sub.messages[5].video as Record<string, unknown>[])[1]).toMatchObject({ connected: true, opacity: 128 });

    expect(await as("unregister", { context: "luna-1" })).toEqual(OK);
    expect((await status()).MAIN).toMatchObject({ connected: false, width: 0, displayOutput: ZERO, fullScreen: false });
    expect(await as("connect", { source: "VDEC", sink: "MAIN", context: "luna-1" })).toEqual({ returnValue: false, errorCode: 54, errorMessage: "Context not registered: luna-1" });
    await eventually(() => sub.messages.length === 7, 10000);
    expect(mainOf(sub.messages[6])).toMatchObject({ connected: false });
    // The sink connected without a context stays until disconnect.
    expect((await status()).SUB0).toMatchObject({ connected: true });
    expect(await as("disconnect", { sink: "SUB0" })).toEqual(OK);
    expect(sub.proc.exitCode).toBeNull();
    sub.proc.kill("SIGTERM");
    expect(await sub.proc.exited).toBe(0);
  }, 60000);
});
