// GStreamer (libgstreamer-1.0, by soname) through bun:ffi: pipelines built from a
// launch description, state changes, and the pipeline's bus read on the platform's
// event source. No GStreamer callback ever runs JavaScript: GStreamer's streaming
// threads post messages on the bus, whose GPollFD (gst_bus_get_pollfd) is readable
// while messages are pending; the watch pops them with gst_bus_pop, which never
// waits. State changes are asked for with gst_element_set_state and observed as
// messages; gst_element_get_state is only called with a zero timeout.
import { dlopen, FFIType, ptr, read, CString, type Pointer } from "bun:ffi";
import { watch, type Watch } from "./loop";
import { workerUrl } from "./worker";
import { libc } from "./libc";

/** Layouts of the structs read here (checked against the GStreamer and GLib headers by test/ffi/gst.test.ts). */
export const structs = {
  GstMessage: { c: "GstMessage", size: 120, fields: { type: 64, timestamp: 72, src: 80, seqnum: 88 } },
  GError: { c: "GError", size: 16, fields: { domain: 0, code: 4, message: 8 } },
  GPollFD: { c: "GPollFD", size: 8, fields: { fd: 0, events: 4, revents: 6 } },
} as const;

/** GstState */
export const GST_STATE_VOID_PENDING = 0, GST_STATE_NULL = 1, GST_STATE_READY = 2, GST_STATE_PAUSED = 3, GST_STATE_PLAYING = 4;
/** GstStateChangeReturn */
export const GST_STATE_CHANGE_FAILURE = 0, GST_STATE_CHANGE_SUCCESS = 1, GST_STATE_CHANGE_ASYNC = 2, GST_STATE_CHANGE_NO_PREROLL = 3;
/** GstFlowReturn (the ones pushers see) */
export const GST_FLOW_OK = 0, GST_FLOW_FLUSHING = -2, GST_FLOW_EOS = -3;
/** GstMessageType (the ones this module decodes) */
export const GST_MESSAGE_EOS = 1 << 0, GST_MESSAGE_ERROR = 1 << 1, GST_MESSAGE_WARNING = 1 << 2, GST_MESSAGE_STATE_CHANGED = 1 << 6;

export type GstStateName = "void-pending" | "null" | "ready" | "paused" | "playing";
export const stateName = (s: number): GstStateName => (["void-pending", "null", "ready", "paused", "playing"] as const)[s] ?? "void-pending";

const P = FFIType.ptr, I32 = FFIType.i32, U64 = FFIType.u64, V = FFIType.void, CS = FFIType.cstring;

type Lib = ReturnType<typeof openLib>;
function openLib() {
  const gst = dlopen("libgstreamer-1.0.so.0", {
    gst_init_check: { args: [P, P, P], returns: FFIType.bool },
    gst_version: { args: [P, P, P, P], returns: V },
    gst_parse_launch: { args: [CS, P], returns: P },
    gst_element_set_state: { args: [P, I32], returns: I32 },
    gst_element_get_state: { args: [P, P, P, U64], returns: I32 },
    gst_element_get_bus: { args: [P], returns: P },
    gst_element_send_event: { args: [P, P], returns: FFIType.bool },
    gst_event_new_eos: { args: [], returns: P },
    gst_bin_get_by_name: { args: [P, CS], returns: P },
    gst_util_set_object_arg: { args: [P, CS, CS], returns: V },
    gst_element_factory_find: { args: [CS], returns: P },
    gst_bus_get_pollfd: { args: [P, P], returns: V },
    gst_bus_pop: { args: [P], returns: P },
    gst_bus_set_flushing: { args: [P, FFIType.bool], returns: V },
    gst_message_parse_error: { args: [P, P, P], returns: V },
    gst_message_parse_warning: { args: [P, P, P], returns: V },
    gst_message_parse_state_changed: { args: [P, P, P, P], returns: V },
    gst_object_get_name: { args: [P], returns: P },
    gst_object_unref: { args: [P], returns: V },
    gst_buffer_new_memdup: { args: [P, U64], returns: P },
    gst_mini_object_unref: { args: [P], returns: V },
  });
  const glib = dlopen("libglib-2.0.so.0", {
    g_free: { args: [P], returns: V },
    g_error_free: { args: [P], returns: V },
  });
  return { gst: gst.symbols, glib: glib.symbols };
}

