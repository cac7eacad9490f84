// Media indexer API (spec part 3, com.vendor.service.mediaindexer): one entry per
// method of the spec's endpoint table, with the level each method exists from.
import { z } from "zod";
import { base, once, type Api } from "../../core/service";
import { group } from "../../core/access";
import { PERMISSION_GROUP } from "./config";

const Response = once(() => z.looseObject(base()));
const subscribe = once(() => z.boolean().optional().describe("true: keep the call open for updates"));
const deviceUri = once(() => z.string().describe("device URI (storage:///path, msc://<filesystem uuid>, upnp://<udn uuid>, mtp://<vid>:<pid>@<bus>.<dev>)"));
const count = once(() => z.number().int().positive().optional().describe("entries per message (default 500; more than 5000 is taken as 5000)"));

export const Device = once(() => z.lazy(() => z.looseObject({
  uri: z.string(),
  name: z.string(),
  description: z.string(),
  available: z.boolean(),
  state: z.string().describe("idle or scanning"),
  audioCount: z.number(),
  videoCount: z.number(),
  imageCount: z.number(),
  monitor: z.enum(["inotify", "inotify+rescan", "rescan", "none"]).optional()
    .describe("local devices: how changes are noticed (inotify on every directory; inotify on some, the others rescanned every fallbackRescanInterval; rescans only; neither)"),
  lastScan: z.looseObject({
    ok: z.boolean(),
    errno: z.string().optional(),
    reason: z.string().optional(),
    path: z.string().optional(),
    freeBytes: z.number().optional(),
    files: z.number(),
    indexed: z.number(),
    failed: z.number(),
    removed: z.number(),
    unreadableDirs: z.number(),
    at: z.string(),
  }).optional().describe("how the last scan of the device ended"),
})));
export const PluginEntry = once(() => z.lazy(() => z.looseObject({ uri: z.string(), active: z.boolean(), deviceList: z.array(Device()) })));

const common = once(() => ({
  uri: z.string().optional(),
  title: z.string().optional(),
  last_modified_date: z.string().optional(),
  file_size: z.number().optional(),
  file_path: z.string().optional(),
  dirty: z.boolean().optional(),
}));
export const AudioEntry = once(() => z.lazy(() => z.looseObject({
  ...common(),
  duration: z.number().optional(),
  thumbnail: z.string().optional(),
  genre: z.string().optional(),
  album: z.string().optional(),
  artist: z.string().optional(),
})));
export const VideoEntry = once(() => z.lazy(() => z.looseObject({
  ...common(),
  width: z.number().optional(),
  height: z.number().optional(),
  duration: z.number().optional(),
  thumbnail: z.string().optional(),
})));
export const ImageEntry = once(() => z.lazy(() => z.looseObject({ ...common(), width: z.number().optional(), height: z.number().optional() })));

const listOf = (entry: z.ZodType) => z.looseObject({ results: z.array(entry), count: z.number(), uri: z.string().optional() });

const listRequest = once(() => z.lazy(() => z.looseObject({
  uri: deviceUri().optional().describe("device URI; without it the media of every attached device"),
  subscribe: subscribe(),
  count: count(),
})));
const subscribed = once(() => z.boolean().optional());

const metadataRequest = once(() => z.lazy(() => z.looseObject({ uri: z.string().describe("media item URI (<device uri>/<path on device>)") })));
const str = once(() => z.string().optional());
const num = once(() => z.number().optional());
const metaCommon = once(() => ({
  uri: z.string(),
  type: z.string().describe("audio, video or image"),
  title: str(),
  hash: str().describe("changes when the file does"),
  mime: str(),
  file_path: str(),
  file_size: num(),
  last_modified_date: str(),
  date_of_creation: str(),
  dirty: z.boolean().optional(),
}));
export const AudioMetadata = once(() => z.lazy(() => z.looseObject({
  ...metaCommon(),
  duration: num(), thumbnail: str(), genre: str(), album: str(), artist: str(), album_artist: str(),
  track: str().describe("n/total or n"), total_track: str(), total_tracks: str(),
  sample_rate: num(), bit_rate: num(), channels: num(), bit_per_sample: str(), lyric: str(),
})));
export const ImageMetadata = once(() => z.lazy(() => z.looseObject({
  ...metaCommon(),
  width: num(), height: num(),
  geo_location_latitude: num(), geo_location_longitude: num(), geo_location_city: str(), geo_location_country: str(),
})));
export const VideoMetadata = once(() => z.lazy(() => z.looseObject({
  ...metaCommon(),
  width: num(), height: num(), duration: num(), thumbnail: str(), video_codec: str(), audio_codec: str(),
  frame_rate: str().describe("fraction, e.g. 30000/1001"),
})));
const metadataResponse = (m: z.ZodType) => Response().extend({ metadata: m.optional() });

const level = 12;
const level24 = 24;
const pluginUri = once(() => z.string().describe("plugin URI: storage, msc, upnp or mtp (also accepted as msc://)"));

