// A device of the index: what a plugin found (a media root, a mounted filesystem, a
// UPnP server, an MTP player), its availability, scan state and counts. Shared by the
// indexer, its plugins and the service; it imports neither.
import type { Caller } from "../../core/service";
import type { PluginName } from "./config";
import type { ScanResult } from "./index/scanner";

export interface DeviceInfo {
  uri: string;
  plugin: PluginName;
  name: string;
  description: string;
  root: string;
  /** Whose rights the device's scans have: the client whose requestMediaScan made it (absent: the service's own). */
  owner?: Caller;
}

export interface Device extends DeviceInfo {
  available: boolean;
  state: "idle" | "scanning";
  /** Entries per kind: audio, video, image. */
  counts: number[];
  /** Scans queued or running, by kind of request ("R:<sub>" recursive, "D:<dir>" one directory, "U:" the directories inotify does not watch). */
  queued: Map<string, Promise<ScanResult>>;
  /** The outcome of the last scan that ended (device list: lastScan). */
  lastScan?: ScanOutcome;
  running: number;
  chain: Promise<unknown>;
  /** Set when the device goes away: its scan stops at the next step. */
  abort: { aborted: boolean };
}

/** How a scan ended, as requestMediaScan answers it and the device list shows it. */
export interface ScanOutcome {
  ok: boolean;
  /** The failure's errno name (ENOSPC, EDQUOT, EIO, EROFS, EACCES, ...), when it was one. */
  errno?: string;
  /** What failed, in words (with the path and, for a full file system, the free space). */
  reason?: string;
  path?: string;
  /** statvfs of the file system written, when a write failed. */
  freeBytes?: number;
  files: number;
  indexed: number;
  failed: number;
  removed: number;
  unreadableDirs: number;
  /** ISO 8601 UTC. */
  at: string;
}

/** How a local device's changes are noticed (device list: monitor). */
export type Monitor = "inotify" | "inotify+rescan" | "rescan" | "none";

const LOCAL: PluginName[] = ["storage", "msc"];
/** Devices of the local file system (their entries are files of directories). */
export const isLocal = (d: { plugin: PluginName }) => LOCAL.includes(d.plugin);
