// Recording pipeline (spec part 2, com.vendor.pipeline.record.<pipeline_id>). One
// instance per pipeline ID of the board recipe's `record` section, each on its own
// bus name (ServiceModule.instances). An instance builds a GStreamer pipeline per
// start (src/ffi/gst.ts, in this process: its bus is read on the event source) and
// follows the spec's state table; the pipeline's bus messages are pushed to
// subscribers. Recording is for root and the access group; the output file is
// created with the caller's rights (ctx.files) and written by GStreamer through its
// fd; a recording belongs to the uid that started it (the lease registry decides
// who may pause, resume or stop it). Choices where the spec is silent:
// docs/decisions/record.md.
import { fstatSync } from "node:fs";
import { answer, raise, ok, type ErrorRow, type Json } from "../../core/errors";
import { defineService, PathRefused, type Caller, type ServiceModule, type ServiceContext, type ServiceInstance } from "../../core/service";
import { uidOwner, type Lease } from "../../core/leases";
import { group, type AccessRule } from "../../core/access";
import { Throttle } from "../../core/log";
import type { Board } from "../../core/board";
import * as gst from "../../ffi/gst";
import { api, type StartRequest } from "./schemas";
import { E } from "./errors";
import { plan, readRecipe, PlanError, CAMERA_APPSRC, type CameraStream, type Recipe } from "./recipe";
import { FrameReader } from "../../clients/camera/reader";
import { closeFd } from "../../ffi/libc";
import { loadRecordOptions } from "./config";

export const BUS_PREFIX = "com.vendor.pipeline.record";
const CAMERA = "com.vendor.service.camera2";
const EVENTS = "events";
/** The lease key of an instance's recording (owned by the uid that started it). */
const RECORDING = "recording";

/** The recorder's state (spec: Recording pipeline states); starting and stopping are the moments in between. */
export type RecorderState = "idle" | "starting" | "recording" | "paused" | "stopping" | "stopped";

interface Recording {
  pipeline: gst.Pipeline;
  path: string;
  /** Who started it (the file is created and, after a failed start, removed with its rights). */
  caller: Caller;
  /** The output file, created for this recording; the sink writes to it (-1 once closed). */
  fd: number;
  /** Bytes in the file when it was closed, 0 when it was no longer linked (removed meanwhile). */
  written?: number;
  /** The recording's owner in the lease registry (the uid that started it). */
  lease: Lease<undefined>;
  kind: "av" | "image";
  cameraId?: string;
  /** End-of-stream reached the sinks. */
  eos: boolean;
  /** The first error an element posted. */
  error?: string;
  /** Waiters for the next bus message of interest. */
  waiters: Set<(m: gst.BusMessage) => void>;
  /** The camera service's stream feeding the pipeline, when the source is one. */
  feed?: CameraFeed;
  /** The camera being given back (after release). */
  closing?: Promise<void>;
}

/** A camera opened on the camera service, streaming into shared memory that this process maps. */
interface CameraFeed {
  reader: FrameReader;
  eventFd: number;
  /** Stops the stream's watch here; stops and closes the camera on the service (resolves when it answered). */
  close(): Promise<void>;
}

const BAD_REQUEST: Record<string, ErrorRow> = {
  start: E.notCreated,
  pause: E.invalidState,
  resume: E.invalidState,
  stop: E.unloadFailed,
  subscribe: E.subscriptionAddFail,
};
const INTERNAL: Record<string, ErrorRow> = { ...BAD_REQUEST, start: E.loadFailed };
const row = (table: Record<string, ErrorRow>, method: string) => table[method] ?? E.notCreated;

/**
 * GStreamer and the plugins of the recipe's default pipeline (video and audio),
 * loaded once per process on a worker thread (gst.warmUp): by the first `start`,
 * which waits for it, or when the service is created with the `preload` option.
 * A recipe GStreamer cannot build is logged; `start` then answers "recorder not
 * created" as GStreamer's own error for the request's pipeline says.
 */
