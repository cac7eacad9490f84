// The camera service's options (docs/services/camera.md, "Options"), read by the
// platform's one loader (src/core/config.ts) from the board recipe's
// serviceConfig.camera2 section.
import { z } from "zod";
import { loadConfig } from "../../core/config";
import { DEFAULT_GROUP } from "./schemas";

/** The options' schema, built when the service starts (and garbage after). */
export const cameraOptions = () => {
  // A type several options share, built once (core/config.ts, "Shared option types").
  const int = z.number().int();
  return z.object({
    /** auto: the board's backend (linux: V4L2; virtual: the test pattern). */
    backend: z.enum(["auto", "linux", "virtual"]).default("auto"),
    /** Where V4L2 nodes (videoN) appear. */
    devDir: z.string().default("/dev"),
    /** The virtual backend's cameras, always present. */
    virtualCameras: z.array(z.string()).default(["Virtual Camera"]),
    /** The virtual backend's plug directory: one camera per file (hotplug on the virtual board). */
    plugDir: z.string().optional(),
    /** Root and this group's members may open a camera ("*": any caller). */
    accessGroup: z.string().min(1).default(DEFAULT_GROUP),
    /** Application IDs permitted to open a camera when they pass appId; absent: any appId. */
    appIds: z.array(z.string()).optional(),
    /** Preview windows shown on a display: window ID -> DRM card (and connector). */
    displays: z.record(z.string(), z.object({ card: z.string(), connector: int.optional() })).default({}),
    /** Preview windows with no display (the virtual board's): the preview streams, nothing is shown. */
    windows: z.array(z.string()).default([]),
    /** Where capture writes when no path is given (default: captures/ in the state directory), with the service's rights. */
    captureDir: z.string().optional(),
    /** Frames the shared-memory ring holds. */
    ringSlots: int.min(2).max(64).default(8),
    /** Permissions of a System V segment (POSIX memory goes by fd to whoever asks). */
    shmMode: int.min(0).max(0o777).default(0o660),
    /** How long a capture waits for a frame before it answers 105. */
    frameTimeoutMs: int.positive().default(5000),
    /** Names an image's file may take (PictureDDMMYYYY-HHMMSS.jpg, then -1, -2, ...) when the earlier ones exist; past them: 39. */
    captureNameTries: int.min(1).max(100000).default(1000),
    /** JPEG quality of encoded YUV frames. */
    jpegQuality: int.min(1).max(100).default(85),
  });
};
export type CameraOptionsT = z.output<ReturnType<typeof cameraOptions>>;

export function loadCameraOptions(section: Record<string, unknown>) {
  return loadConfig({ service: "camera2", schema: cameraOptions, section, file: null });
}
