// Video output service (spec part 1, com.vendor.service.videooutput, retired since
// API level 23): sinks (MAIN, SUB0, ...) mapped to display planes by the board
// recipe; connect gives a sink's plane a framebuffer, setVideoData the frame's size,
// setDisplayWindow its source crop and output rectangle, setCompositing its alpha and
// zpos, and getStatus subscribers get the whole sink list on every change (each
// entry says what the client has set: nothing right after connect, as upstream). For the media framework only
// (root or the access group). The display is DRM/KMS on linux boards and a simulated
// one with two planes on the virtual board. A registered context belongs to the uid
// that registered it and lives until unregistered (a lease of uidOwner): only that
// uid or root may use, change or remove it. Decisions: docs/decisions/videooutput.md.
import { answersIn, ServiceError } from "../../core/errors";
import { group } from "../../core/access";
import { defineService, type Caller } from "../../core/service";
import { uidOwner, type Lease } from "../../core/leases";
import { Throttle } from "../../core/log";
import { api, LIMITS, limitText, type Rect, type Size, type VideoT } from "./schemas";
import { CONNECT, E } from "./errors";
import { loadVideoOutputOptions, type SinkConfigT } from "./config";
import { HalError, type VideoBackend, type Window } from "./backend/types";
import { VirtualDisplay } from "./backend/virtual";
import { DrmDisplay } from "./backend/linux";

const STATUS = "status";
/** Lease key of a registered context. */
const contextKey = (context: string) => `context/${context}`;

/** A failure response: errorCode and errorMessage (the spec's fields for this service). */
const { answer, refuse } = answersIn("errorMessage");

/**
 * The rows a method's requests are refused with before its handler: connect answers
 * the spec's codes for connect (CONNECT), the other methods the original set.
 */
const rowsFor = (method: string) =>
  method === "connect"
    ? { schema: CONNECT.schema, range: CONNECT.invalidValue, unknown: CONNECT.unknown, denied: CONNECT.permission }
    : { schema: E.schema, range: E.invalidParams, unknown: E.unknown, denied: E.unknown };

interface Sink {
  cfg: SinkConfigT;
  connected: boolean;
  source: string | null;
  sourcePort: number;
  context?: string;
  planeId?: number;
  /** The video's frame as setVideoData gave it (the status's width and height); 0x0 until then. */
  frame: Size;
  /** The plane's framebuffer: the display's size from connect, the frame's from setVideoData. */
  fb: Size;
  frameRate: number;
  contentType: string;
  scanType: string;
  fullScreen: boolean;
  /** The source crop, in framebuffer pixels; null: the whole framebuffer. */
  src: Rect | null;
  /** The output rectangle setDisplayWindow gave; null until then (the plane covers the display, the status says zero). */
  dst: Rect | null;
  opacity: number;
  zOrder: number;
}

const zero = (): Rect => ({ x: 0, y: 0, width: 0, height: 0 });

