// Camera service API (spec part 2, com.vendor.service.camera2). One entry per
// spec method, with the spec's API level; fields the spec leaves open are
// described where they are decided (docs/decisions/camera.md).
import { z } from "zod";
import { answerSchema as answer, once, type Api } from "../../core/service";
import type { InvalidRows } from "../../core/errors";
import { group } from "../../core/access";
import { integerString } from "../../core/jsonschema";
import { E } from "./errors";

/** Root or members of this group may open a camera (configurable: accessGroup; "*": any caller). */
export const DEFAULT_GROUP = "devservices-camera";

/**
 * A handle: a Number, or the string of its digits (the spec declares startCamera's
 * handle a string). Both forms are published (integerString states the string's
 * range in its pattern).
 */
const handle = once(() => {
  const handleNumber = z.number().int();
  return z.union([handleNumber, integerString(handleNumber, { message: "a handle: a Number or a string of digits" })])
    .describe("the handle returned by open (a Number; a string of its digits is taken too)");
});
/**
 * A request without its handle is answered 23 (Param missing): the union of the two
 * forms reports an absent value as a union failure, not as a missing Number, so the
 * row is stated here; a handle of neither form keeps badRequest's 20.
 */
const handleRows: InvalidRows = { fields: { handle: { missing: E.missing } } };
const id = once(() => z.string().min(1).describe("camera ID from getCameraList (camera1, ...)"));
const subscribe = once(() => z.boolean().optional());

export const capability = once(() => z.object({
  min: z.number().optional(),
  max: z.number().optional(),
  default: z.number().optional(),
  step: z.number().optional(),
  value: z.number().optional(),
}));

export const PROPERTY_NAMES = [
  "sharpness", "autoExposure", "autoFocus", "autoWhiteBalance", "backlightCompensation", "brightness", "contrast", "exposure",
  "focusAbsolute", "frequency", "gain", "gamma", "hue", "pan", "saturation", "tilt", "whiteBalanceTemperature", "zoomAbsolute",
] as const;
export type PropertyName = (typeof PROPERTY_NAMES)[number];

/** camera_properties: each optional, a camera_capability; other names are refused. */
export const properties = once(() => z.strictObject(Object.fromEntries(PROPERTY_NAMES.map((n) => [n, capability().optional()])) as {
  [K in PropertyName]: z.ZodOptional<ReturnType<typeof capability>>;
}));

export const cameraFormat = once(() => z.object({
  width: z.number().int().positive().default(640),
  height: z.number().int().positive().default(480),
  format: z.string().default("YUV").describe("YUV or JPEG"),
  fps: z.number().positive(),
}));

export const captureFormat = once(() => z.object({
  width: z.number().int().positive().default(640),
  height: z.number().int().positive().default(480),
  format: z.string().default("YUV"),
  nimage: z.number().optional().describe("images of a burst (1 to 30); required for MODE_BURST"),
  mode: z.string().describe("MODE_BURST or MODE_CONTINUOUS"),
}));

export const captureInfo = once(() => z.object({
  name: z.string().optional(),
  type: z.string().optional(),
  builtin: z.boolean().optional(),
  resolution: z.record(z.string(), z.array(z.string())).optional(),
  supported: z.boolean().optional(),
}));

const solution = once(() => z.object({ name: z.string(), params: z.looseObject({ enable: z.boolean() }) }));
const solutionOut = once(() => solution().extend({ supported: z.boolean().optional() }));