let appLib: ReturnType<typeof openApp> | undefined;
function openApp() {
  return dlopen("libgstapp-1.0.so.0", {
    gst_app_src_push_buffer: { args: [P, P], returns: I32 },
  }).symbols;
}

let lib: Lib | undefined;
let initError: Error | undefined;

/** Whether libgstreamer-1.0 can be opened and initialised (no throw). */
export function available(): boolean {
  try {
    init();
    return true;
  } catch {
    return false;
  }
}

/**
 * Opens the library and runs gst_init once per process. gst_init reads the plugin
 * registry cache; when plugins changed since it was written, it rescans them (in
 * gst-plugin-scanner child processes), which the first call waits for.
 */
export function init(): Lib {
  if (lib) return lib;
  if (initError) throw initError;
  try {
    const l = openLib();
    const err = new BigUint64Array(1);
    if (!l.gst.gst_init_check(null, null, ptr(err))) throw new Error(`gst_init failed: ${takeError(l, err[0]!) ?? "unknown error"}`);
    lib = l;
    return l;
  } catch (e) {
    initError = e instanceof Error ? e : new Error(String(e));
    throw initError;
  }
}

let warming: Promise<number> | undefined;

/**
 * Loads GStreamer and the plugins of a launch description on a worker thread
 * (gst-worker.ts), once per process: the first call starts it, every call answers
 * the same promise (the milliseconds it took; rejected with GStreamer's message
 * when it cannot build the description). The main thread, which hosts every
 * service, never waits for a plugin rescan or a plugin load; once this resolved,
 * `init` and a `Pipeline.parse` of such a description take a few ms there.
 */
export function warmUp(description: string): Promise<number> {
  return (warming ??= new Promise<number>((resolve, reject) => {
    const w = new Worker(workerUrl("ffi/gst-worker.ts"));
    const done = (f: () => void) => {
      // The main thread opens the library before the worker goes, so it stays loaded.
      try {
        init();
      } catch {}
      w.terminate();
      f();
    };
    w.onmessage = (ev: MessageEvent<{ ms?: number; error?: string }>) =>
      done(() => (ev.data.error !== undefined ? reject(new Error(ev.data.error)) : resolve(ev.data.ms!)));
    w.onerror = (ev) => done(() => reject(new Error(ev.message)));
    w.postMessage({ description });
  }));
}

/** The running GStreamer version, "1.22.0". */
export function version(): string {
  const l = init();
  const v = new Uint32Array(4);
  l.gst.gst_version(ptr(v), ptr(v, 4), ptr(v, 8), ptr(v, 12));
  return `${v[0]}.${v[1]}.${v[2]}`;
}

/** Whether an element factory of that name is installed (x264enc, avenc_aac...). */
export function hasElement(name: string): boolean {
  const l = init();
  const f = l.gst.gst_element_factory_find(cbuf(name));
  if (!f) return false;
  l.gst.gst_object_unref(f);
  return true;
}

const cbuf = (s: string) => Buffer.from(s + "\0", "utf8");
const strAt = (p: number | bigint | null) => (p ? new CString(Number(p) as unknown as Pointer).toString() : "");

/** Reads and frees a GError* (0 when none). */
function takeError(l: Lib, errPtr: bigint | number): string | undefined {
  if (!errPtr) return undefined;
  const p = Number(errPtr) as unknown as Pointer;
  const m = read.ptr(p, structs.GError.fields.message);
  const text = strAt(m);
  l.glib.g_error_free(p);
  return text;
}

export class GstError extends Error {
  constructor(
    public readonly call: string,
    message: string,
  ) {
    super(`${call}: ${message}`);
  }
}