export default defineService({
  spec: {
    name: "videooutput",
    busName: "com.vendor.service.videooutput",
    description:
      "Video output (retired since API level 23): connects a video source to a sink (a display plane), sets its source crop, output window and compositing, and reports every sink's status. For the media framework only.",
    api,
    // A value outside the spec's limits is an invalid parameter, said in a sentence
    // naming the field; anything else the schema refuses is a schema error.
    invalid: {
      default: {
        range: (v) => ({ ...rowsFor(v.method).range, text: `${rowsFor(v.method).range.text}: ${limitText(v.path)}` }),
        invalid: (v) => rowsFor(v.method).schema,
      },
    },
    answer: (_method, row) => answer(row),
    badRequest: (method) => answer(rowsFor(method).schema),
    internalError: (method) => answer(rowsFor(method).unknown),
    denied: (method) => answer(rowsFor(method).denied, `Permission denied: ${method} is for the media framework (root and the service's access group)`),
  },

  create(ctx) {
    const loaded = loadVideoOutputOptions(ctx.config);
    for (const problem of loaded.problems) ctx.log.warn({ file: loaded.file, problem }, "videooutput configuration: line ignored");
    const o = loaded.config;
    const backend: VideoBackend = ctx.board.backend === "linux"
      ? new DrmDisplay({ card: o.card, connector: o.connector, commit: o.commit }, ctx.log)
      : new VirtualDisplay(o.display, Math.max(2, ...o.sinks.map((s) => s.plane + 1)));
    const planeCount = backend.planeIds().length;
    const sinks = new Map<string, Sink>();
    for (const [i, cfg] of o.sinks.entries()) {
      if (cfg.plane >= planeCount) {
        ctx.log.warn({ sink: cfg.sink, plane: cfg.plane, planes: planeCount }, "sink left out: the display has no such plane");
        continue;
      }
      sinks.set(cfg.sink, {
        cfg, connected: false, source: null, sourcePort: 0, frame: { width: 0, height: 0 }, fb: { width: 0, height: 0 }, frameRate: 0,
        contentType: "unknown", scanType: "unknown", fullScreen: false, src: null, dst: null, opacity: 255, zOrder: i,
      });
    }
    // Registered contexts are the service's leases (contextKey, owned by the registering
    // uid until unregister), its only ones: the registry is their one record.
    // A client can repeat a refused call at will: one line per uid and kind per 10 s, with the count held back.
    const refusals = new Throttle();
    ctx.log.info({ backend: backend.kind, commit: backend.commit, planes: planeCount, sinks: [...sinks.keys()] }, "video output ready");

    const entry = (s: Sink): VideoT => {
      const v: VideoT = {
        connected: s.connected,
        connectedSource: s.source,
        connectedSourcePort: s.sourcePort,
        contentType: s.contentType,
        displayOutput: s.dst ? { ...s.dst } : zero(),
        frameRate: s.frameRate,
        fullScreen: s.fullScreen,
        height: s.frame.height,
        width: s.frame.width,
        muted: false,
        opacity: s.opacity,
        scanType: s.scanType,
        sink: s.cfg.sink,
        // Zero until a window is set (as upstream); then the crop, or the whole framebuffer.
        sourceInput: s.src ? { ...s.src } : s.dst ? { x: 0, y: 0, ...s.fb } : zero(),
        zOrder: s.zOrder,
      };
      if (s.context !== undefined) v.context = s.context;
      return v;
    };
    const list = () => [...sinks.values()].map(entry);
    let last = JSON.stringify(list());
    const changed = () => {
      const video = list();
      const now = JSON.stringify(video);
      if (now === last) return;
      last = now;
      ctx.topics.publish(STATUS, { returnValue: true, video, videoInfo: null });
    };

    const sinkOf = (name: string | undefined): Sink => {
      const s = name === undefined ? undefined : sinks.get(name);
      if (!s) refuse(E.invalidParams, name === undefined ? "sink is required" : `Invalid parameters: no sink ${name} (sinks: ${[...sinks.keys()].join(", ")})`);
      return s!;
    };
    /**
     * A registered context the caller may use: its uid's, or any for root (the lease
     * registry decides). 5 when not registered, 1 (Permission denied) when another uid's;
     * for connect, 54 and 67.
     */
    const usable = (caller: Caller, context: string, method?: "connect"): Lease => {
      const l = ctx.leases.forActor(caller, contextKey(context));
      if (l === "free") {
        return method === "connect"
          ? refuse(CONNECT.contextNotRegistered, `${CONNECT.contextNotRegistered.text}: ${context}`)
          : refuse(E.invalidStatus, `Invalid status: context ${context} is not registered`);
      }
      if (l === "others") {
        refusals.log(`${caller.uid} context`, (repeated) =>
          ctx.log.warn({ context, caller: caller.name, uid: caller.uid, ...(repeated ? { repeated } : {}) }, "context of another uid refused"),
        );
        return refuse(method === "connect" ? CONNECT.permission : E.unknown, `Permission denied: context ${context} belongs to another user`);
      }
      return l;
    };
    /** A connected sink; one connected under a context is for the context's uid (and root) only. */
    const connectedSink = (caller: Caller, name: string, context?: string): Sink => {
      const s = sinkOf(name);
      if (!s.connected) refuse(E.notConnected, `Video not connected: ${name}`);
      if (context !== undefined && s.context !== context) refuse(E.invalidStatus, `Invalid status: ${name} is not connected under context ${context}`);
      if (s.context !== undefined) usable(caller, s.context);
      return s;
    };
    const halFailure = (what: string, e: unknown): never => {
      if (e instanceof ServiceError) throw e;
      if (!(e instanceof HalError)) throw e;
      ctx.log.warn({ err: e.message, errno: e.errno }, `${what}: the display refused`);
      return refuse(E.hal, `HAL error: ${e.message}`);
    };
    const display = () => backend.display();
    const full = (): Rect => ({ x: 0, y: 0, width: display().width, height: display().height });
    /** What the plane shows: the crop (whole framebuffer when none) on the output rectangle (the whole display when none set). */
    const windowOf = (s: Sink, fb = s.fb, src = s.src, dst = s.dst): Window => ({ src: src ?? { x: 0, y: 0, ...fb }, dst: dst ?? full() });

    /** The spec's scaling limits of the sink's plane (VideoSize of getOutputCapabilities). */
    const checkScaling = (s: Sink, w: Window) => {
      const { maxDownscaleSize: down, maxUpscaleSize: up } = s.cfg;
      const shrinks = w.dst.width < w.src.width || w.dst.height < w.src.height;
      const grows = w.dst.width > w.src.width || w.dst.height > w.src.height;
      if (shrinks && (w.dst.width < down.width || w.dst.height < down.height)) {
        refuse(E.downscaleLimit, `Downscale limit exceeded: ${s.cfg.sink} scales down to at least ${down.width}x${down.height}`);
      }
      if (grows && (w.dst.width > up.width || w.dst.height > up.height)) {
        refuse(E.upscaleLimit, `Upscale limit exceeded: ${s.cfg.sink} scales up to at most ${up.width}x${up.height}`);
      }
    };
    // A crop is bounded by the frame (a DCI 4K frame is cropped up to 4096x2160), an
    // output rectangle by the spec's 3840x2160.
    const checkRect = (what: "sourceInput" | "displayOutput", r: Rect, bounds: Size) => {
      if (r.width < 1 || r.height < 1) refuse(E.invalidParams, `Invalid parameters: ${what} must be at least 1x1`);
      if (what === "displayOutput" && (r.width > LIMITS.width[1] || r.height > LIMITS.height[1])) {
        refuse(E.invalidParams, `Invalid parameters: ${what} must be 1x1 to ${LIMITS.width[1]}x${LIMITS.height[1]}`);
      }
      if (what === "sourceInput" && (r.x < 0 || r.y < 0 || r.x + r.width > bounds.width || r.y + r.height > bounds.height)) {
        refuse(E.invalidParams, `Invalid parameters: sourceInput must lie within the ${bounds.width}x${bounds.height} frame`);
      }
      if (what === "displayOutput" && (r.x >= bounds.width || r.y >= bounds.height || r.x + r.width <= 0 || r.y + r.height <= 0)) {
        refuse(E.invalidParams, `Invalid parameters: displayOutput must overlap the ${bounds.width}x${bounds.height} display`);
      }
    };

    /**
     * Handlers run one at a time: each may wait for the display (an atomic commit's
     * completion), and the next must see the state the previous one left.
     */
    let chain: Promise<unknown> = Promise.resolve();
    const serial = <T>(fn: () => Promise<T> | T): Promise<T> => {
      const r = chain.then(fn);
      chain = r.catch(() => {});
      return r;
    };

    /** Turns a sink's plane off and forgets its connection (on disconnect, unregister, a new context). */
    const release = async (s: Sink, why: string) => {
      if (!s.connected) return;
      try {
        await backend.detach(s.cfg.plane);
      } catch (e) {
        ctx.log.warn({ err: (e as Error).message, sink: s.cfg.sink }, "turning the plane off failed");
        if (why === "disconnect") throw e;
      }
      Object.assign(s, {
        connected: false, source: null, sourcePort: 0, context: undefined, planeId: undefined, frame: { width: 0, height: 0 },
        fb: { width: 0, height: 0 }, frameRate: 0, contentType: "unknown", scanType: "unknown", fullScreen: false, src: null, dst: null,
      });
      ctx.log.info({ sink: s.cfg.sink, why }, "sink disconnected");
    };

    const dropContext = async (context: string, why: string) => {
      for (const s of sinks.values()) if (s.connected && s.context === context) await release(s, why);
    };

    return {
      // A board recipe or videooutput.conf may widen the rule ("*": any caller); the runtime logs it.
      access: Object.fromEntries(Object.keys(api).map((m) => [m, group(o.accessGroup)])),

      handlers: {
        // connect's failures are the spec's codes for connect (CONNECT; 20 the driver's refusal).
        connect: (req, call) => serial(async () => {
          const s = sinks.get(req.sink) ?? refuse(CONNECT.unknownSink, `${CONNECT.unknownSink.text}: ${req.sink} (sinks: ${[...sinks.keys()].join(", ")})`);
          if (req.context !== undefined) usable(call.caller, req.context, "connect");
          if (s.connected && (req.context === undefined || s.context === undefined || s.context === req.context)) {
            refuse(CONNECT.sinkConnected, `${CONNECT.sinkConnected.text}: ${req.sink}${s.context ? ` (context ${s.context})` : ""}`);
          }
          // Signage: one context connected at a time; connecting B disconnects A.
          if (req.context !== undefined) {
            for (const other of sinks.values()) {
              if (other.connected && other.context !== undefined && other.context !== req.context) await release(other, `context ${req.context} connected`);
            }
          }
          // Until the client sets them (setVideoData, setDisplayWindow) the plane shows a
          // framebuffer of the display's size over the whole display, while the status
          // says what the client set: nothing yet (fullScreen false, zero rectangles, 0x0).
          const fb = { width: display().width, height: display().height };
          let planeId: number;
          try {
            planeId = await backend.attach(s.cfg.plane, fb, windowOf(s, fb, null, null), { opacity: s.opacity, zOrder: s.zOrder });
          } catch (e) {
            changed();
            return halFailure(`connect ${req.sink}`, e);
          }
          Object.assign(s, {
            connected: true, source: req.source, sourcePort: req.sourcePort ?? 0, context: req.context, planeId,
            frame: { width: 0, height: 0 }, fb, frameRate: 0, contentType: "unknown", scanType: "unknown", fullScreen: false, src: null, dst: null,
          });
          ctx.log.info({ sink: s.cfg.sink, source: req.source, context: req.context, planeId, caller: call.caller.name }, "sink connected");
          changed();
          return { returnValue: true, planeID: planeId };
        }),

        disconnect: (req, call) => serial(async () => {
          const s = connectedSink(call.caller, req.sink, req.context);
          try {
            await release(s, "disconnect");
          } catch (e) {
            return halFailure(`disconnect ${req.sink}`, e);
          }
          changed();
          return { returnValue: true };
        }),

        "display/getOutputCapabilities"() {
          return {
            returnValue: true,
            numPlanes: planeCount,
            planes: [...sinks.values()].map((s) => ({ sinkId: s.cfg.sink, maxDownscaleSize: { ...s.cfg.maxDownscaleSize }, maxUpscaleSize: { ...s.cfg.maxUpscaleSize } })),
          };
        },

        "display/getParam"(req) {
          if (req.command === "NumConnector") return { returnValue: true, numConnector: backend.connectedCount() };
          if (req.command !== "DRMResources") refuse(E.notImplemented, `Not implemented: command ${req.command} (NumConnector, DRMResources)`);
          const s = sinkOf(req.sink);
          const d = display();
          return { returnValue: true, sink: s.cfg.sink, planeId: backend.planeIds()[s.cfg.plane]!, crtcId: d.crtcId, connId: d.connectorId };
        },

        "display/setCompositing": (req, call) => serial(async () => {
          const orders = Array.isArray(req.composeOrder) ? req.composeOrder : [req.composeOrder];
          const next = new Map([...sinks.values()].map((s) => [s.cfg.sink, { opacity: s.opacity, zOrder: s.zOrder }]));
          const seen = new Set<string>();
          for (const c of orders) {
            const s = sinkOf(c.sink);
            if (seen.has(c.sink)) refuse(E.invalidParams, `Invalid parameters: sink ${c.sink} given twice`);
            seen.add(c.sink);
            // Registration is optional: a context nobody registered names the composing
            // pipeline only; a registered one must be the caller's (or root's), and so
            // must the context a connected sink is under.
            if (ctx.leases.holders(contextKey(c.context)).length) usable(call.caller, c.context);
            if (s.connected && s.context !== undefined) usable(call.caller, s.context);
            if (c.zOrder > sinks.size - 1) refuse(E.invalidParams, `Invalid parameters: zOrder is 0 to ${sinks.size - 1} with ${sinks.size} sinks`);
            next.set(s.cfg.sink, { opacity: c.opacity, zOrder: c.zOrder });
          }
          const z = [...next.values()].map((v) => v.zOrder);
          if (new Set(z).size !== z.length) {
            refuse(E.invalidParams, `Invalid parameters: zOrder must be unique per sink (${[...next].map(([k, v]) => `${k}=${v.zOrder}`).join(", ")})`);
          }
          const changes = [...seen].map((name) => ({ planeIndex: sinks.get(name)!.cfg.plane, ...next.get(name)! }));
          let applied;
          try {
            applied = await backend.setCompositing(changes);
          } catch (e) {
            return halFailure("setCompositing", e);
          }
          if (!applied.alpha || !applied.zpos) ctx.log.debug({ applied }, "planes without alpha or zpos: kept in the status only");
          for (const name of seen) Object.assign(sinks.get(name)!, next.get(name)!);
          changed();
          return { returnValue: true };
        }),

        "display/setDisplayWindow": (req, call) => serial(async () => {
          const s = connectedSink(call.caller, req.sink);
          const src = req.sourceInput ?? null;
          if (src) checkRect("sourceInput", src, s.fb);
          let dst: Rect;
          if (req.fullScreen) dst = full();
          else {
            if (!req.displayOutput) refuse(E.invalidParams, "Invalid parameters: displayOutput is required when fullScreen is false");
            dst = req.displayOutput!;
            checkRect("displayOutput", dst, display());
          }
          const w = windowOf(s, s.fb, src, dst);
          checkScaling(s, w);
          try {
            await backend.setWindow(s.cfg.plane, w);
          } catch (e) {
            return halFailure(`setDisplayWindow ${req.sink}`, e);
          }
          Object.assign(s, { src, dst: { ...dst }, fullScreen: req.fullScreen });
          changed();
          return { returnValue: true };
        }),

        // After the changes already asked for, so a caller reads what its last call did.
        getStatus: (_req, call) => serial(() => {
          const video = list();
          if (call.subscription) {
            ctx.topics.add(STATUS, call.subscription, { shared: true }); // every sink's status, the same for the whole group: shared
            return { returnValue: true, subscribed: true, video, videoInfo: null };
          }
          return { returnValue: true, video, videoInfo: null };
        }),

        // Spec: luna-style clients register from one one-shot call and connect from
        // others, so a context is its uid's (never released when a connection goes)
        // until unregister; bounded per board by maxContexts.
        register: (req, call) => serial(() => {
          if (ctx.leases.holders(contextKey(req.context)).length) refuse(E.invalidStatus, `Invalid status: context ${req.context} is already registered`);
          if (ctx.leases.count() >= o.maxContexts) {
            refusals.log(`${call.caller.uid} maxContexts`, (repeated) =>
              ctx.log.warn(
                { context: req.context, caller: call.caller.name, uid: call.caller.uid, maxContexts: o.maxContexts, ...(repeated ? { repeated } : {}) },
                "context refused: maxContexts reached",
              ),
            );
            refuse(E.invalidStatus, `Invalid status: ${o.maxContexts} contexts are registered, the most this board allows (maxContexts)`);
          }
          ctx.leases.take(uidOwner(call.caller.uid), contextKey(req.context));
          ctx.log.info({ context: req.context, caller: call.caller.name, uid: call.caller.uid }, "context registered");
          return { returnValue: true };
        }),

        setVideoData: (req, call) => serial(async () => {
          const s = connectedSink(call.caller, req.sink, req.context);
          for (const [field, value, most, key] of [
            ["width", req.width, o.maxFrameWidth, "maxFrameWidth"], ["height", req.height, o.maxFrameHeight, "maxFrameHeight"],
          ] as const) {
            if (value < 1) refuse(E.invalidParams, `Invalid parameters: ${field} must be at least 1`);
            // The sink's plane gets a framebuffer of the frame's size: bounded per board.
            if (value > most) refuse(E.invalidParams, `Invalid parameters: ${field} ${value} is more than this board's frames take, ${most} (${key})`);
          }
          const frame = { width: req.width, height: req.height };
          // A crop that no longer fits the frame goes back to the whole frame.
          const src = s.src && s.src.x + s.src.width <= frame.width && s.src.y + s.src.height <= frame.height ? s.src : null;
          const w = windowOf(s, frame, src, s.dst);
          checkScaling(s, w);
          if (frame.width !== s.fb.width || frame.height !== s.fb.height || src !== s.src) {
            try {
              await backend.resize(s.cfg.plane, frame, w);
            } catch (e) {
              return halFailure(`setVideoData ${req.sink}`, e);
            }
          }
          Object.assign(s, {
            frame, fb: frame, src, frameRate: req.frameRate, contentType: req.contentType ?? s.contentType, scanType: req.scanType ?? s.scanType,
          });
          changed();
          return { returnValue: true };
        }),

        unregister: (req, call) => serial(async () => {
          usable(call.caller, req.context).release();
          try {
            await dropContext(req.context, `context ${req.context} unregistered`);
          } finally {
            changed();
          }
          ctx.log.info({ context: req.context, caller: call.caller.name, uid: call.caller.uid }, "context unregistered");
          return { returnValue: true };
        }),
      },

      stop() {
        // close() gives every plane back.
        ctx.topics.end(STATUS);
        backend.close();
      },
    };
  },
});
