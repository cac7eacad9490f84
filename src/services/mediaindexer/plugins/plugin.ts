// What a plugin is: a source of devices of one URI scheme (storage, msc, upnp,
// mtp). The plugin factory holds the plugins a board may use; an active plugin may
// detect devices (runDetect/stopDetect) and indexes the devices it found.
import type { PluginName } from "../config";
import type { Caller } from "../../../core/service";
import type { Device, Indexer } from "../indexer";
import type { ScanResult } from "../backend/scanner";

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

export type PluginFactory = (ix: Indexer) => Plugin;