export type BusMessage =
  | { type: "eos"; src: string; fromPipeline: boolean }
  | { type: "error" | "warning"; src: string; fromPipeline: boolean; message: string; debug: string }
  | { type: "state-changed"; src: string; fromPipeline: boolean; oldState: GstStateName; newState: GstStateName; pending: GstStateName }
  | { type: "other"; src: string; fromPipeline: boolean; messageType: number };

/**
 * A pipeline made by gst_parse_launch. The pipeline's bus is watched on the event
 * source from `watchBus` until `dispose`.
 */
export class Pipeline {
  private l: Lib;
  private handle: Pointer | null;
  private bus: Pointer | null;
  private busWatch?: Watch;
  private pollfd = new Uint8Array(structs.GPollFD.size);

  private constructor(l: Lib, handle: Pointer) {
    this.l = l;
    this.handle = handle;
    this.bus = l.gst.gst_element_get_bus(handle) as Pointer | null;
    if (!this.bus) throw new GstError("gst_element_get_bus", "the pipeline has no bus");
  }

  /**
   * Builds a pipeline from a launch description. A description GStreamer cannot
   * build completely (an unknown element, a link that cannot be made, an unknown
   * property) throws GstError with GStreamer's message; nothing is left allocated.
   */
  static parse(description: string): Pipeline {
    const l = init();
    const err = new BigUint64Array(1);
    const h = l.gst.gst_parse_launch(cbuf(description), ptr(err)) as Pointer | null;
    const why = takeError(l, err[0]!);
    if (why !== undefined || !h) {
      if (h) l.gst.gst_object_unref(h);
      throw new GstError("gst_parse_launch", why ?? "no pipeline");
    }
    return new Pipeline(l, h);
  }

  private get h(): Pointer {
    if (!this.handle) throw new GstError("pipeline", "already disposed");
    return this.handle;
  }

  get disposed(): boolean {
    return this.handle === null;
  }

  /** Sets a property of a named element from its string form (as gst-launch would). */
  setProperty(element: string, property: string, value: string): void {
    const el = this.l.gst.gst_bin_get_by_name(this.h, cbuf(element));
    if (!el) throw new GstError("gst_bin_get_by_name", `no element named ${element}`);
    try {
      this.l.gst.gst_util_set_object_arg(el, cbuf(property), cbuf(value));
    } finally {
      this.l.gst.gst_object_unref(el);
    }
  }

  /**
   * Feeds a named appsrc: push(data) copies the bytes into a new GstBuffer and
   * queues it (gst_app_src_push_buffer, which does not wait; the element's
   * max-bytes bounds its queue). push returns GStreamer's flow return (0: OK;
   * negative: flushing, not started or at end-of-stream, the buffer dropped).
   */
  appSource(element: string): { push(data: Uint8Array): number; close(): void } {
    const el = this.l.gst.gst_bin_get_by_name(this.h, cbuf(element));
    if (!el) throw new GstError("gst_bin_get_by_name", `no element named ${element}`);
    appLib ??= openApp();
    const app = appLib;
    let ref: Pointer | null = el as Pointer;
    return {
      push: (data) => {
        if (!ref) return GST_FLOW_FLUSHING;
        const buf = this.l.gst.gst_buffer_new_memdup(ptr(data), BigInt(data.length));
        if (!buf) throw new GstError("gst_buffer_new_memdup", "no buffer");
        return app.gst_app_src_push_buffer(ref, buf);
      },
      close: () => {
        if (ref) this.l.gst.gst_object_unref(ref);
        ref = null;
      },
    };
  }

  /** Asks for a state; returns GStreamer's answer (GST_STATE_CHANGE_*). */
  setState(state: number): number {
    return this.l.gst.gst_element_set_state(this.h, state);
  }

  /** The current and pending states now (gst_element_get_state with a zero timeout). */
  state(): { result: number; current: GstStateName; pending: GstStateName } {
    const s = new Int32Array(2);
    const result = this.l.gst.gst_element_get_state(this.h, ptr(s), ptr(s, 4), 0n);
    return { result, current: stateName(s[0]!), pending: stateName(s[1]!) };
  }

