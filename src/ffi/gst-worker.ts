// GStreamer's one-time loading off the main thread: gst_init (which rescans the
// plugins when they changed since the registry cache was written, seconds on a
// slow board) and the building of one launch description (which loads the plugins
// and libraries of its elements, 100-200 ms for H264 + AAC), then the pipeline is
// freed. Both are process-wide: afterwards the main thread's gst_init returns at
// once and its gst_parse_launch of such a pipeline takes a few ms (gst.ts, warmUp).
import { init, Pipeline } from "./gst";

declare const self: Worker;

self.onmessage = (ev: MessageEvent<{ description: string }>) => {
  const t0 = performance.now();
  try {
    init();
    Pipeline.parse(ev.data.description).dispose();
    self.postMessage({ ms: performance.now() - t0 });
  } catch (e) {
    self.postMessage({ error: e instanceof Error ? e.message : String(e) });
  }
};
