// The indexer: devices (from every plugin) and their scans, one at a time per
// device, queued and coalesced; counts per device; the plugin factory. The service
// (service.ts) maps the spec's methods onto it and owns the subscriptions.
import type { Logger } from "../../core/log";
import type { MediaIndexerConfig, PluginName } from "./config";
import { PLUGIN_NAMES } from "./config";
import { MediaStore } from "./backend/store";
import { Scanner, type ScanResult } from "./backend/scanner";
import type { Plugin, PluginFactory } from "./plugins/plugin";

export interface DeviceInfo {
  uri: string;
  plugin: PluginName;
  name: string;
  description: string;
  root: string;
}

export interface Device extends DeviceInfo {
  available: boolean;
  state: "idle" | "scanning";
  /** Entries per kind: audio, video, image. */
  counts: number[];
  /** Scans queued or running, by kind of request ("R:<sub>" recursive, "D:<dir>" one directory). */
  queued: Map<string, Promise<ScanResult>>;
  running: number;
  chain: Promise<unknown>;
  /** Set when the device goes away: its scan stops at the next step. */
  abort: { aborted: boolean };
}

export interface IndexerEvents {
  /** The device list changed; urgent for availability and state changes, not for counts. */
  devicesChanged(urgent: boolean): void;
  /** Entries were written (list subscribers may have new entries). */
  indexed(): void;
  /** A local device became available or went away (the watcher follows). */
  localDevice?(dev: Device, available: boolean): void;
}

const LOCAL: PluginName[] = ["storage", "msc"];
const emptyResult = (): ScanResult => ({ files: 0, indexed: 0, unchanged: 0, removed: 0, failed: 0, subdirs: [], ms: 0, aborted: true });

export class Indexer {
  readonly devices = new Map<string, Device>();
  /** The plugin factory: the plugins callers may activate. */
  readonly factory = new Map<PluginName, Plugin>();
  readonly scanner: Scanner;
  events: IndexerEvents = { devicesChanged() {}, indexed() {} };
  private closed = false;

  constructor(
    readonly cfg: MediaIndexerConfig,
    readonly store: MediaStore,
    readonly log: Logger,
    private readonly available: Partial<Record<PluginName, PluginFactory>>,
  ) {
    this.scanner = new Scanner({
      store,
      log,
      thumbnailDir: cfg.thumbnailDir,
      concurrency: cfg.scanConcurrency,
      hooks: { changed: (uri, delta, wrote) => this.changed(uri, delta, wrote) },
    });
    // Devices known from earlier runs are listed, unavailable until detection finds them.
    const counts = store.counts();
    store.transaction(() => {
      for (const row of store.devices()) {
        if (row.available) store.setAvailable(row.uri, false);
        this.devices.set(row.uri, this.newDevice(row as DeviceInfo, false, counts.get(row.uri)));
      }
    });
    for (const name of cfg.plugins) this.putPlugin(name);
  }

  private newDevice(info: DeviceInfo, available: boolean, counts = [0, 0, 0]): Device {
    return {
      uri: info.uri, plugin: info.plugin, name: info.name, description: info.description, root: info.root,
      available, state: "idle", counts: [...counts], queued: new Map(), running: 0, chain: Promise.resolve(), abort: { aborted: false },
    };
  }

  /** Adds a known plugin to the factory; false when no such plugin exists. */
  putPlugin(name: string): boolean {
    const make = this.available[name as PluginName];
    if (!make) return false;
    if (!this.factory.has(name as PluginName)) {
      // Factory order is the spec's plugin order, whatever the order of putPlugin calls.
      const all = new Map(this.factory);
      all.set(name as PluginName, make(this));
      this.factory.clear();
      for (const n of PLUGIN_NAMES) if (all.has(n)) this.factory.set(n, all.get(n)!);
      this.events.devicesChanged(true);
    }
    return true;
  }

  devicesOf(plugin: PluginName): Device[] {
    return [...this.devices.values()].filter((d) => d.plugin === plugin).sort((a, b) => a.uri.localeCompare(b.uri));
  }

  /** Adds or updates a device and sets its availability (persisted). */
  upsertDevice(info: DeviceInfo, available: boolean): Device {
    let dev = this.devices.get(info.uri);
    const was = dev?.available ?? false;
    if (!dev) this.devices.set(info.uri, (dev = this.newDevice(info, available)));
    Object.assign(dev, { name: info.name, description: info.description, root: info.root, plugin: info.plugin });
    dev.available = available;
    if (available && !was) dev.abort = { aborted: false };
    if (!available && was) dev.abort.aborted = true;
    this.store.putDevice({ ...info, available: available ? 1 : 0, lastSeen: Date.now() });
    if (was !== available && LOCAL.includes(dev.plugin)) this.events.localDevice?.(dev, available);
    this.events.devicesChanged(true);
    return dev;
  }

  /** A device went away: unavailable, its scan stopped, its entries kept. */
  setUnavailable(uri: string) {
    const dev = this.devices.get(uri);
    if (!dev || !dev.available) return;
    dev.available = false;
    dev.abort.aborted = true;
    this.store.setAvailable(uri, false);
    if (LOCAL.includes(dev.plugin)) this.events.localDevice?.(dev, false);
    this.events.devicesChanged(true);
  }

