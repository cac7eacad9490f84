// Media indexer service (spec part 3, com.vendor.service.mediaindexer): scans media
// files of local storage, USB mass storage, UPnP servers (and MTP devices where
// libmtp is present), keeps their metadata in an SQLite database, and answers the
// spec's list, metadata, device, plugin, scan, delete and permission methods. This
// file is the spec's method table over the media index of one instance (media.ts),
// made from the service's context.
// Design and the choices the spec leaves open: docs/decisions/mediaindexer.md.
import { answer } from "../../core/errors";
import { defineService } from "../../core/service";
import { group } from "../../core/access";
import { api } from "./schemas";
import { E, NOT_HANDLED_METHODS } from "./errors";
import { loadConfig } from "./config";
import { MediaIndex } from "./media";

export { MAX_COUNT } from "./media";

export default defineService({
  spec: {
    name: "mediaindexer",
    busName: "com.vendor.service.mediaindexer",
    description:
      "Media indexer: scans audio, video and image files of local storage, USB mass storage and UPnP servers, keeps their metadata in a database, and tells subscribers about new media and device changes.",
    api,
    // A value the schema refuses: getMediaDbPermission's serviceName row, the "was not handled" row, else the parsing row naming the value.
    invalid: {
      default: (v) =>
        v.method === "getPluginList" ? undefined
        : NOT_HANDLED_METHODS.has(v.method) ? E.notHandled(v.method)
        : v.method === "getMediaDbPermission" ? E.serviceNameMandatory
        : E.parse(v.path.length ? `${v.path.join(".")}: ${v.message}` : v.message),
    },
    // getPluginList answers returnValue true whatever the payload (spec). Any JSON object reaches
    // its handler (which lists the instance's plugins); a payload that is not one cannot name an
    // instance here, so its answer leaves the optional pluginList out (docs/decisions/mediaindexer.md).
    badRequest: (method, p) => {
      if (method === "getPluginList") return { returnValue: true };
      return answer(NOT_HANDLED_METHODS.has(method) ? E.notHandled(method) : E.parse(p.message));
    },
    internalError: (method, e) =>
      method === "requestMediaScan"
        ? { errorCode: -1, errorText: E.scanFailed.text }
        : { errorCode: -1, errorText: `${method}: ${(e as Error)?.message ?? String(e)}` },
    denied: (method) => answer(E.denied(method)),
  },

  async create(ctx) {
    const media = MediaIndex.open(loadConfig(ctx.config, ctx.stateDir), ctx);
    try {
      await media.start();
    } catch (e) {
      await media.stop().catch(() => {});
      throw e;
    }
    return {
      // The table's rule (devservices-media), or the board's permissionGroup ("*": any caller).
      access: { getMediaDbPermission: group(media.cfg.permissionGroup) },
      stop: () => media.stop(),
      handlers: {
        getAudioList: (req, call) => media.list("audio", req, call),
        getVideoList: (req, call) => media.list("video", req, call),
        getImageList: (req, call) => media.list("image", req, call),
        getAudioMetadata: (req, call) => media.metadata("audio", req.uri, call.caller),
        getVideoMetadata: (req, call) => media.metadata("video", req.uri, call.caller),
        getImageMetadata: (req, call) => media.metadata("image", req.uri, call.caller),
        getDeviceList: (_req, call) => media.deviceList(call.subscription),
        getMediaDbPermission: (req, call) => media.grantDbPermission(req.serviceName, call.caller),
        getPlugin: (req) => media.getPlugin(req.uri),
        getPluginList: () => ({ returnValue: true as const, pluginList: media.pluginUris() }),
        putPlugin: (req) => media.putPlugin(req.uri),
        runDetect: (req) => media.runDetect(req.uri),
        stopDetect: (req) => media.stopDetect(req.uri),
        requestMediaScan: (req, call) => media.requestMediaScan(req.path, call.caller),
        requestDelete: (req, call) => media.requestDelete(req.uri, call.caller),
      },
    };
  },
});
