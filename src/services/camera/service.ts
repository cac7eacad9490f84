// Camera service (spec part 2, com.vendor.service.camera2): the spec's methods
// mapped onto the cameras of this instance (cameras.ts: devices, handles, streams,
// captures). Opening a camera is for root and the access group (accessGroup, and
// appIds when configured); the other rules are the handle's lease (cameras.ts).
// Choices where the spec is silent: docs/decisions/camera.md.
import { join } from "node:path";
import { defineService, type Caller } from "../../core/service";
import { allowed, describeRule, group, type AccessRule } from "../../core/access";
import { api } from "./schemas";
import { E } from "./errors";
import { loadCameraOptions } from "./config";
import { Cameras } from "./cameras";
import { LinuxBackend } from "./backend/linux";
import { VirtualBackend } from "./backend/virtual";
import type { CameraBackend } from "./backend/types";

export { pictureBase, autoContrast } from "./cameras";

export default defineService({
  spec: {
    name: "camera2",
    busName: "com.vendor.service.camera2",
    description:
      "Camera service: V4L2 cameras (or the virtual board's test pattern) listed with hotplug, opened as leases, configured (format, properties), streamed into shared memory read by clients, and captured to JPEG files.",
    api,
    badRequest: (_method, problem) =>
      problem.kind === "schema" && problem.missing ? { errorCode: E.missing.code, errorText: E.missing.text } : { errorCode: E.parsing.code, errorText: E.parsing.text },
    internalError: () => ({ errorCode: E.unknown.code, errorText: E.unknown.text }),
    denied: () => ({ errorCode: E.cannotOpen.code, errorText: E.cannotOpen.text }),
  },

  create(ctx) {
    const o = loadCameraOptions(ctx.config).config;
    const kind = o.backend === "auto" ? ctx.board.backend : o.backend;
    const backend: CameraBackend = kind === "linux"
      ? new LinuxBackend({ devDir: o.devDir, log: ctx.log })
      : new VirtualBackend({ cameras: o.virtualCameras, plugDir: o.plugDir, log: ctx.log });
    const cameras = new Cameras(o, {
      backend,
      captureDir: o.captureDir ?? join(ctx.stateDir, "captures"),
      log: ctx.log,
      topics: ctx.topics,
      leases: ctx.leases,
      files: ctx.files,
    });
    cameras.start();

    // The table's rule (root and devservices-camera), another group or any caller
    // (accessGroup), and with appIds also the appId a caller passes.
    const openRule: AccessRule = group(o.accessGroup);
    const appIds = o.appIds;
    const access = {
      open: appIds
        ? {
          test: async (caller: Caller, req: { appId?: string }) =>
            (await allowed(openRule, caller, req)) && (req.appId === undefined || appIds.includes(req.appId)),
          describe: `${describeRule(openRule)}, passing no appId or one of ${appIds.join(", ")}`,
        }
        : openRule,
    };

    return {
      access,
      stop: () => cameras.stop(),
      handlers: {
        getCameraList: (req, call) => cameras.getCameraList(req, call),
        getInfo: (req, call) => cameras.getInfo(req, call),
        open: (req, call) => cameras.open(req, call),
        close: (req, call) => cameras.close(req, call),
        getFormat: (req, call) => cameras.getFormat(req, call),
        setFormat: (req, call) => cameras.setFormat(req, call),
        getProperties: (req, call) => cameras.getProperties(req, call),
        setProperties: (req, call) => cameras.setProperties(req, call),
        startCamera: (req, call) => cameras.startCamera(req, call),
        stopCamera: (req, call) => cameras.stopCamera(req, call),
        startPreview: (req, call) => cameras.startPreview(req, call),
        stopPreview: (req, call) => cameras.stopPreview(req, call),
        getFd: (req, call) => cameras.getFd(req, call),
        capture: (req, call) => cameras.capture(req, call),
        startCapture: (req, call) => cameras.startCapture(req, call),
        stopCapture: (req, call) => cameras.stopCapture(req, call),
        getSolutions: (req, call) => cameras.getSolutions(req, call),
        setSolutions: (req, call) => cameras.setSolutions(req, call),
        getEventNotification: (req, call) => cameras.getEventNotification(req, call),
      },
    };
  },
});
