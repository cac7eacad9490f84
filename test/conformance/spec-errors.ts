// The spec's request fields marked optional, and its error codes, per method of all
// ten services, transcribed from /work/shared/spec/ (part 1: intent, video output,
// network tools, test automation; part 2: file cache, power, recording pipeline,
// camera; part 3: peripheral manager, media indexer), with the section of each
// entry. test/conformance/sweep.test.ts joins this table with the services' method
// tables (src/services/index.ts): a method without a row, a spec code without a
// case, or a response without returnValue fails it.
//
// Where the spec's error table is the service's and not per method (power, test
// automation, intent, the network tools' "general" rows), each code is attached to
// the methods whose condition the spec names (power's 5: a late ack; 2: every
// method, malformed JSON; test automation's observed behaviours), else to the
// methods whose condition it is by its meaning.
//
// Each code is one of:
//   cause      a scenario that makes the service answer it, over the bus, for real;
//   hardware   why it cannot be caused on this host (the sweep then checks that the
//              service's error table has the code with the spec's text);
//   elsewhere  a condition this host cannot offer without changing the shared host
//              (its network, its links), caused by the named test in a namespace of
//              its own, or a caller of another uid, which the sweep's clients are
//              not, caused by the named test through setpriv; the sweep checks the
//              error table as for hardware;
//   deviation  the service does not answer the spec's code: what it does instead.
import type { Json } from "../../src/core/errors";

export interface Sub {
  first: Json;
  pushes: Json[];
  cancel(): Promise<void>;
}

/** What a scenario gets: two fresh clients (a, b) per method, closed after it. */
export interface Ctx {
  call(service: string, method: string, payload?: Json | string, who?: "a" | "b"): Promise<Json>;
  subscribe(service: string, method: string, payload: Json, who?: "a" | "b"): Promise<Sub>;
  /** A directory for files (captures, recordings, cache copies). */
  dir: string;
  /** The virtual camera plug directory: a file plugs a camera. */
  plugDir: string;
  /** The capture directory of the camera service. */
  captureDir: string;
  until(fn: () => boolean | Promise<boolean>, ms?: number): Promise<void>;
  /** A name unique in this run. */
  unique(prefix: string): string;
}

export type Code =
  | { code: number | null; text?: string; cause: (t: Ctx) => Promise<Json> }
  | { code: number | null; text?: string; hardware: string }
  | { code: number | null; text?: string; elsewhere: string }
  | { code: number | null; text?: string; deviation: string };

export interface Row {
  /** The spec's section of the method (and of its errors). */
  section: string;
  /** Request fields the spec marks optional. */
  optional?: string[];
  /** A payload that lacks `without` and has what the method requires (default `{}`), after any set-up it needs. */
  base?: (t: Ctx, without: string) => Promise<Json | undefined>;
  /** Undoes what the base calls made (a connection, a recording). */
  after?: (t: Ctx) => Promise<void>;
  errors?: Code[];
  /** Subscribable methods: a subscription and what makes it push (each push is checked for returnValue). */
  push?: { payload: (t: Ctx) => Promise<Json>; trigger: (t: Ctx, first: Json) => Promise<void>; after?: (t: Ctx) => Promise<void> };
  /** Or why no push is caused here. */
  noPush?: string;
  /** Known deviations of a service from the spec, each naming what the spec says and what the service does. */
  deviations?: {
    /** The method's responses lack returnValue. */
    returnValue?: string;
    /** Its pushes lack returnValue. */
    pushReturnValue?: string;
  };
  /** Why the answer without an optional field cannot be told from the schema failure's (the schema check alone then shows the field optional). */
  sameAnswerAsSchemaFailure?: string;
}

// ---- shared scenario pieces -------------------------------------------------------------
const CAM = "camera2";
const REC = "com.vendor.pipeline.record.main";
const POWER = "power2";
const FC = "filecache";
const TA = "testautomation";

const openCamera = async (t: Ctx, who: "a" | "b" = "a", id = "camera1") => (await t.call(CAM, "open", { id }, who)).handle as number;
const startedCamera = async (t: Ctx, who: "a" | "b" = "a") => {
  const handle = await openCamera(t, who);
  await t.call(CAM, "startCamera", { handle }, who);
  return handle;
};
/** Plugs a camera into the virtual board; resolves with its ID and the unplug. */
const plugCamera = async (t: Ctx) => {
  const name = t.unique("usb");
  const file = `${t.plugDir}/${name}`;
  await Bun.write(file, `${name}\n`);
  // Found by its name (getInfo): IDs are reused once a camera goes.
  let id = "";
  await t.until(async () => {
    for (const d of (await t.call(CAM, "getCameraList", {})).deviceList as Json[]) {
      const info = (await t.call(CAM, "getInfo", { id: d.id as string })).info as Json | undefined;
      if (info?.name === name) id = d.id as string;
    }
    return id !== "";
  }, 3000);
  const { rmSync } = await import("node:fs");
  return { id, unplug: () => rmSync(file, { force: true }) };
};
const AUDIO = { codec: "AAC", sampleRate: 48000, channelCount: 2, bitRate: 128_000 };
const VIDEO = { videoSrc: "camera1", width: 320, height: 240, codec: "H264", fps: 30, bitRate: 500_000 };
const IMAGE = { videoSrc: "camera1", codec: "JPEG", width: 64, height: 48, quality: 50 };
const stopRecording = async (t: Ctx) => {
  await t.call(REC, "stop", {});
};
const fcType = async (t: Ctx, extra: Json = {}) => {
  const typeName = t.unique("conf");
  const r = await t.call(FC, "DefineType", { typeName, loWatermark: 0, hiWatermark: 1 << 20, size: 100, ...extra });
  if (r.returnValue !== true) throw new Error(`DefineType ${typeName}: ${JSON.stringify(r)}`);
  return typeName;
};
const fcObject = async (t: Ctx, subscribe = false) => {
  const typeName = await fcType(t);
  const r = subscribe
    ? (await t.subscribe(FC, "InsertCacheObject", { typeName, fileName: "o.txt", size: 100 })).first
    : await t.call(FC, "InsertCacheObject", { typeName, fileName: "o.txt", size: 100 });
  return { typeName, pathName: r.pathName as string };
};
/** A test automation stage: a nub subscribed to commands as client b. */
const stage = async (t: Ctx) => {
  const s = await t.subscribe(TA, "subscribeToCommands", { appInfo: { id: "com.example.app" }, name: "main", scene: "s", type: "qml" }, "b");
  return s.first.stageId as number;
};
const VLAN = (extra: Json = {}) => ({ index: 5, interface: { name: "lo" }, ...extra });
const BAD_JSON = "{not json";
const nettools102 = { code: 102, text: "Could not validate json message against schema", cause: (t: Ctx) => t.call("nettools", "ping", BAD_JSON) };
const nt102 = (method: string): Code => ({ ...nettools102, cause: (t) => t.call("nettools", method, BAD_JSON) });
const power2 = (method: string): Code => ({ code: 2, text: "Invalid JSON format", cause: (t) => t.call(POWER, method, BAD_JSON) });
const mi = (method: string, payload: Json | string, code: number, text: string): Code => ({ code, text, cause: (t) => t.call("mediaindexer", method, payload) });
const notHandled = (method: string, payload: Json | string = { uri: 7 }) => mi(method, payload, -1, `Method '${method}' for category '/' was not handled`);
const parseFailure = (method: string) => mi(method, BAD_JSON, -1, "JSON parsing failed");

// ---- the table --------------------------------------------------------------------------
const P1 = "Part 1";
const P2 = "Part 2";
const P3 = "Part 3";