  /** Sends end-of-stream into the pipeline (its sources); EOS arrives on the bus once every sink has it. */
  sendEos(): boolean {
    return this.l.gst.gst_element_send_event(this.h, this.l.gst.gst_event_new_eos());
  }

  /** The bus's poll fd: readable while messages are pending. */
  busFd(): number {
    this.l.gst.gst_bus_get_pollfd(this.bus, ptr(this.pollfd));
    return new DataView(this.pollfd.buffer).getInt32(structs.GPollFD.fields.fd, true);
  }

  /** Pops one message without waiting (null when none is pending). */
  pop(): BusMessage | null {
    if (!this.bus) return null;
    const m = this.l.gst.gst_bus_pop(this.bus) as Pointer | null;
    if (!m) return null;
    try {
      return this.decode(m);
    } finally {
      this.l.gst.gst_mini_object_unref(m);
    }
  }

  private decode(m: Pointer): BusMessage {
    const g = this.l.gst;
    const type = read.u32(m, structs.GstMessage.fields.type);
    const srcPtr = read.ptr(m, structs.GstMessage.fields.src);
    let src = "";
    if (srcPtr) {
      const name = g.gst_object_get_name(srcPtr as unknown as Pointer);
      src = strAt(name);
      if (name) this.l.glib.g_free(name);
    }
    const fromPipeline = !!srcPtr && BigInt(srcPtr) === BigInt(this.h as unknown as number);
    if (type === GST_MESSAGE_EOS) return { type: "eos", src, fromPipeline };
    if (type === GST_MESSAGE_ERROR || type === GST_MESSAGE_WARNING) {
      const out = new BigUint64Array(2);
      (type === GST_MESSAGE_ERROR ? g.gst_message_parse_error : g.gst_message_parse_warning)(m, ptr(out), ptr(out, 8));
      const message = takeError(this.l, out[0]!) ?? "";
      const debug = strAt(out[1] || null);
      if (out[1]) this.l.glib.g_free(Number(out[1]) as unknown as Pointer);
      return { type: type === GST_MESSAGE_ERROR ? "error" : "warning", src, fromPipeline, message, debug };
    }
    if (type === GST_MESSAGE_STATE_CHANGED) {
      const s = new Int32Array(3);
      g.gst_message_parse_state_changed(m, ptr(s), ptr(s, 4), ptr(s, 8));
      return { type: "state-changed", src, fromPipeline, oldState: stateName(s[0]!), newState: stateName(s[1]!), pending: stateName(s[2]!) };
    }
    return { type: "other", src, fromPipeline, messageType: type };
  }

  /**
   * Delivers the bus's messages on the event source: on readable, every pending
   * message is popped and handed to onMessage. One watch per pipeline.
   */
  watchBus(onMessage: (m: BusMessage) => void): void {
    if (this.busWatch) throw new GstError("watchBus", "the bus is already watched");
    this.busWatch = watch(this.busFd(), {
      readable: () => {
        for (let m = this.pop(); m; m = this.pop()) onMessage(m);
      },
    });
  }

  /**
   * Stops watching, sets the pipeline to NULL (its streaming threads end; after
   * EOS this returns at once) and frees it.
   */
  dispose(): number {
    if (!this.handle) return GST_STATE_CHANGE_SUCCESS;
    this.busWatch?.close();
    this.busWatch = undefined;
    const r = this.l.gst.gst_element_set_state(this.handle, GST_STATE_NULL);
    if (this.bus) {
      this.l.gst.gst_bus_set_flushing(this.bus, true);
      this.l.gst.gst_object_unref(this.bus);
    }
    this.l.gst.gst_object_unref(this.handle);
    this.bus = null;
    this.handle = null;
    // The pipeline's threads have ended; what they and the elements allocated is free
    // but stays in glibc's heap (about 6 MB a recording, docs/performance.md) unless it
    // is given back.
    libc.malloc_trim(0);
    return r;
  }
}
