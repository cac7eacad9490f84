// Media indexer errors (spec part 3, "Errors", media indexer): the table as data.
import type { ErrorRow } from "../../core/errors";

export const E = {
  /** Success text of list, metadata, device list and permission methods. */
  none: { code: 0, text: "No Error" } as ErrorRow,
  /** Success text of requestMediaScan (lower-case "error", as the spec has it). */
  scanOk: { code: 0, text: "No error" } as ErrorRow,
  /** List and metadata methods: the payload is not JSON or not the method's shape. */
  parse: (detail: string): ErrorRow => ({ code: -1, text: `JSON parsing failed: ${detail}` }),
  serviceNameMandatory: { code: -1, text: "serviceName field is mandatory input" } as ErrorRow,
  scanFailed: { code: -1, text: "Scan Failed" } as ErrorRow,
  /** getPlugin, putPlugin, requestDelete, requestMediaScan, runDetect, stopDetect: invalid input. */
  notHandled: (method: string): ErrorRow => ({ code: -1, text: `Method '${method}' for category '/' was not handled` }),
  /** requestDelete: the file is not of a media kind the indexer registers. */
  kindNotRegistered: (kind: string): ErrorRow => ({ code: -3970, text: `kind not registered: '${kind}'` }),
  // Not in the spec's table (docs/decisions/mediaindexer.md, "Errors the spec does not list"): code -1, own text.
  noSuchItem: (uri: string): ErrorRow => ({ code: -1, text: `No such media item: ${uri}` }),
  noSuchDevice: (uri: string): ErrorRow => ({ code: -1, text: `No such device: ${uri}` }),
  pluginUnavailable: (uri: string, why: string): ErrorRow => ({ code: -1, text: `Plugin unavailable: ${uri}: ${why}` }),
  deleteFailed: (why: string): ErrorRow => ({ code: -1, text: `Delete failed: ${why}` }),
  grantFailed: (why: string): ErrorRow => ({ code: -1, text: `Permission could not be granted: ${why}` }),
  /** A caller without the rights the method needs (getMediaDbPermission outside its group or for another service; requestDelete of a file the caller may not delete). */
  denied: (method: string): ErrorRow => ({ code: -1, text: `${method}: permission denied` }),
} as const;

/** Methods whose bad input is the spec's "was not handled" row; the others use the JSON parsing row. */
export const NOT_HANDLED_METHODS = new Set(["getPlugin", "putPlugin", "requestDelete", "requestMediaScan", "runDetect", "stopDetect"]);
