// src/ffi/gst.ts: layouts and constants against the GStreamer and GLib headers,
// then pipelines whose bus is read on the event source: end-of-stream, errors,
// state changes, descriptions that cannot be built.
import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import * as gst from "../../src/ffi/gst.ts";
import { checkAgainstHeaders, sameNames } from "./cabi.ts";

const pc = Bun.spawnSync(["pkg-config", "--cflags-only-I", "gstreamer-1.0"], { stderr: "ignore" });
const arch = process.arch === "arm64" ? "aarch64" : "x86_64";
const includeDirs =
  pc.exitCode === 0
    ? pc.stdout.toString().trim().split(/\s+/).map((f) => f.replace(/^-I/, "")).filter(Boolean)
    : ["/usr/include/gstreamer-1.0", "/usr/include/glib-2.0", `/usr/lib/${arch}-linux-gnu/glib-2.0/include`];

checkAgainstHeaders("gst.ts mirrors gst/gst.h and glib.h", {
  headers: ["gst/gst.h"],
  includeDirs,
  skip: !existsSync("/usr/include/gstreamer-1.0/gst/gst.h"),
  structs: gst.structs,
  // The probe prints unsigned values: negative enumerators are compared negated.
  consts: {
    GST_FLOW_FLUSHING: ["-GST_FLOW_FLUSHING", -gst.GST_FLOW_FLUSHING],
    GST_FLOW_EOS: ["-GST_FLOW_EOS", -gst.GST_FLOW_EOS],
    ...sameNames({
    GST_STATE_VOID_PENDING: gst.GST_STATE_VOID_PENDING, GST_STATE_NULL: gst.GST_STATE_NULL, GST_STATE_READY: gst.GST_STATE_READY,
    GST_STATE_PAUSED: gst.GST_STATE_PAUSED, GST_STATE_PLAYING: gst.GST_STATE_PLAYING,
    GST_STATE_CHANGE_FAILURE: gst.GST_STATE_CHANGE_FAILURE, GST_STATE_CHANGE_SUCCESS: gst.GST_STATE_CHANGE_SUCCESS,
    GST_STATE_CHANGE_ASYNC: gst.GST_STATE_CHANGE_ASYNC, GST_STATE_CHANGE_NO_PREROLL: gst.GST_STATE_CHANGE_NO_PREROLL,
    GST_MESSAGE_EOS: gst.GST_MESSAGE_EOS, GST_MESSAGE_ERROR: gst.GST_MESSAGE_ERROR, GST_MESSAGE_WARNING: gst.GST_MESSAGE_WARNING,
    GST_MESSAGE_STATE_CHANGED: gst.GST_MESSAGE_STATE_CHANGED,
    GST_FLOW_OK: gst.GST_FLOW_OK,
    }),
  },
});

/** Collects a pipeline's bus messages until one matches. */
function until(p: gst.Pipeline, pred: (m: gst.BusMessage) => boolean, timeoutMs = 10000) {
  const seen: gst.BusMessage[] = [];
  return new Promise<gst.BusMessage[]>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no such message in ${timeoutMs} ms; saw ${JSON.stringify(seen)}`)), timeoutMs);
    p.watchBus((m) => {
      seen.push(m);
      if (pred(m)) {
        clearTimeout(t);
        resolve(seen);
      }
    });
  });
}

test("the library opens and reports its version", () => {
  expect(gst.version()).toMatch(/^1\.\d+\.\d+$/);
  expect(gst.hasElement("fakesink")).toBe(true);
  expect(gst.hasElement("no-such-element")).toBe(false);
});

test("a finite pipeline reaches PLAYING and ends with EOS on the event source while timers keep running", async () => {
  const p = gst.Pipeline.parse("videotestsrc num-buffers=60 ! video/x-raw,width=64,height=48,framerate=30/1 ! fakesink sync=true");
  let last = performance.now(), worst = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 10);
  try {
    const done = until(p, (m) => m.type === "eos");
    expect(p.setState(gst.GST_STATE_PLAYING)).toBe(gst.GST_STATE_CHANGE_ASYNC);
    const seen = await done;
    const states = seen.filter((m) => m.type === "state-changed" && m.fromPipeline).map((m) => (m as { newState: string }).newState);
    expect(states).toEqual(["ready", "paused", "playing"]);
    expect(seen.at(-1)).toMatchObject({ type: "eos", fromPipeline: true });
    expect(p.state().current).toBe("playing");
    // 60 frames at 30/s take 2 s of wall time, during which the main thread was free.
    expect(worst).toBeLessThan(250);
  } finally {
    clearInterval(tick);
    expect(p.dispose()).toBe(gst.GST_STATE_CHANGE_SUCCESS);
  }
  expect(p.disposed).toBe(true);
});

test("an element failing at run time posts an ERROR with GStreamer's text and its source", async () => {
  const p = gst.Pipeline.parse("fakesrc num-buffers=1 ! filesink name=out");
  p.setProperty("out", "location", "/nonexistent-dir/x/out.bin");
  try {
    const done = until(p, (m) => m.type === "error");
    expect(p.setState(gst.GST_STATE_PLAYING)).toBe(gst.GST_STATE_CHANGE_FAILURE);
    // The element's own error comes first (basesink then adds a generic one).
    const m = (await done).find((x) => x.type === "error")!;
    expect(m).toMatchObject({ type: "error", src: "out", fromPipeline: false });
    expect((m as { message: string }).message).toContain("/nonexistent-dir/x/out.bin");
  } finally {
    p.dispose();
  }
});

test("a description that cannot be built throws with GStreamer's message", () => {
  expect(() => gst.Pipeline.parse("videotestsrc ! no-such-element ! fakesink")).toThrow(/no element "no-such-element"/);
  expect(() => gst.Pipeline.parse("videotestsrc ! audio/x-raw ! fakesink")).toThrow(gst.GstError);
  expect(() => gst.Pipeline.parse("fakesrc no-such-property=1 ! fakesink")).toThrow(/no property/);
});

test("an unknown element name for setProperty throws", () => {
  const p = gst.Pipeline.parse("fakesrc ! fakesink name=s");
  try {
    expect(() => p.setProperty("nope", "location", "x")).toThrow(/no element named nope/);
    p.setProperty("s", "sync", "true");
  } finally {
    p.dispose();
  }
});

test("an appsrc fed from JavaScript: the bytes pushed reach the sink's file", async () => {
  const { mkdtempSync, readFileSync, rmSync } = await import("node:fs");
  const dir = mkdtempSync("/tmp/gst-appsrc-");
  const p = gst.Pipeline.parse("appsrc name=src format=bytes ! filesink name=out");
  p.setProperty("out", "location", `${dir}/out.bin`);
  const src = p.appSource("src");
  try {
    const done = until(p, (m) => m.type === "eos" || m.type === "error");
    p.setState(gst.GST_STATE_PLAYING);
    expect(src.push(Buffer.from("hello "))).toBe(gst.GST_FLOW_OK);
    expect(src.push(Buffer.from("world"))).toBe(gst.GST_FLOW_OK);
    p.sendEos();
    expect((await done).at(-1)).toMatchObject({ type: "eos" });
    expect(readFileSync(`${dir}/out.bin`, "utf8")).toBe("hello world");
  } finally {
    src.close();
    p.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
  expect(() => p.appSource("src")).toThrow(/disposed/);
});
