// Camera service errors (spec part 2, "Errors": Camera). Codes and texts are the
// spec's; which method answers which is in service.ts and docs/services/camera.md.
import type { ErrorRow } from "../../core/errors";

export const E = {
  cannotClose: { code: 2, text: "Cannot close device" },
  cannotOpen: { code: 3, text: "Cannot open device" },
  cannotStart: { code: 5, text: "Cannot start device" },
  cannotStop: { code: 6, text: "Cannot stop device" },
  alreadyClosed: { code: 7, text: "Device already closed" },
  alreadyOpen: { code: 8, text: "Device is already open" },
  alreadyStarted: { code: 9, text: "Device is already started" },
  alreadyStopped: { code: 10, text: "Device is already stopped" },
  notOpened: { code: 11, text: "Device not opened" },
  notStarted: { code: 12, text: "Device not started" },
  noDevice: { code: 13, text: "There is no device" },
  parsing: { code: 20, text: "Parsing error" },
  outOfRange: { code: 22, text: "Out of param range" },
  missing: { code: 23, text: "Param missing" },
  unsupportedFormat: { code: 26, text: "Unsupported format" },
  deviceUnsupported: { code: 29, text: "Device unsupported" },
  formatUnsupported: { code: 30, text: "Format unsupported" },
  wrongParam: { code: 32, text: "Wrong param" },
  unknown: { code: 35, text: "Unknown error" },
  openFile: { code: 38, text: "Fail to open file" },
  writeFile: { code: 39, text: "Fail to write file" },
  primaryTaken: { code: 44, text: "Already another device opened as primary" },
  cannotWrite: { code: 45, text: "Cannot write at specified location" },
  memoryType: { code: 46, text: "Unsupported Memory Type" },
  wrongHandle: { code: 47, text: "Wrong handle" },
  previewNotStarted: { code: 48, text: "Preview not started" },
  notPosix: { code: 49, text: "Handle is not in POSIXSHM mode" },
  registerPid: { code: 51, text: "Failed to register pid with specified signal" },
  needPid: { code: 52, text: "Must specify client pid" },
  disconnected: { code: 100, text: "The subscribed camera is disconnected" },
  timeout: { code: 105, text: "Request Timeout" },
  invalidWindow: { code: 106, text: "Invalid windowId" },
  invalidState: { code: 200, text: "Invalid state" },
} as const satisfies Record<string, ErrorRow>;

/**
 * What a handle that does not name an open handle of the caller gets, per method:
 * the code the spec lists for that method (47 where listed; 32 for the start/stop
 * methods, whose lists have 32 and not 47; 200 for close).
 */
export const BAD_HANDLE: Record<string, ErrorRow> = {
  close: E.invalidState,
  startCamera: E.wrongParam,
  stopCamera: E.wrongParam,
  startPreview: E.wrongParam,
  stopPreview: E.wrongParam,
};
export const badHandle = (method: string): ErrorRow => BAD_HANDLE[method] ?? E.wrongHandle;
