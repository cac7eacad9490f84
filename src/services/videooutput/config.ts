// The video output service's options (docs/services/videooutput.md), read by the
// platform's one loader (src/core/config.ts): the board recipe's
// serviceConfig.videooutput and the Key=Value file videooutput.conf (in
// /etc/devservices unless configFile names another; null: none), whose values win.
import { z } from "zod";
import { configFileOf, loadConfig } from "../../core/config";
import { DEFAULT_GROUP, VideoSize } from "./schemas";

/** Default of maxContexts. */
export const DEFAULT_MAX_CONTEXTS = 32;
/** Defaults of maxFrameWidth and maxFrameHeight: DCI 8K (8192x4320), which takes DCI 4K and UHD 8K. */
export const DEFAULT_MAX_FRAME = { width: 8192, height: 4320 } as const;
/** The most a DRM plane's source rectangle addresses (16.16 fixed point). */
const FRAME_CEILING = 65535;

export const sinkConfig = () => z.object({
  /** The sink ID callers use (MAIN, SUB0, ...). */
  sink: z.string().regex(/^[A-Z][A-Z0-9]*$/, "an upper-case sink ID such as MAIN or SUB0"),
  /** The plane: its index in the card's plane list (every plane, primary and cursor included, by ascending id). */
  plane: z.number().int().min(0),
  /** The smallest output the plane scales a frame down to. */
  maxDownscaleSize: VideoSize().default({ width: 64, height: 36 }),
  /** The largest output the plane scales a frame up to. */
  maxUpscaleSize: VideoSize().default({ width: 3840, height: 2160 }),
});
export type SinkConfigT = z.output<ReturnType<typeof sinkConfig>>;

export const videoOutputOptions = () => {
  // A type several options share, built once (core/config.ts, "Shared option types").
  const int = z.coerce.number().int();
  return z.object({
    /** The Key=Value file (a name in /etc/devservices or an absolute path); null: no file. */
    configFile: z.string().nullable().default("videooutput.conf"),
    /** Besides root, members of this group may call the service (the media framework's group); "*": any caller. */
    accessGroup: z.string().min(1).default(DEFAULT_GROUP),
    /** Registered contexts on the board at once (they outlive their registering connection: docs/services/videooutput.md). */
    maxContexts: int.min(1).max(4096).default(DEFAULT_MAX_CONTEXTS),
    /** The largest frame setVideoData takes: the service gives the sink's plane a framebuffer of the frame's size. */
    maxFrameWidth: int.min(1).max(FRAME_CEILING).default(DEFAULT_MAX_FRAME.width),
    maxFrameHeight: int.min(1).max(FRAME_CEILING).default(DEFAULT_MAX_FRAME.height),
    /** linux: the display card, a /dev/dri path or a DRM driver name (vkms, bochs-drm, vc4). */
    card: z.string().min(1).default("/dev/dri/card0"),
    /** linux: the connector id to show on (default: the first connected one). */
    connector: int.positive().optional(),
    /** linux: plane updates by atomic commit where the driver has it (auto), or always one way. */
    commit: z.enum(["auto", "atomic", "legacy"]).default("auto"),
    /** virtual: the simulated display's size. */
    display: VideoSize().default({ width: 1920, height: 1080 }),
    /** Sinks and the planes they drive, in zOrder order (the first is at the bottom). */
    sinks: z.array(sinkConfig()).min(1).max(4).default([
      { sink: "MAIN", plane: 0, maxDownscaleSize: { width: 64, height: 36 }, maxUpscaleSize: { width: 3840, height: 2160 } },
      { sink: "SUB0", plane: 1, maxDownscaleSize: { width: 64, height: 36 }, maxUpscaleSize: { width: 3840, height: 2160 } },
    ]).refine((s) => new Set(s.map((x) => x.sink)).size === s.length && new Set(s.map((x) => x.plane)).size === s.length,
      "each sink once, each plane once"),
  });
};
export type VideoOutputOptionsT = z.output<ReturnType<typeof videoOutputOptions>>;

const FILE_KEYS = ["accessGroup", "maxContexts", "maxFrameWidth", "maxFrameHeight", "card", "connector", "commit"] as const;

export function loadVideoOutputOptions(section: Record<string, unknown>) {
  return loadConfig({
    service: "videooutput",
    schema: videoOutputOptions,
    section,
    file: configFileOf(section, "videooutput.conf"),
    format: { separator: "equals" },
    fileKeys: FILE_KEYS,
    onInvalid: "default",
  });
}