export const api = {
  getAudioList: {
    summary: "Audio entries of one device or of all attached devices, at most count per message; with subscribe, new entries are pushed as they are indexed.",
    request: () => listRequest(),
    response: () => Response().extend({ audioList: listOf(AudioEntry()).optional(), subscribed: subscribed() }),
    subscribable: true,
    level,
  },
  getAudioMetadata: {
    summary: "Every metadata field of an audio item the file has (tags, stream parameters, cover art thumbnail).",
    request: () => metadataRequest(),
    response: () => metadataResponse(AudioMetadata()),
    level,
  },
  getDeviceList: {
    summary: "Plugins with their devices (attached now or in the past), each with availability, scan state and media counts; with subscribe, the full list on every change.",
    request: () => z.looseObject({ subscribe: subscribe() }),
    response: () => Response().extend({ pluginList: z.array(PluginEntry()).optional(), subscribed: z.boolean().optional() }),
    subscribable: true,
    level,
  },
  getImageList: {
    summary: "Image entries (size and dimensions), as getAudioList.",
    request: () => listRequest(),
    response: () => Response().extend({ imageList: listOf(ImageEntry()).optional(), subscribed: subscribed() }),
    subscribable: true,
    level,
  },
  getImageMetadata: {
    summary: "Every metadata field of an image the file has (dimensions, EXIF date, GPS position).",
    request: () => metadataRequest(),
    response: () => metadataResponse(ImageMetadata()),
    level,
  },
  getMediaDbPermission: {
    summary: "Grants the named service read access to the media database (POSIX ACL entries for the uid owning that bus name); callable by root and members of devservices-media (permissionGroup), for services they own; root and grantGroups members for any service.",
    request: () => z.looseObject({ serviceName: z.string().optional().describe("bus name (well-known or unique) of the service, or a user name (root callers)") }),
    response: () => Response(),
    access: group(PERMISSION_GROUP),
    level,
  },
  getPlugin: {
    summary: "Activates a plugin of the factory (every plugin when uri is absent).",
    request: () => z.looseObject({ uri: pluginUri().optional() }),
    response: () => Response(),
    level: level24,
  },
  getPluginList: {
    summary: "The plugins in the plugin factory (returnValue always true).",
    request: () => z.looseObject({}),
    response: () => z.looseObject({ returnValue: z.literal(true), pluginList: z.array(z.looseObject({ uri: z.string() })).optional() }),
    level: level24,
  },
  getVideoList: {
    summary: "Video entries (dimensions and duration), as getAudioList.",
    request: () => listRequest(),
    response: () => Response().extend({ videoList: listOf(VideoEntry()).optional(), subscribed: subscribed() }),
    subscribable: true,
    level,
  },
  getVideoMetadata: {
    summary: "Every metadata field of a video the file has (container duration, dimensions, codecs, frame rate as a fraction).",
    request: () => metadataRequest(),
    response: () => metadataResponse(VideoMetadata()),
    level,
  },
  putPlugin: {
    summary: "Adds a plugin to the plugin factory (storage, msc, upnp, mtp).",
    request: () => z.looseObject({ uri: pluginUri() }),
    response: () => Response(),
    level: level24,
  },
  requestDelete: {
    summary: "Deletes an indexed media file (item URI or its file_path) and its entry; count is the number of files deleted.",
    request: () => z.looseObject({ uri: z.string().describe("media item URI or playback URI (file_path)") }),
    response: () => Response().extend({ count: z.number().optional() }),
    level: level24,
  },
  requestMediaScan: {
    summary: "Scans a path now (a directory of an indexed device, a device URI, or any readable directory, which becomes a storage device).",
    request: () => z.looseObject({ path: z.string().describe("absolute directory path or device URI") }),
    response: () => z.looseObject({
      returnValue: z.boolean(), errorCode: z.number(), errorText: z.string(),
      completed: z.boolean().optional().describe("true: the scan ended and the answer is its outcome; false: it goes on (its outcome is the device's lastScan)"),
      errno: z.string().optional().describe("Scan Failed: the errno of the failure (ENOSPC, EDQUOT, EIO, EROFS, EACCES, ...)"),
      path: z.string().optional().describe("Scan Failed: the path that failed"),
      reason: z.string().optional().describe("Scan Failed: what failed, in words"),
      freeBytes: z.number().optional().describe("Scan Failed on a full file system: its free space (statvfs)"),
      files: z.number().optional(), indexed: z.number().optional(), failed: z.number().optional(), removed: z.number().optional(), unreadableDirs: z.number().optional(),
    }),
    level: level24,
  },
  runDetect: {
    summary: "Starts device detection for a plugin (every active plugin when uri is absent), activating it first.",
    request: () => z.looseObject({ uri: pluginUri().optional() }),
    response: () => Response(),
    level: level24,
  },
  stopDetect: {
    summary: "Stops device detection for a plugin (every plugin when uri is absent); known devices stay listed.",
    request: () => z.looseObject({ uri: pluginUri().optional() }),
    response: () => Response(),
    level: level24,
  },
} satisfies Api;
