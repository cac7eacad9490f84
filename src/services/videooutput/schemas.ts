// Video output API (spec part 1, com.vendor.service.videooutput, levels 11, 13, 23;
// retired since 23). Field names are the spec's; limits (opacity 0..255, zOrder 0..3,
// VideoSize 0..3840 x 0..2160, the declared int8/int32/uint32 ranges) are in the
// schemas and answered with code 4 (invalid parameters; connect: 65) and a sentence
// naming the field (limitText) rather than 3 (schema; connect: -1) by the service.
import { z } from "zod";
import { method, once, type Api } from "../../core/service";
import { group } from "../../core/access";

/** Root or members of this group may call every method (configurable: accessGroup). */
export const DEFAULT_GROUP = "devservices-media";

/** Every method is for the media framework only (spec, Authentication). */
const ACCESS = group(DEFAULT_GROUP);

export const LIMITS = { opacity: [0, 255], zOrder: [0, 3], width: [0, 3840], height: [0, 2160] } as const;

const int32 = once(() => z.number().int().min(-(2 ** 31)).max(2 ** 31 - 1));
const uint32 = once(() => z.number().int().min(0).max(2 ** 32 - 1));
const int8 = once(() => z.number().int().min(-128).max(127));

export const VideoRect = once(() => z.lazy(() => z.object({
  x: int32().describe("offset from the left edge"),
  y: int32().describe("offset from the top edge"),
  width: int32().min(0),
  height: int32().min(0),
})));
export type Rect = z.infer<ReturnType<typeof VideoRect>>;

export const VideoSize = once(() => z.lazy(() => z.object({
  width: z.number().int().min(LIMITS.width[0]).max(LIMITS.width[1]),
  height: z.number().int().min(LIMITS.height[0]).max(LIMITS.height[1]),
})));
export type Size = z.infer<ReturnType<typeof VideoSize>>;

export const ComposeOrder = once(() => z.lazy(() => z.looseObject({
  sink: z.string().min(1).describe("sink ID (MAIN, SUB0, ...)"),
  opacity: z.number().int().min(LIMITS.opacity[0]).max(LIMITS.opacity[1]).describe("0 (transparent) to 255 (opaque)"),
  zOrder: z.number().int().min(LIMITS.zOrder[0]).max(LIMITS.zOrder[1]).describe("0 to 3, below the number of sinks; unique per sink"),
  context: z.string().min(1).describe("the context composing (registration optional; a registered one must be the caller's)"),
})));

export const Planes = once(() => z.lazy(() => z.object({ sinkId: z.string(), maxDownscaleSize: VideoSize(), maxUpscaleSize: VideoSize() })));

export const Video = once(() => z.lazy(() => z.object({
  connected: z.boolean(),
  connectedSource: z.string().nullable(),
  connectedSourcePort: int8(),
  contentType: z.string().optional(),
  context: z.string().optional(),
  displayOutput: VideoRect(),
  frameRate: z.number(),
  fullScreen: z.boolean(),
  height: z.number().int(),
  width: z.number().int(),
  muted: z.boolean(),
  opacity: z.number().int(),
  scanType: z.string(),
  sink: z.string(),
  sourceInput: VideoRect(),
  zOrder: z.number().int(),
})));
export type VideoT = z.infer<ReturnType<typeof Video>>;

const Response = once(() => z.looseObject({ returnValue: z.boolean(), errorCode: z.number().int().optional(), errorMessage: z.string().optional() }));
const sink = once(() => z.string().min(1).describe("sink ID (MAIN, SUB0, ...)"));

