// Video output errors. The spec lists the codes connect may return (-1, 20, 52, 53,
// 54, 65, 67) without their meanings and says other failures carry errorCode and
// errorMessage. connect answers only those codes, with the meanings and texts
// assigned here (the connect rows; CONNECT names them by condition); the other
// methods use the original service's code set, with texts written here
// (docs/decisions/videooutput.md). Every failure is
// { returnValue: false, errorCode, errorMessage }.
import type { ErrorRow } from "../../core/errors";

export const E = {
  /** An unexpected failure inside the service. */
  unknown: { code: 1, text: "Unknown error" },
  /** Not JSON, not an object, a missing required field or a field of the wrong type. */
  schema: { code: 3, text: "Could not validate json message against schema" },
  /** Values outside the spec's limits, an unknown sink, a window or crop that does not fit, zOrder not unique. */
  invalidParams: { code: 4, text: "Invalid parameters" },
  /** The request does not fit the sink's or the context's state (already connected, a context not registered or registered twice, a sink connected under another context). */
  invalidStatus: { code: 5, text: "Invalid status" },
  /** A getParam command other than NumConnector and DRMResources. */
  notImplemented: { code: 10, text: "Not implemented" },
  /** The display driver refused (DRM ioctl failed: scaling or position the plane cannot do, no DRM master, no buffer). */
  hal: { code: 20, text: "HAL error" },
  /** setDisplayWindow, setVideoData or disconnect on a sink that is not connected. */
  notConnected: { code: 100, text: "Video not connected" },
  /** The output rectangle is smaller than the sink's plane can scale down to (maxDownscaleSize). */
  downscaleLimit: { code: 102, text: "Downscale limit exceeded" },
  /** The output rectangle is larger than the sink's plane can scale up to (maxUpscaleSize). */
  upscaleLimit: { code: 103, text: "Upscale limit exceeded" },

  // connect's failures: the spec's codes for connect, meanings not shown there; each
  // condition connect detects is given one (docs/decisions/videooutput.md). The
  // driver's refusal is 20 (hal), as for every method.
  /** connect: not JSON, not an object, over the payload limits, a required field missing or of the wrong type. */
  connectSchema: { code: -1, text: "Could not validate json message against schema" },
  /** connect: an unexpected failure inside the service. */
  connectUnknown: { code: -1, text: "Unknown error" },
  /** connect: a sink the board does not have (the recipe names it not, or the display lacks its plane). */
  unknownSink: { code: 52, text: "Unknown sink" },
  /** connect: the sink is connected already (without contexts, or under the context named). */
  sinkConnected: { code: 53, text: "Sink already connected" },
  /** connect: the context named is not registered. */
  contextNotRegistered: { code: 54, text: "Context not registered" },
  /** connect: a value beyond its range (sourcePort int8, an empty source, sink or context); a sentence names the field. */
  invalidValue: { code: 65, text: "Invalid parameters" },
  /** connect: a caller outside the access group, or a context registered by another uid. */
  connectPermission: { code: 67, text: "Permission denied" },
} as const satisfies Record<string, ErrorRow>;

/** connect's rows by condition (all of them in E, the service's one table). */
export const CONNECT = {
  schema: E.connectSchema,
  unknown: E.connectUnknown,
  unknownSink: E.unknownSink,
  sinkConnected: E.sinkConnected,
  contextNotRegistered: E.contextNotRegistered,
  invalidValue: E.invalidValue,
  permission: E.connectPermission,
} as const;