export const SPEC: Record<string, Record<string, Row>> = {
  // ===================================== camera ============================================
  camera2: {
    capture: {
      section: `${P2}, Endpoints: Camera; Errors: Camera (codes per method: capture 20, 22, 39, 45, 47)`,
      optional: ["nimage", "path"],
      base: async (t) => ({ handle: await startedCamera(t) }),
      errors: [
        { code: 20, text: "Parsing error", cause: async (t) => t.call(CAM, "capture", { handle: await startedCamera(t), nimage: "two" }) },
        { code: 22, text: "Out of param range", cause: async (t) => t.call(CAM, "capture", { handle: await startedCamera(t), nimage: 31 }) },
        {
          code: 39,
          text: "Fail to write file",
          // captureNameTries is 2 in the sweep: the names of the next seconds are taken.
          cause: async (t) => {
            const handle = await startedCamera(t);
            const { pictureBase } = await import("../../src/services/camera/service");
            for (let s = 0; s < 4; s++) {
              const base = pictureBase(new Date(Date.now() + s * 1000));
              for (const f of [`${base}.jpg`, `${base}-1.jpg`]) await Bun.write(`${t.captureDir}/${f}`, "taken");
            }
            return t.call(CAM, "capture", { handle, path: t.captureDir });
          },
        },
        { code: 45, text: "Cannot write at specified location", cause: async (t) => t.call(CAM, "capture", { handle: await startedCamera(t), path: "/nonexistent/dir" }) },
        { code: 47, text: "Wrong handle", cause: (t) => t.call(CAM, "capture", { handle: 808 }) },
      ],
    },
    close: {
      section: `${P2}, Errors: Camera (close 20, 200)`,
      errors: [
        { code: 20, text: "Parsing error", cause: (t) => t.call(CAM, "close", BAD_JSON) },
        {
          code: 200,
          text: "Invalid state",
          cause: async (t) => {
            const handle = await openCamera(t);
            await t.call(CAM, "close", { handle });
            return t.call(CAM, "close", { handle });
          },
        },
      ],
    },
    getCameraList: {
      section: `${P2}, Endpoints: Camera; Events: Camera list change`,
      optional: ["subscribe"],
      push: {
        payload: async () => ({}),
        trigger: async (t) => {
          const cam = await plugCamera(t);
          cam.unplug();
        },
      },
    },
    getEventNotification: {
      section: `${P2}, Endpoints: Camera; Events: Camera event (preview_fault)`,
      push: {
        payload: async () => ({}),
        // A previewing camera unplugged: its preview failed.
        trigger: async (t) => {
          const cam = await plugCamera(t);
          const handle = await openCamera(t, "a", cam.id);
          const r = await t.call(CAM, "startPreview", { handle, windowId: "window0" });
          if (r.returnValue !== true) throw new Error(`startPreview: ${JSON.stringify(r)}`);
          cam.unplug();
        },
      },
    },
    getFd: {
      section: `${P2}, Errors: Camera (getFd 20, 47, 200)`,
      errors: [
        { code: 20, text: "Parsing error", cause: (t) => t.call(CAM, "getFd", { handle: "one", type: "buffer" }) },
        { code: 47, text: "Wrong handle", cause: (t) => t.call(CAM, "getFd", { handle: 999, type: "buffer" }) },
        { code: 200, text: "Invalid state", cause: async (t) => t.call(CAM, "getFd", { handle: await openCamera(t), type: "buffer" }) },
      ],
    },
    getFormat: {
      section: `${P2}, Endpoints: Camera; Events: Camera subscription ended (100)`,
      optional: ["subscribe"],
      base: async (t) => (await openCamera(t), { id: "camera1" }),
      errors: [
        {
          code: 100,
          text: "The subscribed camera is disconnected",
          cause: async (t) => {
            const cam = await plugCamera(t);
            await openCamera(t, "a", cam.id);
            const s = await t.subscribe(CAM, "getFormat", { id: cam.id }, "b");
            cam.unplug();
            await t.until(() => s.pushes.some((m) => m.returnValue === false), 3000);
            return s.pushes.find((m) => m.returnValue === false)!;
          },
        },
      ],
      push: {
        payload: async (t) => ((PRIMARY.handle = await openCamera(t)), { id: "camera1" }),
        trigger: async (t) => {
          await t.call(CAM, "setFormat", { handle: PRIMARY.handle, params: { width: 640, height: 480, format: "YUV", fps: 15 } });
        },
      },
    },
    getInfo: { section: `${P2}, Endpoints: Camera` },
    getProperties: {
      section: `${P2}, Endpoints: Camera; Events: Camera subscription ended (100)`,
      optional: ["params", "subscribe"],
      base: async (t) => (await openCamera(t), { id: "camera1" }),
      errors: [
        {
          code: 100,
          text: "The subscribed camera is disconnected",
          cause: async (t) => {
            const cam = await plugCamera(t);
            await openCamera(t, "a", cam.id);
            const s = await t.subscribe(CAM, "getProperties", { id: cam.id }, "b");
            cam.unplug();
            await t.until(() => s.pushes.some((m) => m.returnValue === false), 3000);
            return s.pushes.find((m) => m.returnValue === false)!;
          },
        },
      ],
      push: {
        payload: async (t) => ((PRIMARY.handle = await openCamera(t)), { id: "camera1" }),
        trigger: async (t) => {
          await t.call(CAM, "setProperties", { handle: PRIMARY.handle, params: { brightness: { value: 3 } } });
        },
      },
    },
    getSolutions: {
      section: `${P2}, Errors: Camera (getSolutions 11, 32, 35, 47)`,
      optional: ["handle", "id"],
      base: async (t, without) => {
        const handle = await openCamera(t);
        return without === "handle" ? { id: "camera1" } : { handle };
      },
      errors: [
        { code: 11, text: "Device not opened", cause: (t) => t.call(CAM, "getSolutions", { id: "camera1" }) },
        { code: 32, text: "Wrong param", cause: (t) => t.call(CAM, "getSolutions", {}) },
        { code: 35, text: "Unknown error", hardware: "a failure inside the service (an exception no request causes): the handlers' catch-all; nothing a caller sends reaches it" },
        { code: 47, text: "Wrong handle", cause: (t) => t.call(CAM, "getSolutions", { handle: 999 }) },
      ],
    },
    open: {
      section: `${P2}, Errors: Camera (open 13, 20, 44, 51)`,
      optional: ["mode", "appId"],
      base: async () => ({ id: "camera1" }),
      errors: [
        { code: 13, text: "There is no device", cause: (t) => t.call(CAM, "open", { id: "camera9" }) },
        { code: 20, text: "Parsing error", cause: (t) => t.call(CAM, "open", { id: "camera1", mode: "exclusive" }) },
        { code: 44, text: "Already another device opened as primary", cause: async (t) => (await openCamera(t, "a"), t.call(CAM, "open", { id: "camera1" }, "b")) },
        {
          code: 51,
          text: "Failed to register pid with specified signal",
          deviation:
            "camera2 (one of the three services of this sweep's owner): the original service's pid/signal registration is replaced by an eventfd (getFd type event), so 51 is never answered; docs/decisions/camera.md, 'getFd'",
        },
      ],
    },
    setFormat: { section: `${P2}, Endpoints: Camera` },
    setProperties: { section: `${P2}, Endpoints: Camera` },
    setSolutions: {
      section: `${P2}, Errors: Camera (setSolutions 11, 32, 35, 47)`,
      optional: ["handle", "id"],
      base: async (t, without) => {
        const handle = await openCamera(t);
        return without === "handle" ? { id: "camera1", solutions: [] } : { handle, solutions: [] };
      },
      errors: [
        { code: 11, text: "Device not opened", cause: (t) => t.call(CAM, "setSolutions", { id: "camera1", solutions: [] }) },
        { code: 32, text: "Wrong param", cause: async (t) => t.call(CAM, "setSolutions", { handle: await openCamera(t), solutions: [{ name: "NoSuchSolution", params: { enable: true } }] }) },
        { code: 35, text: "Unknown error", hardware: "a failure inside the service (an exception no request causes): the handlers' catch-all; nothing a caller sends reaches it" },
        { code: 47, text: "Wrong handle", cause: (t) => t.call(CAM, "setSolutions", { handle: 999, solutions: [] }) },
      ],
    },
    startCamera: {
      section: `${P2}, Errors: Camera (startCamera 20, 32, 200)`,
      errors: [
        { code: 20, text: "Parsing error", cause: (t) => t.call(CAM, "startCamera", { handle: "one" }) },
        { code: 32, text: "Wrong param", cause: (t) => t.call(CAM, "startCamera", { handle: 999 }) },
        { code: 200, text: "Invalid state", cause: async (t) => t.call(CAM, "startCamera", { handle: await startedCamera(t) }) },
      ],
    },
    startCapture: {
      section: `${P2}, Errors: Camera (startCapture returns 45 for an unwritable path)`,
      optional: ["path"],
      base: async (t) => ({ handle: await startedCamera(t), params: { width: 640, height: 480, format: "YUV", mode: "MODE_BURST", nimage: 1 } }),
      errors: [
        {
          code: 45,
          text: "Cannot write at specified location",
          cause: async (t) =>
            t.call(CAM, "startCapture", { handle: await startedCamera(t), params: { width: 640, height: 480, format: "YUV", mode: "MODE_BURST", nimage: 1 }, path: "/proc/none" }),
        },
      ],
    },
    startPreview: {
      section: `${P2}, Errors: Camera (startPreview 20, 32, 106, 200)`,
      errors: [
        { code: 20, text: "Parsing error", cause: (t) => t.call(CAM, "startPreview", { handle: "one", windowId: "window0" }) },
        { code: 32, text: "Wrong param", cause: (t) => t.call(CAM, "startPreview", { handle: 77, windowId: "window0" }) },
        { code: 106, text: "Invalid windowId", cause: async (t) => t.call(CAM, "startPreview", { handle: await openCamera(t), windowId: "window9" }) },
        { code: 200, text: "Invalid state", cause: async (t) => t.call(CAM, "startPreview", { handle: await startedCamera(t), windowId: "window0" }) },
      ],
    },
    stopCamera: {
      section: `${P2}, Errors: Camera (stopCamera 13, 20, 32, 200)`,
      errors: [
        {
          code: 13,
          text: "There is no device",
          cause: async (t) => {
            const cam = await plugCamera(t);
            const handle = await openCamera(t, "a", cam.id);
            cam.unplug();
            await t.until(async () => !((await t.call(CAM, "getCameraList", {})).deviceList as Json[]).some((d) => d.id === cam.id), 3000);
            return t.call(CAM, "stopCamera", { handle });
          },
        },
        { code: 20, text: "Parsing error", cause: (t) => t.call(CAM, "stopCamera", { handle: "one" }) },
        { code: 32, text: "Wrong param", cause: (t) => t.call(CAM, "stopCamera", { handle: 999 }) },
        { code: 200, text: "Invalid state", cause: async (t) => t.call(CAM, "stopCamera", { handle: await openCamera(t) }) },
      ],
    },
    stopCapture: { section: `${P2}, Endpoints: Camera` },
    stopPreview: {
      section: `${P2}, Errors: Camera (stopPreview 13, 20, 32, 200)`,
      errors: [
        {
          code: 13,
          text: "There is no device",
          cause: async (t) => {
            const cam = await plugCamera(t);
            const handle = await openCamera(t, "a", cam.id);
            cam.unplug();
            await t.until(async () => !((await t.call(CAM, "getCameraList", {})).deviceList as Json[]).some((d) => d.id === cam.id), 3000);
            return t.call(CAM, "stopPreview", { handle });
          },
        },
        { code: 20, text: "Parsing error", cause: (t) => t.call(CAM, "stopPreview", { handle: "one" }) },
        { code: 32, text: "Wrong param", cause: (t) => t.call(CAM, "stopPreview", { handle: 999 }) },
        { code: 200, text: "Invalid state", cause: async (t) => t.call(CAM, "stopPreview", { handle: await openCamera(t) }) },
      ],
    },
  },

  // ================================ recording pipeline =====================================
  record: {
    pause: {
      section: `${P2}, Errors: Recording pipeline (6: pause, resume)`,
      errors: [{ code: 6, text: "Invalid state", cause: (t) => t.call(REC, "pause", {}) }],
    },
    resume: {
      section: `${P2}, Errors: Recording pipeline (6: pause, resume)`,
      errors: [{ code: 6, text: "Invalid state", cause: (t) => t.call(REC, "resume", {}) }],
    },
    start: {
      section: `${P2}, Endpoints: Recording pipeline (video, audio, image opt, at least one); Errors (1, 2: start)`,
      optional: ["video", "audio", "image"],
      base: async (t, without) =>
        without === "audio"
          ? { video: VIDEO, format: "MP4", path: `${t.dir}/${t.unique("v")}.mp4` }
          : { audio: AUDIO, format: "MP4", path: `${t.dir}/${t.unique("a")}.mp4` },
      after: stopRecording,
      errors: [
        { code: 1, text: "recorder not created", cause: (t) => t.call(REC, "start", { video: { ...VIDEO, codec: "VP8" }, format: "MP4", path: `${t.dir}/one.mp4` }) },
        { code: 2, text: "Failed to load recorder", cause: (t) => t.call(REC, "start", { video: { ...VIDEO, videoSrc: "missing" }, format: "MP4", path: `${t.dir}/two.mp4` }) },
      ],
    },
    stop: {
      section: `${P2}, Errors: Recording pipeline (3, 4, 5: stop)`,
      errors: [
        { code: 3, text: "Already unloaded", cause: (t) => t.call(REC, "stop", {}) },
        {
          code: 4,
          text: "Fails to unload the recorder",
          cause: async (t) => {
            const s = await t.subscribe(REC, "subscribe", {}, "b");
            await t.call(REC, "start", { video: { ...VIDEO, videoSrc: "failing" }, audio: AUDIO, format: "MP4", path: `${t.dir}/${t.unique("four")}.mp4` });
            await t.until(() => s.pushes.some((e) => e.eventType === "error"), 10000);
            return t.call(REC, "stop", {});
          },
        },
        {
          code: 5,
          text: "Resource release failed",
          cause: async (t) => {
            const path = `${t.dir}/${t.unique("five")}.mp4`;
            await t.call(REC, "start", { video: VIDEO, audio: AUDIO, format: "MP4", path });
            const { existsSync, statSync, rmSync } = await import("node:fs");
            await t.until(() => existsSync(path) && statSync(path).size > 0, 5000);
            rmSync(path);
            return t.call(REC, "stop", {});
          },
        },
      ],
    },
    subscribe: {
      section: `${P2}, Endpoints: Recording pipeline (subscribe bool opt); Errors (7: subscribe); Events`,
      optional: ["subscribe"],
      errors: [
        {
          code: 7,
          text: "Subscription add fail",
          // maxSubscribers is 2 in the sweep.
          cause: async (t) => {
            await t.subscribe(REC, "subscribe", {}, "a");
            await t.subscribe(REC, "subscribe", {}, "b");
            return (await t.subscribe(REC, "subscribe", {}, "a")).first;
          },
        },
      ],
      push: {
        payload: async () => ({}),
        trigger: async (t) => {
          await t.call(REC, "start", { image: IMAGE, format: "JPEG", path: `${t.dir}/${t.unique("still")}.jpg` });
        },
        after: stopRecording,
      },
    },
  },

  // ==================================== network tools ======================================
  nettools: {
    arping: {
      section: `${P1}, Errors: Network tools service (arping: None; general 102)`,
      errors: [
        { code: null, text: "arping failed: unreachable network", cause: (t) => t.call("nettools", "arping", { ifName: "lo", ipAddress: "127.0.0.1" }) },
        {
          code: null,
          text: "arping failed: mac address not found",
          elsewhere: "needs an up Ethernet link where nobody holds the address: test/nettools/tools.test.ts ('an address nobody holds') in a network namespace of its own",
        },
        { code: null, text: "Unknown error", hardware: "a failure inside the service (an exception no request causes); nothing a caller sends reaches it" },
        nt102("arping"),
      ],
    },
    checkhttp: {
      section: `${P1}, Errors: Network tools service (checkhttp: None, in errorrText; general 102)`,
      errors: [
        { code: null, text: "Invalid hostUrl", cause: (t) => t.call("nettools", "checkhttp", { hostUrl: "localhost" }) },
        { code: null, text: "Error in http connection", cause: (t) => t.call("nettools", "checkhttp", { hostUrl: "www.devservices-conformance-nosuch.int" }) },
        nt102("checkhttp"),
      ],
    },
    createVlan: {
      section: `${P1}, Endpoints: Network tools service; Errors (createVlan 105-109; general 101-104)`,
      optional: ["method", "address", "netmask", "gateway"],
      // lo is no Ethernet link: 104 after the request is accepted, nothing is made.
      base: async () => VLAN(),
      errors: [
        { code: 105, text: "Invalid Method", cause: (t) => t.call("nettools", "createVlan", VLAN({ method: "static" })) },
        { code: 106, text: "Invalid IP address", cause: (t) => t.call("nettools", "createVlan", VLAN({ method: "manual", address: "10.0.0.300", netmask: "255.255.255.0" })) },
        { code: 107, text: "Invalid Netmask", cause: (t) => t.call("nettools", "createVlan", VLAN({ method: "manual", address: "10.0.0.3", netmask: "255.0.255.0" })) },
        { code: 108, text: "Invalid Gateway", cause: (t) => t.call("nettools", "createVlan", VLAN({ method: "manual", address: "10.0.0.3", netmask: "255.255.255.0", gateway: "nowhere" })) },
        {
          code: 109,
          text: "VLAN Index already Exist",
          elsewhere: "needs a VLAN link made on an Ethernet link of the host: test/nettools/vlan.test.ts in a network namespace of its own",
        },
        // dhcpClient udhcpc with a search path that has none: refused before anything is made.
        { code: 101, text: "Unknown error", cause: (t) => t.call("nettools", "createVlan", VLAN({ method: "dhcp" })) },
        nt102("createVlan"),
        { code: 103, text: "Invalid VLAN Index", cause: (t) => t.call("nettools", "createVlan", VLAN({ index: 4095 })) },
        { code: 104, text: "Invalid Interface", cause: (t) => t.call("nettools", "createVlan", VLAN()) },
      ],
    },
    deleteVlan: {
      section: `${P1}, Errors: Network tools service (deleteVlan 110; general 102-104)`,
      errors: [
        { code: 110, text: "VLAN Index does not Exist", cause: (t) => t.call("nettools", "deleteVlan", VLAN({ index: 1 })) },
        nt102("deleteVlan"),
        { code: 103, text: "Invalid VLAN Index", cause: (t) => t.call("nettools", "deleteVlan", VLAN({ index: 0 })) },
        { code: 104, text: "Invalid Interface", cause: (t) => t.call("nettools", "deleteVlan", VLAN({ interface: { name: "nosuch0" } })) },
      ],
    },
    gethostname: {
      section: `${P1}, Endpoints: Network tools service; Errors (gethostname: None)`,
      optional: ["subscribe"],
      errors: [
        { code: null, text: "Error in calling gethostname", hardware: "uname(2) does not fail on Linux: the kernel's name is always there" },
        { code: null, text: "Unknown error", hardware: "a failure inside the service (an exception no request causes)" },
        nt102("gethostname"),
      ],
      noPush: "a push needs the host name to change, which would rename the shared host: test/nettools/hostname.test.ts changes it in a UTS namespace of its own",
    },
    ping: {
      section: `${P1}, Endpoints: Network tools service; Errors (ping, ping6: None)`,
      optional: ["ifName"],
      base: async () => ({ hostname: "127.0.0.1" }),
      errors: [
        { code: null, text: "Ping failed: poor network", elsewhere: "needs a host that drops echoes: test/nettools/ping.test.ts in a network namespace of its own" },
        { code: null, text: "Ping failed: unknown host", cause: (t) => t.call("nettools", "ping", { hostname: "nosuchhost.invalid" }) },
        { code: null, text: "Ping failed: network unreachable", cause: (t) => t.call("nettools", "ping", { hostname: "127.0.0.1", ifName: "nosuch0" }) },
        { code: null, text: "Unknown error", hardware: "a failure inside the service (an exception no request causes)" },
        nt102("ping"),
      ],
    },
    ping6: {
      section: `${P1}, Endpoints: Network tools service; Errors (ping, ping6: None)`,
      optional: ["ifName"],
      base: async () => ({ hostname: "::1" }),
      errors: [
        { code: null, text: "Ping failed: poor network", elsewhere: "needs a host that drops echoes: test/nettools/ping.test.ts in a network namespace of its own" },
        { code: null, text: "Ping failed: unknown host", cause: (t) => t.call("nettools", "ping6", { hostname: "127.0.0.1" }) },
        { code: null, text: "Ping failed: network unreachable", cause: (t) => t.call("nettools", "ping6", { hostname: "::1", ifName: "nosuch0" }) },
        { code: null, text: "Unknown error", hardware: "a failure inside the service (an exception no request causes)" },
        nt102("ping6"),
      ],
    },
    resolvehostname: {
      section: `${P1}, Endpoints: Network tools service; Errors (resolvehostname: None)`,
      errors: [
        { code: null, text: "Invalid hostname", cause: (t) => t.call("nettools", "resolvehostname", { hostname: "localhost" }) },
        { code: null, text: "Error in resolving hostname", cause: (t) => t.call("nettools", "resolvehostname", { hostname: "www.devservices-conformance-nosuch.int" }) },
        { code: null, text: "Unknown error", hardware: "a failure inside the service: a resolver error other than 'not found' (EAI_MEMORY, EAI_SYSTEM), which no request causes" },
        nt102("resolvehostname"),
      ],
    },
    sethostname: {
      section: `${P1}, Errors: Network tools service (sethostname: None)`,
      errors: [
        // hostnameSetter hostnamed in the sweep, and no hostnamed on its private bus: the name is never saved.
        { code: null, text: "Error in setting the hostname file", cause: (t) => t.call("nettools", "sethostname", { hostname: "conformance-host" }) },
        { code: null, text: "Error in calling sethostname", cause: (t) => t.call("nettools", "sethostname", { hostname: "-" }) },
        nt102("sethostname"),
      ],
    },
  },

  // ======================================== power ==========================================
  power2: {
    acquireWakeLock: {
      section: `${P2}, Errors: Power service (service-wide table: 2, 3)`,
      errors: [power2("acquireWakeLock"), { code: 3, text: "errorClientNotRegistered", cause: (t) => t.call(POWER, "acquireWakeLock", { clientId: "nobody", timeout: 5 }) }],
    },
    getPowerOnReason: {
      section: `${P2}, Endpoints: Power service (subscribe req); Errors (2)`,
      errors: [power2("getPowerOnReason")],
      push: {
        payload: async () => ({ subscribe: true }),
        trigger: async (t) => {
          await t.call(POWER, "setPowerOnReason", { reason: t.unique("reason") });
        },
      },
    },
    getState: {
      section: `${P2}, Endpoints: Power service (subscribe opt); Errors (2)`,
      optional: ["subscribe"],
      errors: [power2("getState")],
      push: {
        payload: async () => ({}),
        trigger: async (t) => {
          await t.call(POWER, "setState", { state: "GarageModeState", reason: 1 });
          await t.call(POWER, "setState", { state: "ActiveState", reason: 1 });
        },
      },
    },
    notifyAlarmExpiry: {
      section: `${P2}, Errors: Power service (2: 'also from notifyAlarmExpiry'; 3; 6)`,
      errors: [
        power2("notifyAlarmExpiry"),
        { code: 3, text: "errorClientNotRegistered", cause: (t) => t.call(POWER, "notifyAlarmExpiry", { clientId: "nobody" }) },
        {
          code: 6,
          text: "errorTimerNotRunning",
          cause: async (t) => {
            const s = await t.subscribe(POWER, "registerStateTransition", { state: "GarageModeState" });
            return t.call(POWER, "notifyAlarmExpiry", { clientId: s.first.clientId as string });
          },
        },
      ],
    },
    reboot: {
      section: `${P2}, Errors: Power service (2)`,
      errors: [power2("reboot")],
    },
    registerStateTransition: {
      section: `${P2}, Errors: Power service (2, 4)`,
      errors: [
        power2("registerStateTransition"),
        {
          code: 4,
          text: "errorCleintAlreadyRegistered",
          cause: async (t) => {
            await t.subscribe(POWER, "registerStateTransition", { state: "GarageModeState" });
            return (await t.subscribe(POWER, "registerStateTransition", { state: "GarageModeState" })).first;
          },
        },
      ],
      push: {
        payload: async () => ({ state: "GarageModeState" }),
        trigger: async (t) => {
          await t.call(POWER, "setState", { state: "GarageModeState", reason: 1 }, "b");
          await t.call(POWER, "setState", { state: "ActiveState", reason: 1 }, "b");
        },
      },
    },
    releaseWakeLock: {
      section: `${P2}, Errors: Power service (2, 3, 6)`,
      errors: [
        power2("releaseWakeLock"),
        { code: 3, text: "errorClientNotRegistered", cause: (t) => t.call(POWER, "releaseWakeLock", { clientId: "nobody" }) },
        {
          code: 6,
          text: "errorTimerNotRunning",
          cause: async (t) => {
            const s = await t.subscribe(POWER, "registerStateTransition", { state: "GarageModeState" });
            return t.call(POWER, "releaseWakeLock", { clientId: s.first.clientId as string });
          },
        },
      ],
    },
    respondStateTransitionAck: {
      section: `${P2}, States and transitions: Power service ('late answer: error 5'); Errors (2, 3, 5)`,
      errors: [
        power2("respondStateTransitionAck"),
        { code: 3, text: "errorClientNotRegistered", cause: (t) => t.call(POWER, "respondStateTransitionAck", { state: "ActiveState", ack: true, token: "none" }) },
        {
          code: 5,
          text: "errorResponseTooLate",
          // b registered for GarageModeState; a forced state change needs no votes, so b's ack of it comes after the transition.
          cause: async (t) => {
            const s = await t.subscribe(POWER, "registerStateTransition", { state: "GarageModeState" }, "b");
            await t.call(POWER, "setState", { state: "GarageModeState", reason: 1 });
            await t.call(POWER, "setState", { state: "ActiveState", reason: 1 });
            await t.until(() => s.pushes.length > 0, 3000);
            const token = s.pushes[0]!.token as string;
            return t.call(POWER, "respondStateTransitionAck", { state: "GarageModeState", ack: true, token }, "b");
          },
        },
      ],
    },
    setPowerOnReason: { section: `${P2}, Errors: Power service (2)`, errors: [power2("setPowerOnReason")] },
    setState: {
      section: `${P2}, Errors: Power service (2, 7)`,
      errors: [power2("setState"), { code: 7, text: "errorUnknown", cause: (t) => t.call(POWER, "setState", { state: "NoSuchState", reason: 1 }) }],
    },
    shutdown: {
      section: `${P2}, States and transitions: Power service; Errors (1 busy, 2)`,
      errors: [
        power2("shutdown"),
        {
          code: 1,
          text: "errorPower2Busy",
          // A reboot waits for b's vote (b registered for ActiveState and does not answer): a shutdown meanwhile is busy.
          cause: async (t) => {
            const s = await t.subscribe(POWER, "registerStateTransition", { state: "ActiveState" }, "b");
            const pending = t.call(POWER, "reboot", { reason: "conformance" });
            await t.until(() => s.pushes.length > 0, 3000);
            const r = await t.call(POWER, "shutdown", { reason: "conformance" });
            await s.cancel();
            await pending;
            await t.call(POWER, "setState", { state: "ActiveState", reason: 1 });
            return r;
          },
        },
      ],
    },
  },

  // ===================================== file cache ========================================
  filecache: {
    ChangeType: {
      section: `${P2}, Endpoints: File cache; Errors: File cache (-200, -196)`,
      optional: ["loWatermark", "hiWatermark", "size", "cost", "lifetime"],
      base: async (t) => ({ typeName: await fcType(t) }),
      errors: [
        { code: -200, cause: async (t) => t.call(FC, "ChangeType", { typeName: await fcType(t), hiWatermark: 0 }) },
        { code: -196, cause: (t) => t.call(FC, "ChangeType", { typeName: "conf-nosuch", cost: 5 }) },
      ],
    },
    CopyCacheObject: {
      section: `${P2}, Endpoints: File cache; Errors: File cache (-199, -193, -192)`,
      optional: ["destination", "fileName"],
      base: async (t) => ({ pathName: (await fcObject(t)).pathName }),
      errors: [
        { code: -199, cause: (t) => t.call(FC, "CopyCacheObject", { pathName: "/nonexistent/cache/object" }) },
        { code: -193, cause: async (t) => t.call(FC, "CopyCacheObject", { pathName: (await fcObject(t)).pathName, destination: "relative/dir" }) },
        { code: -192, cause: async (t) => t.call(FC, "CopyCacheObject", { pathName: (await fcObject(t)).pathName, destination: "/etc/hostname" }) },
      ],
    },
    DefineType: {
      section: `${P2}, Endpoints: File cache; Errors: File cache (-200, -199, -197, -189)`,
      optional: ["size", "cost", "lifetime", "dirType"],
      base: async (t) => ({ typeName: t.unique("conf"), loWatermark: 0, hiWatermark: 4096 }),
      errors: [
        { code: -200, cause: (t) => t.call(FC, "DefineType", { typeName: t.unique("conf"), loWatermark: 8192, hiWatermark: 8192 }) },
        {
          code: -199,
          cause: async (t) => {
            const typeName = t.unique("conf");
            await t.call(FC, "DefineType", { typeName, loWatermark: 0, hiWatermark: 8192 });
            return t.call(FC, "DefineType", { typeName, loWatermark: 0, hiWatermark: 8192 });
          },
        },
        { code: -197, cause: (t) => t.call(FC, "DefineType", { typeName: t.unique("conf"), loWatermark: 2 ** 52, hiWatermark: 2 ** 53 }) },
        {
          code: -189,
          cause: async (t) => {
            const typeName = t.unique("conf");
            await t.call(FC, "DefineType", { typeName, loWatermark: 0, hiWatermark: 8192 });
            return t.call(FC, "DefineType", { typeName, loWatermark: 0, hiWatermark: 16384 });
          },
        },
      ],
    },
    DeleteType: {
      section: `${P2}, States and transitions: File cache object; Errors: File cache (-195)`,
      errors: [{ code: -195, cause: (t) => t.call(FC, "DeleteType", { typeName: "conf-nosuch" }) }],
    },
    DescribeType: { section: `${P2}, Errors: File cache (-199)`, errors: [{ code: -199, cause: (t) => t.call(FC, "DescribeType", { typeName: "conf-nosuch" }) }] },
    ExpireCacheObject: {
      section: `${P2}, States and transitions: File cache object; Errors: File cache (-199, -198)`,
      errors: [
        { code: -199, cause: (t) => t.call(FC, "ExpireCacheObject", { pathName: "/nonexistent/cache/object" }) },
        { code: -198, cause: async (t) => t.call(FC, "ExpireCacheObject", { pathName: (await fcObject(t, true)).pathName }, "b") },
      ],
    },
    GetCacheObjectFilename: { section: `${P2}, Errors: File cache (-199)`, errors: [{ code: -199, cause: (t) => t.call(FC, "GetCacheObjectFilename", { pathName: "/nonexistent/cache/object" }) }] },
    GetCacheObjectSize: { section: `${P2}, Errors: File cache (-199)`, errors: [{ code: -199, cause: (t) => t.call(FC, "GetCacheObjectSize", { pathName: "/nonexistent/cache/object" }) }] },
    GetCacheStatus: { section: `${P2}, Endpoints: File cache` },
    GetCacheTypeStatus: { section: `${P2}, Errors: File cache (-199)`, errors: [{ code: -199, cause: (t) => t.call(FC, "GetCacheTypeStatus", { typeName: "conf-nosuch" }) }] },
    GetCacheTypes: { section: `${P2}, Endpoints: File cache` },
    GetVersion: { section: `${P2}, Endpoints: File cache` },
    InsertCacheObject: {
      section: `${P2}, Endpoints: File cache; Errors: File cache (-200, -199)`,
      optional: ["size", "cost", "lifetime", "subscribe"],
      base: async (t) => ({ typeName: await fcType(t), fileName: "o.txt" }),
      errors: [
        // size must be greater than 1 block when dirType is true.
        { code: -200, cause: async (t) => t.call(FC, "InsertCacheObject", { typeName: await fcType(t, { dirType: true, size: 8192 }), fileName: "d", size: 100 }) },
        { code: -199, cause: async (t) => t.call(FC, "InsertCacheObject", { typeName: await fcType(t), fileName: "o.txt", size: 1 << 30 }) },
      ],
      noPush: "an inserted object's subscription has no messages after the first (the spec lists none): it holds the object",
    },
    ResizeCacheObject: {
      section: `${P2}, Errors: File cache (-199, -194)`,
      errors: [
        { code: -199, cause: (t) => t.call(FC, "ResizeCacheObject", { pathName: "/nonexistent/cache/object", newSize: 10 }) },
        { code: -194, cause: async (t) => t.call(FC, "ResizeCacheObject", { pathName: (await fcObject(t)).pathName, newSize: 1 << 30 }) },
      ],
    },
    SubscribeCacheObject: {
      section: `${P2}, Errors: File cache (-199)`,
      errors: [{ code: -199, cause: async (t) => (await t.subscribe(FC, "SubscribeCacheObject", { pathName: "/nonexistent/cache/object" })).first }],
      noPush: "an object's subscription has no messages after the first (the spec lists none): it blocks the object's expiry",
    },
    TouchCacheObject: { section: `${P2}, Errors: File cache (-199)`, errors: [{ code: -199, cause: (t) => t.call(FC, "TouchCacheObject", { pathName: "/nonexistent/cache/object" }) }] },
  },

  // ====================================== intent ===========================================
  intent: {
    query: {
      section: `${P1}, Endpoints: Intent service (intent opt); Errors: Intent service (code None, service-wide)`,
      optional: ["intent"],
      errors: [{ code: null, text: "Invalid parameter", cause: (t) => t.call("intent", "query", { intent: { name: 7 } }) }],
    },
    start: {
      section: `${P1}, Endpoints: Intent service (intent, subscribe opt); Errors: Intent service`,
      optional: ["intent", "subscribe"],
      errors: [
        // The sweep's intent service launches through the application manager, which is not on its private bus.
        { code: null, text: "Failed to start intent", cause: (t) => t.call("intent", "start", { intent: { action: "view", uri: "http://example.com" } }) },
        { code: null, text: "Invalid parameter", cause: (t) => t.call("intent", "start", { intent: "view" }) },
        { code: null, text: "Failed to parse intent", cause: (t) => t.call("intent", "start", { intent: {} }) },
        { code: null, text: "Cannot find session", cause: (t) => t.call("intent", "start", { intent: { action: "view" }, sessionId: "nosuch" }) },
        { code: null, text: "Cannot find handler", cause: (t) => t.call("intent", "start", { intent: { action: "nothing-handles-this" } }) },
      ],
      noPush: "a result message needs a handler application that calls sendResult: test/intent/handler.test.ts",
    },
    sendResult: {
      section: `${P1}, Endpoints: Intent service (result, intent opt); Errors: Intent service`,
      optional: ["result", "intent"],
      base: async () => ({ intentId: 424242 }),
      sameAnswerAsSchemaFailure: "an intent ID nobody started (a running intent needs a handler application) is answered 'Invalid parameter', the intent service's schema failure text too",
      errors: [
        { code: null, text: "'intentId' is required parameter", cause: (t) => t.call("intent", "sendResult", {}) },
        { code: null, text: "Invalid parameter", cause: (t) => t.call("intent", "sendResult", { intentId: 424242 }) },
      ],
    },
    subscribeResult: {
      section: `${P1}, Endpoints: Intent service (subscribe opt); Errors: Intent service`,
      optional: ["subscribe"],
      base: async () => ({ intentId: 424242 }),
      errors: [
        { code: null, text: "'intentId' is required parameter", cause: (t) => t.call("intent", "subscribeResult", {}) },
        { code: null, text: "Invalid parameter", cause: (t) => t.call("intent", "subscribeResult", { intentId: 424242 }) },
      ],
      noPush: "a result message needs a handler application that calls sendResult: test/intent/handler.test.ts",
    },
  },

  // ================================== test automation ======================================
  testautomation: {
    broadcastCommand: { section: `${P1}, Endpoints: UI test automation (command opt)`, optional: ["command"] },
    handleRequest: {
      section: `${P1}, Errors: UI test automation (-1, service-wide) and observed behaviours 1-3`,
      optional: ["queue"],
      base: async (t) => ({ command: "getApplicationInformation", stageId: await stage(t) }),
      errors: [
        { code: -1, text: "Parameter is missing", cause: (t) => t.call(TA, "handleRequest", { stageId: 1 }) },
        { code: -1, text: "Invalid Stage ID", cause: (t) => t.call(TA, "handleRequest", { command: "getApplicationInformation", stageId: 999 }) },
        // Observed behaviour 2: a command nobody here knows, with no stage to ask.
        { code: 0, text: "command 'noSuchCommand' is unknown", cause: (t) => t.call(TA, "handleRequest", { command: "noSuchCommand" }) },
        { code: 0, text: "command name is not specified", cause: async (t) => t.call(TA, "handleRequest", { command: 7, stageId: await stage(t) }) },
      ],
    },
    notifyEvent: {
      section: `${P1}, Errors: UI test automation (-1 Invalid Stage ID)`,
      errors: [{ code: -1, text: "Invalid Stage ID", cause: (t) => t.call(TA, "notifyEvent", { stageId: 999, type: "" }) }],
    },
    ping: {
      section: `${P1}, Endpoints: UI test automation (Message opt)`,
      // The ping row ("an object echoing Message") with convention 2: returnValue true beside it (docs/decisions/testautomation.md).
      optional: ["Message"],
    },
    replyToCommand: {
      section: `${P1}, Errors: UI test automation (-1; observed behaviour 6: -1 missing, -1 invalid ID, 4 malformed JSON)`,
      errors: [
        { code: -1, text: "Parameter is missing: teCommandId", cause: (t) => t.call(TA, "replyToCommand", { stageId: 1, command: "commandsBatch", queue: [] }) },
        { code: -1, text: "Command ID is invalid", cause: (t) => t.call(TA, "replyToCommand", { stageId: 1, teCommandId: 777, command: "commandsBatch", queue: [] }) },
        { code: 4, text: "Invalid JSON message", cause: (t) => t.call(TA, "replyToCommand", BAD_JSON) },
      ],
    },
    subscribeToCommands: {
      section: `${P1}, Endpoints: UI test automation (baseURI, width, height, version opt); Errors (-1)`,
      optional: ["baseURI", "width", "height", "version"],
      base: async () => ({ subscribe: true, appInfo: { id: "com.example.app" }, name: "main", scene: "s", type: "qml" }),
      errors: [
        { code: -1, text: "Not a subscription message", cause: (t) => t.call(TA, "subscribeToCommands", { subscribe: false, appInfo: { id: "a" }, name: "n", scene: "s", type: "t" }) },
        { code: -1, text: "Invalid application ID", cause: async (t) => (await t.subscribe(TA, "subscribeToCommands", { appInfo: { id: "" }, name: "n", scene: "s", type: "t" })).first },
      ],
      push: {
        payload: async () => ({ appInfo: { id: "com.example.app" }, name: "main", scene: "s", type: "qml" }),
        // A command the daemon does not map is redirected to the stage.
        trigger: async (t, first) => {
          // Nobody replies as the nub: the call is left to end with its client.
          t.call(TA, "handleRequest", { command: "getItems", stageId: first.stageId as number }, "b").catch(() => {});
        },
      },
    },
    subscribeToEvents: {
      section: `${P1}, Endpoints: UI test automation; Errors (-1 Not a subscription message); Events: Stage events`,
      errors: [{ code: -1, text: "Not a subscription message", cause: (t) => t.call(TA, "subscribeToEvents", { subscribe: false }) }],
      push: {
        payload: async () => ({}),
        trigger: async (t) => {
          await t.call(TA, "notifyEvent", { stageId: await stage(t), type: "stageActivate" });
        },
      },
    },
    version: { section: `${P1}, Endpoints: UI test automation` },
  },

  // =================================== media indexer =======================================
  mediaindexer: {
    getAudioList: {
      section: `${P3}, Endpoints: Media indexer (uri, subscribe, count opt); Errors (-1 JSON parsing)`,
      optional: ["uri", "subscribe", "count"],
      errors: [parseFailure("getAudioList")],
      noPush: "a push needs media files indexed after the subscription: test/mediaindexer/watch.test.ts",
    },
    getAudioMetadata: { section: `${P3}, Errors: Media indexer (-1 JSON parsing)`, errors: [parseFailure("getAudioMetadata")] },
    getDeviceList: {
      section: `${P3}, Endpoints: Media indexer (subscribe req); Events: Device list update`,
      noPush: "a push needs a storage device attached (msc, mtp, upnp): test/mediaindexer/msc.test.ts",
    },
    getImageList: {
      section: `${P3}, Endpoints: Media indexer (as getAudioList); Errors (-1 JSON parsing)`,
      optional: ["uri", "subscribe", "count"],
      errors: [parseFailure("getImageList")],
      noPush: "a push needs media files indexed after the subscription: test/mediaindexer/watch.test.ts",
    },
    getImageMetadata: { section: `${P3}, Errors: Media indexer (-1 JSON parsing)`, errors: [parseFailure("getImageMetadata")] },
    getMediaDbPermission: {
      section: `${P3}, Authentication; Errors: Media indexer (-1 serviceName field is mandatory input)`,
      errors: [mi("getMediaDbPermission", {}, -1, "serviceName field is mandatory input")],
    },
    getPlugin: { section: `${P3}, Endpoints: Media indexer (uri opt); Errors (-1 not handled)`, optional: ["uri"], errors: [notHandled("getPlugin")] },
    getPluginList: { section: `${P3}, Endpoints: Media indexer` },
    getVideoList: {
      section: `${P3}, Endpoints: Media indexer (as getAudioList); Errors (-1 JSON parsing)`,
      optional: ["uri", "subscribe", "count"],
      errors: [parseFailure("getVideoList")],
      noPush: "a push needs media files indexed after the subscription: test/mediaindexer/watch.test.ts",
    },
    getVideoMetadata: { section: `${P3}, Errors: Media indexer (-1 JSON parsing)`, errors: [parseFailure("getVideoMetadata")] },
    putPlugin: { section: `${P3}, Errors: Media indexer (-1 not handled)`, errors: [notHandled("putPlugin", {})] },
    requestDelete: {
      section: `${P3}, Errors: Media indexer (-1 not handled, -3970 kind not registered)`,
      errors: [notHandled("requestDelete", {}), { code: -3970, text: "kind not registered: 'txt'", cause: (t) => t.call("mediaindexer", "requestDelete", { uri: `${t.dir}/notes.txt` }) }],
    },
    requestMediaScan: {
      section: `${P3}, Errors: Media indexer (-1 Scan Failed, -1 not handled)`,
      errors: [mi("requestMediaScan", { path: "/nonexistent/media" }, -1, "Scan Failed"), notHandled("requestMediaScan", { path: 7 })],
    },
    runDetect: { section: `${P3}, Endpoints: Media indexer (uri opt); Errors (-1 not handled)`, optional: ["uri"], errors: [notHandled("runDetect", { uri: "nosuch" })] },
    stopDetect: { section: `${P3}, Endpoints: Media indexer (uri opt); Errors (-1 not handled)`, optional: ["uri"], errors: [notHandled("stopDetect", { uri: "nosuch" })] },
  },

  // ================================ peripheral manager =====================================
  // Part 3, Errors: "The table of peripheral manager error codes: not shown": no codes to cause.
  peripheralmanager: {
    "gpio/close": { section: `${P3}, Endpoints: Peripheral manager, GPIO` },
    "gpio/getDirection": { section: `${P3}, Endpoints: Peripheral manager, GPIO` },
    "gpio/getPollingFd": { section: `${P3}, Endpoints: Peripheral manager, GPIO` },
    "gpio/getValue": {
      section: `${P3}, Endpoints: Peripheral manager, GPIO (subscribe opt); Events: GPIO value change`,
      optional: ["subscribe"],
      base: async (t) => (await t.call("peripheralmanager", "gpio/open", { pin: "gpio0" }), { pin: "gpio0" }),
      push: {
        payload: async (t) => {
          await t.call("peripheralmanager", "gpio/open", { pin: "gpio0" });
          await t.call("peripheralmanager", "gpio/setDirection", { pin: "gpio0", direction: "outLow" });
          return { pin: "gpio0" };
        },
        trigger: async (t) => {
          await t.call("peripheralmanager", "gpio/setValue", { pin: "gpio0", value: "high" });
        },
      },
    },
    "gpio/list": {
      section: `${P3}, Endpoints: Peripheral manager, GPIO (subscribe opt); Events: GPIO availability change`,
      optional: ["subscribe"],
      push: {
        payload: async () => ({}),
        trigger: async (t) => {
          await t.call("peripheralmanager", "gpio/open", { pin: "gpio1" }, "b");
        },
      },
    },
    "gpio/open": { section: `${P3}, Endpoints: Peripheral manager, GPIO` },
    "gpio/setDirection": { section: `${P3}, Endpoints: Peripheral manager, GPIO` },
    "gpio/setValue": { section: `${P3}, Endpoints: Peripheral manager, GPIO` },
    "i2c/close": { section: `${P3}, Endpoints: Peripheral manager, I2C` },
    "i2c/getPollingFd": { section: `${P3}, Endpoints: Peripheral manager, I2C` },
    "i2c/list": { section: `${P3}, Endpoints: Peripheral manager, I2C (verbose opt)`, optional: ["verbose"] },
    "i2c/open": { section: `${P3}, Endpoints: Peripheral manager, I2C` },
    "i2c/read": { section: `${P3}, Endpoints: Peripheral manager, I2C` },
    "i2c/readRegBuffer": { section: `${P3}, Endpoints: Peripheral manager, I2C` },
    "i2c/readRegByte": { section: `${P3}, Endpoints: Peripheral manager, I2C` },
    "i2c/readRegWord": { section: `${P3}, Endpoints: Peripheral manager, I2C` },
    "i2c/write": {
      section: `${P3}, Endpoints: Peripheral manager, I2C (size opt)`,
      optional: ["size"],
      base: async () => ({ name: "I2C0", address: 0x50, data: [1] }),
    },
    "i2c/writeRegBuffer": { section: `${P3}, Endpoints: Peripheral manager, I2C` },
    "i2c/writeRegByte": { section: `${P3}, Endpoints: Peripheral manager, I2C` },
    "i2c/writeRegWord": { section: `${P3}, Endpoints: Peripheral manager, I2C` },
    "spi/close": { section: `${P3}, Endpoints: Peripheral manager, SPI` },
    "spi/list": { section: `${P3}, Endpoints: Peripheral manager, SPI` },
    "spi/open": { section: `${P3}, Endpoints: Peripheral manager, SPI` },
    "spi/setBitJustification": { section: `${P3}, Endpoints: Peripheral manager, SPI` },
    "spi/setBitsPerWord": { section: `${P3}, Endpoints: Peripheral manager, SPI` },
    "spi/setDelay": { section: `${P3}, Endpoints: Peripheral manager, SPI` },
    "spi/setFrequency": { section: `${P3}, Endpoints: Peripheral manager, SPI` },
    "spi/setMode": { section: `${P3}, Endpoints: Peripheral manager, SPI` },
    "spi/transfer": { section: `${P3}, Endpoints: Peripheral manager, SPI (data opt)`, optional: ["data"], base: async () => ({ name: "SPI00", size: 4 }) },
    "spi/writeBuffer": { section: `${P3}, Endpoints: Peripheral manager, SPI` },
    "spi/writeByte": { section: `${P3}, Endpoints: Peripheral manager, SPI` },
    "uart/close": { section: `${P3}, Endpoints: Peripheral manager, UART` },
    "uart/getBaudrate": { section: `${P3}, Endpoints: Peripheral manager, UART` },
    "uart/getPollingFd": { section: `${P3}, Endpoints: Peripheral manager, UART` },
    "uart/list": {
      section: `${P3}, Endpoints: Peripheral manager, UART (subscribe opt); Events: GPIO availability change (uart/list)`,
      optional: ["subscribe"],
      push: {
        payload: async () => ({}),
        trigger: async (t) => {
          await t.call("peripheralmanager", "uart/open", { interfaceId: "uart0" }, "b");
        },
      },
    },
    "uart/open": { section: `${P3}, Endpoints: Peripheral manager, UART (config opt)`, optional: ["config"], base: async () => ({ interfaceId: "uart1" }) },
    "uart/read": {
      section: `${P3}, Endpoints: Peripheral manager, UART (dataType, size opt)`,
      optional: ["dataType", "size"],
      base: async (t) => (await t.call("peripheralmanager", "uart/open", { interfaceId: "uart1" }), { interfaceId: "uart1" }),
    },
    "uart/setBaudrate": { section: `${P3}, Endpoints: Peripheral manager, UART` },
    "uart/write": { section: `${P3}, Endpoints: Peripheral manager, UART` },
  },

  // ==================================== video output =======================================
  videooutput: {
    connect: {
      section: `${P1}, Endpoints: Video output (sourcePort, context, appId opt); Errors: Video output ('connect may return codes -1, 20, 52, 53, 54, 65, 67')`,
      optional: ["sourcePort", "context", "appId"],
      base: async () => ({ source: "VDEC", sink: "SUB0" }),
      after: async (t) => {
        await t.call("videooutput", "disconnect", { sink: "SUB0" });
      },
      // The spec lists these codes without meanings; the service's (docs/decisions/videooutput.md):
      // -1 request not valid, 52 unknown sink, 53 sink connected, 54 context not registered, 65 a value beyond its range, 67 permission.
      errors: [
        { code: -1, text: "Could not validate json message against schema", cause: (t) => t.call("videooutput", "connect", BAD_JSON) },
        { code: 52, text: "Unknown sink", cause: (t) => t.call("videooutput", "connect", { source: "VDEC", sink: "NOSUCHSINK" }) },
        {
          code: 53,
          text: "Sink already connected",
          cause: async (t) => {
            await t.call("videooutput", "connect", { source: "VDEC", sink: "SUB0" });
            const r = await t.call("videooutput", "connect", { source: "VDEC", sink: "SUB0" });
            // A connection without a context stays until disconnect.
            await t.call("videooutput", "disconnect", { sink: "SUB0" });
            return r;
          },
        },
        { code: 54, text: "Context not registered", cause: (t) => t.call("videooutput", "connect", { source: "VDEC", sink: "SUB0", context: t.unique("unregistered") }) },
        { code: 65, text: "Invalid parameters", cause: (t) => t.call("videooutput", "connect", { source: "VDEC", sink: "SUB0", sourcePort: 300 }) },
        {
          code: 67,
          text: "Permission denied",
          elsewhere:
            "a caller of another uid (outside the access group, or using a context another uid registered): the sweep's clients are all of the test's uid; test/videooutput/access.test.ts and contexts.test.ts call connect as uid 65534 through setpriv",
        },
        { code: 20, hardware: "the display driver refusing the plane (a DRM ioctl failing): the virtual board's display accepts every plane setting" },
      ],
    },
    disconnect: {
      section: `${P1}, Endpoints: Video output (context opt)`,
      optional: ["context"],
      base: async (t) => (await t.call("videooutput", "connect", { source: "VDEC", sink: "SUB0" }), { sink: "SUB0" }),
    },
    "display/getOutputCapabilities": { section: `${P1}, Endpoints: Video output` },
    "display/getParam": { section: `${P1}, Endpoints: Video output (sink opt)`, optional: ["sink"], base: async () => ({ command: "NumConnector" }) },
    "display/setCompositing": { section: `${P1}, Endpoints: Video output` },
    "display/setDisplayWindow": {
      section: `${P1}, Endpoints: Video output (sourceInput opt; displayOutput opt, required when fullScreen is false)`,
      optional: ["sourceInput", "displayOutput"],
      base: async (t) => (await t.call("videooutput", "connect", { source: "VDEC", sink: "SUB0" }), { sink: "SUB0", fullScreen: true }),
      after: async (t) => {
        await t.call("videooutput", "disconnect", { sink: "SUB0" });
      },
    },
    getStatus: {
      section: `${P1}, Endpoints: Video output (subscribe opt); Events: Sink status change`,
      optional: ["subscribe"],
      push: {
        payload: async () => ({}),
        trigger: async (t) => {
          await t.call("videooutput", "connect", { source: "VDEC", sink: "SUB0" }, "b");
          await t.call("videooutput", "disconnect", { sink: "SUB0" }, "b");
        },
      },
    },
    register: { section: `${P1}, Endpoints: Video output` },
    setVideoData: {
      section: `${P1}, Endpoints: Video output (contentType, context, scanType opt)`,
      optional: ["contentType", "context", "scanType"],
      base: async (t) => (await t.call("videooutput", "connect", { source: "VDEC", sink: "SUB0" }), { sink: "SUB0", frameRate: 30, width: 1920, height: 1080 }),
      after: async (t) => {
        await t.call("videooutput", "disconnect", { sink: "SUB0" });
      },
    },
    unregister: { section: `${P1}, Endpoints: Video output` },
  },
};

/** The primary handle a row's push payload opened, for its trigger. */
export const PRIMARY: { handle?: number } = {};