export const api = {
  connect: method({
    summary: "Connects source (e.g. VDEC) to sink: answers the plane's id; the status starts with fullScreen false, zero rectangles and width/height 0 until setVideoData and setDisplayWindow set them (meanwhile the plane shows a framebuffer of the display's size over the whole display).",
    request: () => z.looseObject({
      source: z.string().min(1),
      sourcePort: int8().optional(),
      sink: sink(),
      context: z.string().min(1).optional().describe("a registered context (pipeline ID); connecting it disconnects the previously connected context"),
      appId: z.string().optional(),
    }),
    response: () => Response().extend({ planeID: int32().optional().describe("the sink's plane id (declared int8_t; DRM plane ids can be larger)") }),
    access: ACCESS,
    level: 11,
  }),
  disconnect: method({
    summary: "Disconnects sink: its plane is given back (to what it showed before, else off) and its framebuffer freed.",
    request: () => z.looseObject({ sink: sink(), context: z.string().min(1).optional() }),
    response: () => Response(),
    access: ACCESS,
    level: 11,
  }),
  "display/getOutputCapabilities": method({
    summary: "The display's plane count and, per sink, the sizes its plane can scale down and up to.",
    request: () => z.looseObject({}),
    response: () => Response().extend({ numPlanes: int8().optional().describe("every plane of the display"), planes: z.array(Planes()).optional() }),
    access: ACCESS,
    level: 11,
  }),
  "display/getParam": method({
    summary: "NumConnector: the number of connected displays; DRMResources with sink: the sink's plane, CRTC and connector ids.",
    request: () => z.looseObject({ command: z.string().min(1).describe("NumConnector or DRMResources"), sink: sink().optional() }),
    response: () => Response().extend({
      sink: z.string().optional(), planeId: int32().optional(), crtcId: int32().optional(), connId: int32().optional(), numConnector: int32().optional(),
    }),
    access: ACCESS,
    level: 13,
  }),
  "display/setCompositing": method({
    summary: "Sets opacity and zOrder of one or more sinks at once (plane alpha and zpos where the planes have them); zOrder stays unique per sink. A registered context must be the caller's; an unregistered one is accepted (registration is optional).",
    request: () => z.looseObject({ composeOrder: z.union([z.array(ComposeOrder()).min(1), ComposeOrder()]) }),
    response: () => Response(),
    access: ACCESS,
    level: 11,
  }),
  "display/setDisplayWindow": method({
    summary: "Sets the source crop (sourceInput, whole frame when absent) and the output rectangle (displayOutput, or the whole display with fullScreen) of a connected sink's plane.",
    request: () => z.looseObject({
      sink: sink(),
      fullScreen: z.boolean(),
      sourceInput: VideoRect().optional(),
      displayOutput: VideoRect().optional().describe("required when fullScreen is false"),
    }),
    response: () => Response(),
    access: ACCESS,
    level: 11,
  }),
  getStatus: method({
    summary: "One Video entry per sink; with subscribe true the whole list is pushed on every change.",
    request: () => z.looseObject({ subscribe: z.boolean().optional() }),
    response: () => Response().extend({ subscribed: z.boolean().optional(), video: z.array(Video()).optional(), videoInfo: z.null().optional() }),
    subscribable: true,
    access: ACCESS,
    level: 11,
  }),
  register: method({
    summary: "Registers a context (pipeline ID) for the caller's uid: it lives until unregister (not tied to the connection), only that uid or root may use or unregister it; at most maxContexts per board.",
    request: () => z.looseObject({ context: z.string().min(1) }),
    response: () => Response(),
    access: ACCESS,
    level: 11,
  }),
  setVideoData: method({
    summary: "The connected video's frame size (any uint32 from 1 up to the board's maxFrameWidth x maxFrameHeight), rate, content and scan type; the sink's framebuffer takes the frame size.",
    request: () => z.looseObject({
      contentType: z.string().optional(),
      context: z.string().min(1).optional(),
      frameRate: z.number().min(0),
      width: uint32().describe("the frame's width in pixels (uint32; 1 up to the board's maxFrameWidth)"),
      height: uint32().describe("the frame's height in pixels (uint32; 1 up to the board's maxFrameHeight)"),
      scanType: z.string().optional(),
      sink: sink(),
    }),
    response: () => Response(),
    access: ACCESS,
    level: 11,
  }),
  unregister: method({
    summary: "Unregisters a context (the registering uid or root only); its connected sinks are disconnected.",
    request: () => z.looseObject({ context: z.string().min(1) }),
    response: () => Response(),
    access: ACCESS,
    level: 11,
  }),
} satisfies Api;

const RECTS = new Set(["displayOutput", "sourceInput"]);
const NOT_EMPTY = new Set(["sink", "source", "context", "command"]);

/**
 * The sentence for a field beyond its declared range (a schema's min or max), from
 * the path of the first problem: "composeOrder[0].opacity must be 0 to 255".
 */
export function limitText(path: readonly (string | number)[]): string {
  const where = path.map((p, i) => (typeof p === "number" ? `[${p}]` : `${i ? "." : ""}${p}`)).join("") || "the payload";
  const names = path.filter((p): p is string => typeof p === "string");
  const name = names.at(-1) ?? "";
  const inRect = names.some((n) => RECTS.has(n));
  let rule: string;
  if (NOT_EMPTY.has(name)) rule = "must not be empty";
  else if (name === "composeOrder") rule = "must have at least one entry";
  else if (name === "opacity") rule = `must be ${LIMITS.opacity[0]} (transparent) to ${LIMITS.opacity[1]} (opaque)`;
  else if (name === "zOrder") rule = `must be ${LIMITS.zOrder[0]} to ${LIMITS.zOrder[1]}`;
  else if (name === "sourcePort") rule = "must be -128 to 127 (int8)";
  else if (name === "frameRate") rule = "must not be negative";
  else if (inRect && (name === "x" || name === "y")) rule = `must be ${-(2 ** 31)} to ${2 ** 31 - 1} (int32)`;
  else if (inRect && (name === "width" || name === "height")) rule = `must be 0 to ${2 ** 31 - 1} (int32)`;
  else if (name === "width" || name === "height") rule = `must be 0 to ${2 ** 32 - 1} (uint32)`;
  else rule = "is out of range";
  return `${where} ${rule}`;
}