  /**
   * Queues a scan of a device (a subtree or one directory of it). Requests already
   * queued and not started are joined; a queued whole-device scan covers any other.
   */
  scan(dev: Device, sub = "", recursive = true): Promise<ScanResult> {
    const plugin = this.factory.get(dev.plugin);
    if (!plugin) return Promise.resolve(emptyResult());
    const key = `${recursive ? "R" : "D"}:${sub}`;
    const joined = dev.queued.get("R:") ?? dev.queued.get(key);
    if (joined) return joined;
    const p = dev.chain.then(async () => {
      dev.queued.delete(key);
      if (!dev.available || this.closed) return emptyResult();
      dev.running++;
      const abort = dev.abort;
      try {
        const r = await plugin.scan(dev, sub, recursive, abort);
        if (recursive && !r.aborted && (r.indexed || r.removed || r.failed || sub === ""))
          this.log.info(
            { device: dev.uri, sub: sub || undefined, files: r.files, indexed: r.indexed, unchanged: r.unchanged, removed: r.removed, failed: r.failed, ms: Math.round(r.ms), filesPerSecond: Math.round((r.files * 1000) / Math.max(r.ms, 1)) },
            "scan done",
          );
        if (r.indexed || r.removed) this.scanner.checkpoint();
        return r;
      } catch (e) {
        this.log.error({ device: dev.uri, err: e }, "scan failed");
        throw e;
      } finally {
        dev.running--;
        if (!dev.running && !dev.queued.size && dev.state !== "idle") {
          dev.state = "idle";
          this.events.devicesChanged(true);
        }
      }
    });
    dev.queued.set(key, p);
    dev.chain = p.catch(() => {});
    if (dev.state !== "scanning") {
      dev.state = "scanning";
      this.events.devicesChanged(true);
    }
    return p;
  }

  /** The scan of a local device (storage, msc): the directory walker. */
  scanLocal(dev: Device, sub: string, recursive: boolean, abort: { aborted: boolean }, guard?: () => Promise<boolean>) {
    const roots = new Set(this.localDevices().filter((d) => d !== dev).map((d) => d.root));
    return this.scanner.scan({ device: dev.uri, root: dev.root, sub, recursive, skip: (abs) => roots.has(abs), guard }, abort);
  }

  localDevices(): Device[] {
    return [...this.devices.values()].filter((d) => d.available && LOCAL.includes(d.plugin));
  }

  private changed(uri: string, delta: number[], wrote: boolean) {
    const dev = this.devices.get(uri);
    if (dev) for (let k = 0; k < 3; k++) dev.counts[k]! += delta[k]!;
    if (delta.some((d) => d)) this.events.devicesChanged(false);
    if (wrote) this.events.indexed();
  }

  /** Entries were written or deleted outside the scanner (UPnP, requestDelete). */
  noteChange(uri: string, delta: number[], wrote: boolean) {
    this.changed(uri, delta, wrote);
  }

  /** The device and path on it of a media item URI (`<device uri>/<path>`). */
  resolveItem(uri: string): { dev: Device; dir: string; name: string } | undefined {
    let best: Device | undefined;
    for (const d of this.devices.values())
      if (uri.startsWith(`${d.uri}/`) && (!best || d.uri.length > best.uri.length)) best = d;
    if (!best) return undefined;
    const path = uri.slice(best.uri.length + 1);
    if (!path) return undefined;
    const i = path.lastIndexOf("/");
    return { dev: best, dir: i < 0 ? "" : path.slice(0, i), name: path.slice(i + 1) };
  }

  /** The local device (available or not) holding an absolute path, deepest root first. */
  localDeviceOfPath(abs: string): { dev: Device; rel: string } | undefined {
    let best: Device | undefined;
    for (const d of this.devices.values()) {
      if (!LOCAL.includes(d.plugin)) continue;
      if ((abs === d.root || abs.startsWith(d.root === "/" ? "/" : `${d.root}/`)) && (!best || d.root.length > best.root.length)) best = d;
    }
    return best && { dev: best, rel: abs === best.root ? "" : abs.slice(best.root === "/" ? 1 : best.root.length + 1) };
  }

  pluginList() {
    return [...this.factory.values()].map((p) => ({
      uri: p.name,
      active: p.active,
      deviceList: this.devicesOf(p.name).map((d) => ({
        uri: d.uri,
        name: d.name,
        description: d.description,
        available: d.available,
        state: d.state,
        audioCount: d.counts[0]!,
        videoCount: d.counts[1]!,
        imageCount: d.counts[2]!,
      })),
    }));
  }

  /** Resolves when every queued scan is done (tests, shutdown). */
  async idle(): Promise<void> {
    for (;;) {
      const busy = [...this.devices.values()].filter((d) => d.running || d.queued.size);
      if (!busy.length) return;
      await Promise.all(busy.map((d) => d.chain));
    }
  }

  close() {
    this.closed = true;
    for (const d of this.devices.values()) d.abort.aborted = true;
    for (const p of this.factory.values()) p.close();
    this.scanner.close();
  }
}
