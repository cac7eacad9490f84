// The media indexer's options (docs/services/mediaindexer.md, "Configuration"): the
// board recipe's serviceConfig.mediaindexer, read by the platform's one loader.
import { join } from "node:path";
import { z } from "zod";
import { loadConfig as loadServiceConfig } from "../../core/config";

/** An absolute path: it starts with "/" (a pattern the published recipe schema states too). */
const absolutePath = () => z.string().startsWith("/", "must be an absolute path");
export const PLUGIN_NAMES = ["storage", "msc", "upnp", "mtp"] as const;
export type PluginName = (typeof PLUGIN_NAMES)[number];
/** The table's rule for getMediaDbPermission (schemas.ts); permissionGroup may widen it. */
export const PERMISSION_GROUP = "devservices-media";

export const mediaIndexerOptions = (stateDir: string) => {
  // Types several options share, built once (core/config.ts, "Shared option types").
  const absolute = absolutePath();
  const seconds = z.number().nonnegative();
  const int = z.number().int();
  const bool = z.boolean();
  return z.object({
    /** Local media directories, each a `storage:///<path>` device. */
    mediaRoots: z.array(absolute).default([]),
    /** Where removable mass storage is mounted (msc devices: mounts appearing below it). null: msc detects nothing. */
    removableRoot: absolute.nullable().default("/media"),
    /** The mount table watched for msc (POLLPRI on change). */
    mountinfo: absolute.default("/proc/self/mountinfo"),
    /** udev's filesystem UUID links; without them the superblock is read. */
    uuidDir: absolute.default("/dev/disk/by-uuid"),
    /** The SQLite database (WAL); its directory is what getMediaDbPermission opens to a reader. */
    database: absolute.default(join(stateDir, "db", "media.db")),
    /** Cover art thumbnails (one file per distinct picture). */
    thumbnailDir: absolute.default(join(stateDir, "thumbnails")),
    /** Plugins in the factory at start. */
    plugins: z.array(z.enum(PLUGIN_NAMES)).default([...PLUGIN_NAMES]),
    /** Activate every plugin and run detection at start. */
    detect: bool.default(true),
    /** inotify on indexed local devices. */
    watch: bool.default(true),
    /** Seconds between full rescans of every local device (0: none). */
    rescanInterval: seconds.default(3600),
    /** Seconds between rescans of local devices that inotify does not watch entirely (watch off, watch limit, no inotify; 0: none). */
    fallbackRescanInterval: seconds.default(300),
    /** Metadata extractions in flight during a scan. */
    scanConcurrency: int.min(1).max(64).default(8),
    /** inotify watches (one per directory) of all local devices together; past it, the directories not watched are rescanned every fallbackRescanInterval. */
    maxWatches: int.min(0).max(1_000_000).default(8192),
    /** Files of one directory a scan takes at a time (the directory is read as a stream): bounds a scan's memory whatever the tree. */
    scanBatchFiles: int.min(1).max(100_000).default(1024),
    /** Storage devices one uid's requestMediaScan may create (saved devices it owns; root, mediaRoots and removable media are not counted). */
    maxDevicesPerUser: int.min(0).max(100_000).default(8),
    /** Seconds requestMediaScan waits for its scan to end to answer with its outcome; a longer scan is answered as going on (completed false). */
    scanAnswerTimeout: seconds.max(60).default(20),
    upnp: z
      .object({
        /** Where M-SEARCH goes: the SSDP multicast group, or the unicast address of a server that answers unicast searches. */
        address: z.string().default("239.255.255.250"),
        port: int.min(1).max(65535).default(1900),
        /** Address of the interface searches leave from (multicast interface); the system's choice when absent. */
        interfaceAddress: z.string().optional(),
        /** Seconds a server may wait before answering (MX). */
        mx: int.min(1).max(5).default(1),
        /** Seconds between searches while detecting. */
        searchInterval: seconds.default(300),
        /** Accept only servers whose description and content URLs are on loopback addresses. */
        loopbackOnly: bool.default(false),
        /** Items browsed per Browse request. */
        pageSize: int.min(1).max(5000).default(500),
      })
      .prefault({}),
    /** The libmtp shared library the mtp plugin opens (a name looked up in the library directories, or a path). */
    mtpLibrary: z.string().default("libmtp.so.9"),
    /** Seconds between MTP device detections while detecting (0: only at runDetect). */
    mtpDetectInterval: seconds.default(10),
    /** Groups whose members may call getMediaDbPermission for another service (root always may). */
    grantGroups: z.array(z.string()).default([]),
    /** The group whose members may call getMediaDbPermission at all (for themselves); "*": any caller. Root always may. */
    permissionGroup: z.string().min(1).default(PERMISSION_GROUP),
  });
};

export type MediaIndexerConfig = z.output<ReturnType<typeof mediaIndexerOptions>>;

export function loadConfig(recipe: Record<string, unknown>, stateDir: string): MediaIndexerConfig {
  return loadServiceConfig({ service: "mediaindexer", schema: () => mediaIndexerOptions(stateDir), section: recipe, file: null }).config;
}