function warmUp(recipe: Recipe, log: ServiceContext["log"]): Promise<void> {
  const video = Object.keys(recipe.encoders).find((k) => recipe.encoders[k]!.kind === "video");
  const audio = Object.keys(recipe.encoders).find((k) => recipe.encoders[k]!.kind === "audio");
  const cam = Object.keys(recipe.videoSources)[0];
  const format = Object.keys(recipe.formats)[0];
  let description = "fakesrc num-buffers=0 ! fakesink";
  if (video && audio && cam && format) {
    try {
      description = plan(
        {
          format,
          path: "/dev/null",
          video: { videoSrc: cam, width: 320, height: 240, codec: video, fps: 30, bitRate: 500000 },
          audio: { codec: audio, sampleRate: 48000, channelCount: 2, bitRate: 128000 },
        } as StartRequest,
        recipe,
      ).description;
    } catch (e) {
      // Only GStreamer itself is loaded then; each start still plans its own request.
      log.warn({ err: e }, "the recipe has no default pipeline to load GStreamer's plugins with");
    }
  }
  return gst.warmUp(description).then(
    (ms) => log.info({ gstreamer: gst.version(), ms: Math.round(ms) }, "GStreamer ready"),
    (e) => log.error({ err: e }, "GStreamer cannot build the recipe's pipeline"),
  );
}

/** Pipeline `id` of the board whose `record` section is `recipe` (read once for all its pipelines). */
function instance(id: string, recipe: Recipe): ServiceModule<typeof api> {
  const busName = `${BUS_PREFIX}.${id}`;
  return defineService({
    spec: {
      name: `record.${id}`,
      busName,
      description: `Recording pipeline ${id}: video (H264) and audio (AAC) into fragmented MP4, or an image (JPEG), from the board's sources through GStreamer.`,
      api,
      badRequest: (method) => answer(row(BAD_REQUEST, method)),
      internalError: (method) => answer(row(INTERNAL, method)),
      denied,
    },
    create: (ctx) => createInstance(id, recipe, ctx),
  });
}

/** A caller the access rule refuses: the method's own failure row (the spec has no permission error). */
const denied = (method: string): Json => answer(row(BAD_REQUEST, method));