export const api = {
  capture: {
    summary:
      "Saves nimage (1 to 30, default 1) of the next frames of a started camera (startCamera or startPreview) as JPEG files in path (a directory; default the configured capture directory), named PictureDDMMYYYY-HHMMSS.jpg (-N added after the first image of a second).",
    request: () => z.looseObject({ handle: handle(), nimage: z.number().optional(), path: z.string().optional() }),
    response: () => answer({ path: z.array(z.string()) }),
    level: 27,
    invalid: handleRows,
  },
  close: {
    summary: "Closes a handle (a stopped one: stop its stream first). Every handle of a client is closed when the client leaves the bus.",
    request: () => z.looseObject({ handle: handle() }),
    response: () => answer({}),
    level: 11,
    invalid: handleRows,
  },
  getCameraList: {
    summary: "The cameras plugged now; subscribers get the complete deviceList whenever one connects or disconnects.",
    request: () => z.looseObject({ subscribe: subscribe() }),
    response: () => answer({ deviceList: z.array(z.object({ id: z.string().optional() })), subscribed: z.boolean().optional() }),
    subscribable: true,
    level: 11,
  },
  getEventNotification: {
    summary: "Subscribes to camera events {id, eventType} (preview_fault: the stream of a previewing camera failed).",
    request: () => z.looseObject({ subscribe: z.boolean() }),
    response: () => answer({ subscribed: z.boolean().optional() }),
    subscribable: true,
    level: 11,
  },
  getFd: {
    summary:
      "A file descriptor attached to the reply: type buffer, the POSIX shared memory of the handle's stream (read-only, the frame ring of docs/services/camera.md); type event, a new eventfd signalled once per frame written.",
    request: () => z.looseObject({ handle: handle(), type: z.string().describe("buffer or event") }),
    response: () => answer({}),
    passesFd: true,
    level: 13,
    invalid: handleRows,
  },
  getFormat: {
    summary: "The format of an opened camera; subscribers get {id, params} when it changes.",
    request: () => z.looseObject({ id: id(), subscribe: subscribe() }),
    response: () => answer({ params: cameraFormat().optional(), subscribed: z.boolean().optional(), id: z.string().optional() }),
    subscribable: true,
    level: 27,
  },
  getInfo: {
    summary: "Name, type, builtin, and per format (YUV, JPEG) the resolutions as \"<width>,<height>,<fps>\".",
    request: () => z.looseObject({ id: id() }),
    response: () => answer({ info: captureInfo() }),
    level: 11,
  },
  getProperties: {
    summary: "The properties (min, max, step, default, value) an opened camera has, or the named ones; subscribers get {id, params} when they change.",
    request: () => z.looseObject({ id: id(), params: z.array(z.string()).optional(), subscribe: subscribe() }),
    response: () => answer({ params: z.record(z.string(), capability()), subscribed: z.boolean().optional(), id: z.string().optional() }),
    subscribable: true,
    level: 11,
  },
  getSolutions: {
    summary: "The camera solutions, each {name, params: {enable}, supported}; a solution needing a model the board lacks is supported false.",
    request: () => z.looseObject({ handle: handle().optional(), id: id().optional() }),
    response: () => answer({ solutions: z.array(solutionOut()).optional() }),
    level: 21,
  },
  open: {
    summary:
      "Opens a camera: mode primary (default; may change settings and stream, one per camera) or secondary (reads settings and an existing stream). appId, when given, must be permitted.",
    request: () => z.looseObject({ id: id(), mode: z.string().optional(), appId: z.string().optional() }),
    response: () => answer({ handle: z.number() }),
    access: group(DEFAULT_GROUP),
    level: 11,
  },
  setFormat: {
    summary: "Sets width, height, format (YUV or JPEG) and fps of a stopped camera (primary handle).",
    request: () => z.looseObject({ handle: handle(), params: cameraFormat() }),
    response: () => answer({}),
    level: 11,
    invalid: handleRows,
  },
  setProperties: {
    summary: "Sets the value of each property given (primary handle); an empty object succeeds.",
    request: () => z.looseObject({ handle: handle(), params: properties() }),
    response: () => answer({}),
    level: 11,
    invalid: handleRows,
  },
  setSolutions: {
    summary: "Enables or disables solutions (AutoContrast stretches the luma of YUV frames).",
    request: () => z.looseObject({ handle: handle().optional(), id: id().optional(), solutions: z.array(solution()) }),
    response: () => answer({}),
    level: 21,
  },
  startCamera: {
    summary:
      "Starts streaming into shared memory: params.type posixshm (default; the fd through getFd) or sysvshm (the segment's key in the reply).",
    request: () => z.looseObject({
      handle: handle(),
      params: z.looseObject({ type: z.string().optional().describe("posixshm or sysvshm"), source: z.unknown().optional() }).optional(),
    }),
    response: () => answer({ key: z.number().optional(), type: z.string().optional() }),
    level: 27,
    invalid: handleRows,
  },
  startCapture: {
    summary:
      "Writes frames of a started camera as JPEG files to path: MODE_BURST nimage frames, MODE_CONTINUOUS every frame until stopCapture; the format must be the stream's.",
    request: () => z.looseObject({ handle: handle(), params: captureFormat(), path: z.string().optional() }),
    response: () => answer({ path: z.string().optional() }),
    level: 11,
    invalid: handleRows,
  },
  startPreview: {
    summary: "Starts streaming into shared memory and shows the frames on the window windowId (a display plane of the board).",
    request: () => z.looseObject({ handle: handle(), windowId: z.string() }),
    response: () => answer({ key: z.number().optional() }),
    level: 11,
    invalid: handleRows,
  },
  stopCamera: {
    summary: "Stops the stream started with startCamera.",
    request: () => z.looseObject({ handle: handle() }),
    response: () => answer({}),
    level: 27,
    invalid: handleRows,
  },
  stopCapture: {
    summary: "Ends a continuous (or unfinished burst) capture.",
    request: () => z.looseObject({ handle: handle() }),
    response: () => answer({ path: z.array(z.string()).optional() }),
    level: 11,
    invalid: handleRows,
  },
  stopPreview: {
    summary: "Stops the stream started with startPreview.",
    request: () => z.looseObject({ handle: handle() }),
    response: () => answer({}),
    level: 11,
    invalid: handleRows,
  },
} satisfies Api;
