// What a plugin is: a source of devices of one URI scheme (storage, msc, upnp,
// mtp). The plugin factory holds the plugins a board may use; an active plugin may
// detect devices (runDetect/stopDetect) and indexes the devices it found.
import type { PluginName } from "../config";
import type { Caller } from "../../../core/service";
import type { Logger } from "../../../core/log";
import type { MediaIndexerConfig } from "../config";
import type { Device, DeviceInfo } from "../device";
import type { MediaStore } from "../index/store";
import type { Scanner, ScanResult } from "../index/scanner";

export interface Plugin {
  readonly name: PluginName;
  /** Why the plugin cannot work on this system (a missing library), or null. */
  unavailable(): string | null;
  active: boolean;
  readonly detecting: boolean;
  /** Starts detection (idempotent). */
  startDetect(): Promise<void>;
  /** Stops detection; known devices stay listed. */
  stopDetect(): void;
  /**
   * Indexes a device of this plugin (a subtree of it when sub is given; local devices:
   * only the directories `only` accepts compared, and with the rights of `as` when given).
   */
  scan(dev: Device, sub: string, recursive: boolean, abort: { aborted: boolean }, only?: (rel: string) => boolean, as?: Caller): Promise<ScanResult>;
  close(): void;
}

/**
 * What the indexer offers its plugins (indexer.ts implements it): the devices, their
 * scans and the index. Plugins see this, never the Indexer class, so neither file
 * imports the other.
 */
export interface PluginHost {
  readonly cfg: MediaIndexerConfig;
  readonly log: Logger;
  readonly store: MediaStore;
  readonly scanner: Scanner;
  readonly devices: ReadonlyMap<string, Device>;
  devicesOf(plugin: PluginName): Device[];
  /** Adds or updates a device and sets its availability (persisted). */
  upsertDevice(info: DeviceInfo, available: boolean): Device;
  /** A device went away: unavailable, its scan stopped, its entries kept. */
  setUnavailable(uri: string): void;
  /** Queues a scan of a device (indexer.ts, Indexer.scan). */
  scan(dev: Device, sub?: string, recursive?: boolean, unwatched?: boolean, as?: Caller): Promise<ScanResult>;
  /** The directory walk of a local device. */
  scanLocal(dev: Device, sub: string, recursive: boolean, abort: { aborted: boolean }, guard?: () => Promise<boolean>, only?: (rel: string) => boolean, as?: Caller): Promise<ScanResult>;
  /** Whether a directory can be read and searched (by `as`, or by the service). */
  readable(dir: string, as?: Caller): Promise<boolean>;
  /** Entries were written or deleted outside the scanner. */
  noteChange(uri: string, delta: number[], wrote: boolean): void;
}

export type PluginFactory = (host: PluginHost) => Plugin;