async function createInstance(id: string, recipe: Recipe, ctx: ServiceContext): Promise<ServiceInstance<typeof api>> {
  const options = loadRecordOptions((ctx.board.serviceConfig?.record ?? {}) as Record<string, unknown>).config;
  let warm: Promise<void> | undefined;
  const warmed = () => (warm ??= warmUp(recipe, ctx.log));
  if (options.preload) void warmed();
  const log = ctx.log;
  // What a client can cause on every call (another's recording, a path it may not use): one line per uid and kind per 10 s.
  const refusals = new Throttle();

  let state: RecorderState = "idle";
  let rec: Recording | undefined;

  const event = (eventType: string, fields: Json = {}) => {
    const message = { returnValue: true, id: rec?.cameraId ?? id, eventType, pipelineId: id, ...fields };
    ctx.topics.publish(EVENTS, message);
  };
  const setState = (s: RecorderState) => {
    if (s === state) return;
    log.info({ from: state, to: s }, "recorder state");
    state = s;
  };

  const onMessage = (r: Recording) => (m: gst.BusMessage) => {
    if (m.type === "eos") {
      r.eos = true;
      event("endOfStream");
    } else if (m.type === "error") {
      log.error({ source: m.src, error: m.message, debug: m.debug }, "pipeline error");
      if (r.error === undefined) {
        r.error = m.message;
        event("error", { errorText: m.message, source: m.src });
      }
    } else if (m.type === "warning") {
      log.warn({ source: m.src, warning: m.message }, "pipeline warning");
      event("warning", { errorText: m.message, source: m.src });
    } else if (m.type === "state-changed" && m.fromPipeline) {
      event("stateChanged", { state: m.newState, previousState: m.oldState });
    }
    for (const w of [...r.waiters]) w(m);
  };

  /** Resolves with the first message that pred accepts, or null after ms. */
  const waitFor = (r: Recording, pred: (m: gst.BusMessage) => boolean, ms: number) =>
    new Promise<gst.BusMessage | null>((resolve) => {
      const w = (m: gst.BusMessage) => {
        if (!pred(m)) return;
        r.waiters.delete(w);
        clearTimeout(timer);
        resolve(m);
      };
      const timer = setTimeout(() => {
        r.waiters.delete(w);
        resolve(null);
      }, ms);
      r.waiters.add(w);
    });

  /** Opens the camera on the camera service and maps its stream (throws with the reason). */
  const openCamera = async (c: CameraStream): Promise<CameraFeed> => {
    const check = (what: string, m: Json) => {
      if (m.returnValue !== true) throw new Error(`camera ${c.camera} ${what}: ${JSON.stringify(m)}`);
      return m;
    };
    const opened = check("open", await ctx.peers.call(CAMERA, "open", { id: c.camera, mode: "primary" }));
    const handle = opened.handle as number;
    const fds: number[] = [];
    const giveBack = async () => {
      for (const fd of fds.splice(0)) closeFd(fd);
      await ctx.peers.call(CAMERA, "stopCamera", { handle }).catch(() => {});
      const closed = await ctx.peers.call(CAMERA, "close", { handle }).catch((e) => ({ returnValue: false, error: String(e) }));
      if (closed.returnValue !== true) log.warn({ camera: c.camera, handle, answer: closed }, "the camera was not closed");
    };
    try {
      check("setFormat", await ctx.peers.call(CAMERA, "setFormat", { handle, params: { width: c.width, height: c.height, format: "YUV", fps: c.fps } }));
      check("startCamera", await ctx.peers.call(CAMERA, "startCamera", { handle, params: { type: "posixshm" } }));
      const ev = await ctx.peers.callForFd(CAMERA, "getFd", { handle, type: "event" });
      if (ev.fd === undefined) check("getFd event", ev.response);
      fds.push(ev.fd!);
      const buf = await ctx.peers.callForFd(CAMERA, "getFd", { handle, type: "buffer" });
      if (buf.fd === undefined) check("getFd buffer", buf.response);
      const reader = FrameReader.fromFd(buf.fd!);
      closeFd(buf.fd!);
      const info = reader.info;
      if (info.fourcc !== "YUYV" || info.width !== c.width || info.height !== c.height) {
        reader.close();
        throw new Error(`camera ${c.camera} streams ${info.fourcc} ${info.width}x${info.height}, not YUYV ${c.width}x${c.height}`);
      }
      reader.skipToLatest();
      return {
        reader,
        eventFd: ev.fd!,
        close() {
          reader.close();
          return giveBack();
        },
      };
    } catch (e) {
      await giveBack();
      throw e;
    }
  };

  /**
   * Ends a recording's pipeline, closes its file (noting what it holds) and gives its
   * ownership back; returns whether GStreamer set the pipeline to NULL.
   */
  const release = (r: Recording): boolean => {
    r.waiters.clear();
    if (r.feed) r.closing = r.feed.close();
    r.feed = undefined;
    const result = r.pipeline.dispose();
    if (r.fd >= 0) {
      try {
        const st = fstatSync(r.fd);
        r.written = st.nlink > 0 ? st.size : 0;
      } catch {
        r.written = 0;
      }
      closeFd(r.fd);
      r.fd = -1;
    }
    r.lease.release();
    if (rec === r) rec = undefined;
    return result !== gst.GST_STATE_CHANGE_FAILURE;
  };

  /** Removes the file a failed start created (with the caller's rights: only what the caller could remove). */
  const removeOutput = async ({ caller, path }: { caller: Caller; path: string }) => {
    try {
      await ctx.files.unlink(caller, path);
    } catch (e) {
      log.warn({ path, reason: e instanceof PathRefused ? e.reason : String(e) }, "the file of a failed start was not removed");
    }
  };

  /**
   * Who may pause, resume or stop the recording: the uid that started it, or root
   * (the lease registry's decision). Others get the method's failure row.
   */
  const mayControl = (method: string, caller: Caller, r: Recording, refusal: ErrorRow) => {
    if (ctx.leases.forActor(caller, RECORDING) === r.lease) return;
    refusals.log(`${caller.uid} control`, (repeated) =>
      log.warn({ method, uid: caller.uid, caller: caller.name, owner: r.lease.owner, ...(repeated ? { repeated } : {}) }, "refused: the recording is another user's"),
    );
    raise(refusal);
  };

  const start = async (req: StartRequest, caller: Caller) => {
    await warmed();
    if (state === "starting" || state === "recording" || state === "paused" || state === "stopping") {
      log.warn({ state }, "start refused: a recorder is loaded");
      raise(E.notCreated);
    }
    let p;
    try {
      p = plan(req, recipe);
    } catch (e) {
      if (!(e instanceof PlanError)) throw e;
      log.warn({ reason: e.message }, "start refused");
      raise(E.notCreated);
    }
    if (req.path.endsWith("/")) {
      log.warn({ path: req.path }, "start refused: the path names a directory");
      raise(E.notCreated);
    }
    // From here the instance is taken (no await before this line since the state check).
    const lease = ctx.leases.take(uidOwner(caller.uid), RECORDING);
    const before = state;
    setState("starting");
    let fd: number;
    try {
      // A new file, the caller's: O_EXCL (never an existing file, FIFO or device),
      // no symlink on the path, not the state directory; the kernel decides as for the caller.
      fd = await ctx.files.open(caller, req.path, { write: true, create: "new" }, 0o644);
    } catch (e) {
      lease.release();
      setState(before);
      if (!(e instanceof PathRefused)) throw e;
      const { reason, errno } = e;
      refusals.log(`${caller.uid} path`, (repeated) =>
        log.warn({ path: req.path, reason, errno, uid: caller.uid, ...(repeated ? { repeated } : {}) }, "start refused: the output file cannot be created for the caller"),
      );
      raise(E.notCreated);
    }
    let pipeline: gst.Pipeline;
    try {
      pipeline = gst.Pipeline.parse(p.description);
      pipeline.setProperty("sink", "fd", String(fd));
    } catch (e) {
      log.warn({ err: e, description: p.description }, "start refused: the pipeline cannot be built");
      closeFd(fd);
      lease.release();
      await removeOutput({ caller, path: req.path });
      setState(before);
      raise(E.notCreated);
    }
    const r: Recording = { pipeline, path: req.path, caller, fd, lease, kind: p.kind, cameraId: p.cameraId, eos: false, waiters: new Set() };
    rec = r;
    if (p.cameraStream) {
      try {
        r.feed = await openCamera(p.cameraStream);
      } catch (e) {
        log.warn({ err: e }, "start failed: the camera service's stream cannot be had");
        release(r);
        await r.closing;
        await removeOutput(r);
        setState("idle");
        raise(E.loadFailed);
      }
      const src = pipeline.appSource(CAMERA_APPSRC);
      const feed = r.feed;
      feed.reader.watch(feed.eventFd, (f) => {
        // Paused: frames are not queued (the running time stops; resume goes on from now).
        if (state === "paused") return;
        src.push(f.data);
      });
      const close = feed.close;
      feed.close = () => {
        src.close();
        return close();
      };
    }
    pipeline.watchBus(onMessage(r));
    const playing = waitFor(r, (m) => m.type === "error" || (m.type === "state-changed" && m.fromPipeline && m.newState === "playing"), options.startTimeoutMs);
    const result = pipeline.setState(gst.GST_STATE_PLAYING);
    const m = result === gst.GST_STATE_CHANGE_FAILURE ? null : await playing;
    if (!m || m.type === "error" || r.error !== undefined) {
      log.warn({ result, error: r.error, timedOut: !m && result !== gst.GST_STATE_CHANGE_FAILURE, description: p.description }, "start failed: the pipeline did not reach PLAYING");
      release(r);
      await r.closing;
      await removeOutput(r);
      setState("idle");
      raise(E.loadFailed);
    }
    log.info({ path: req.path, kind: p.kind, description: p.description }, "recording");
    setState("recording");
    return ok();
  };

  const stop = async (caller: Caller) => {
    const r = rec;
    if (!r || (state !== "recording" && state !== "paused")) raise(E.alreadyUnloaded);
    mayControl("stop", caller, r, E.unloadFailed);
    setState("stopping");
    try {
      if (r.error === undefined && !r.eos) {
        const done = waitFor(r, (m) => m.type === "eos" || m.type === "error", options.stopTimeoutMs);
        // A paused live pipeline does not move data: EOS needs it playing.
        if (r.pipeline.state().current !== "playing") r.pipeline.setState(gst.GST_STATE_PLAYING);
        r.pipeline.sendEos();
        const m = await done;
        if (!m) log.error({ timeoutMs: options.stopTimeoutMs }, "stop: end-of-stream did not reach the file in time");
      }
      if (r.error !== undefined || !r.eos) {
        release(r);
        raise(E.unloadFailed);
      }
      if (!release(r)) raise(E.releaseFailed);
      const size = r.written ?? 0;
      if (size === 0) {
        log.error({ path: r.path }, "stop: the output file is not there after the pipeline stopped");
        raise(E.releaseFailed);
      }
      log.info({ path: r.path, bytes: size }, "recording saved");
      return ok();
    } finally {
      if (rec === r) release(r);
      // The camera service's camera is given back before stop answers.
      await r.closing;
      setState("stopped");
    }
  };

  // The table's rule (root and devservices-record), or the board's accessGroup ("*": any caller).
  const rule: AccessRule = group(options.accessGroup);
  const controls = ["start", "stop", "pause", "resume"] as const;

  return {
    access: Object.fromEntries(controls.map((m) => [m, rule])),
    handlers: {
      start: (req, call) => start(req, call.caller),
      stop: (_req, call) => stop(call.caller),
      pause: (_req, call) => {
        if (state !== "recording" || !rec) raise(E.invalidState);
        mayControl("pause", call.caller, rec, E.invalidState);
        if (rec.pipeline.setState(gst.GST_STATE_PAUSED) === gst.GST_STATE_CHANGE_FAILURE) raise(E.invalidState);
        setState("paused");
        return ok();
      },
      resume: (_req, call) => {
        if (state !== "paused" || !rec) raise(E.invalidState);
        mayControl("resume", call.caller, rec, E.invalidState);
        if (rec.pipeline.setState(gst.GST_STATE_PLAYING) === gst.GST_STATE_CHANGE_FAILURE) raise(E.invalidState);
        setState("recording");
        return ok();
      },
      subscribe: (req, call) => {
        // subscribe is optional: without subscribe true the state is answered once, nothing is kept.
        if (req.subscribe !== true || !call.subscription) return ok({ subscribed: false, state });
        if (ctx.topics.count(EVENTS) >= options.maxSubscribers) {
          log.warn({ max: options.maxSubscribers, caller: call.caller.name }, "subscribe refused: the pipeline has its most subscribers");
          raise(E.subscriptionAddFail);
        }
        ctx.topics.add(EVENTS, call.subscription);
        return ok({ subscribed: true, state });
      },
    },
    /** The service is stopping: a recording is finished (end-of-stream, at most shutdownEosMs) rather than cut. */
    async stop() {
      const r = rec;
      if (!r) return;
      if (r.error === undefined && !r.eos && (state === "recording" || state === "paused")) {
        const done = waitFor(r, (m) => m.type === "eos" || m.type === "error", options.shutdownEosMs);
        if (r.pipeline.state().current !== "playing") r.pipeline.setState(gst.GST_STATE_PLAYING);
        r.pipeline.sendEos();
        if (!(await done)) log.warn({ path: r.path, timeoutMs: options.shutdownEosMs }, "stopping: the recording is cut at its last fragment");
        else log.info({ path: r.path }, "stopping: recording saved");
      }
      release(r);
      await r.closing;
      setState("stopped");
    },
  };
}

/** The family: hosted as one instance per pipeline ID of the board recipe. */
export default defineService({
  spec: {
    name: "record",
    busName: `${BUS_PREFIX}.<pipeline_id>`,
    description:
      "Recording pipeline: one instance per pipeline ID of the board recipe (com.vendor.pipeline.record.<id>), recording video and audio to fragmented MP4 or an image to JPEG through GStreamer.",
    api,
    badRequest: (method) => answer(row(BAD_REQUEST, method)),
    internalError: (method) => answer(row(INTERNAL, method)),
    denied,
  },
  create() {
    throw new Error("the recording pipeline is hosted as its instances (com.vendor.pipeline.record.<id>)");
  },
  instances: (board: Board) => {
    const recipe = readRecipe(board);
    return recipe.pipelines.map((id) => instance(id, recipe));
  },
});
