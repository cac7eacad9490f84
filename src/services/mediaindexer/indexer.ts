// The indexer: devices (from every plugin) and their scans, one at a time per
// device, queued and coalesced; counts per device; the plugin factory. The service
// (service.ts) maps the spec's methods onto it and owns the subscriptions.
import type { Logger } from "../../core/log";
import { PathRefused, type Caller, type CallerFiles } from "../../core/service";
import { closeFd } from "../../ffi/libc";
import { ownerFromJson, ownerToJson, readableDir, restricted, rightsKey, REFUSED_ERRNO } from "./rights";
import type { MediaIndexerConfig, PluginName } from "./config";
import { PLUGIN_NAMES } from "./config";
import { MediaStore } from "./index/store";
import { Scanner, type ScanResult } from "./index/scanner";
import { freeSpace, StorageFailure, storageFailure } from "./index/failure";
import { isLocal, type Device, type DeviceInfo, type Monitor, type ScanOutcome } from "./device";
import type { Plugin, PluginFactory, PluginHost } from "./plugins/plugin";

export interface IndexerEvents {
  /** The device list changed; urgent for availability and state changes, not for counts. */
  devicesChanged(urgent: boolean): void;
  /** Entries were written (list subscribers may have new entries). */
  indexed(): void;
  /** A local device became available or went away (the watcher follows). */
  localDevice?(dev: Device, available: boolean): void;
}

const emptyResult = (): ScanResult => ({ files: 0, indexed: 0, unchanged: 0, removed: 0, failed: 0, subdirs: [], unreadableDirs: 0, peakEntries: 0, ms: 0, aborted: true });
const ERRNO_TEXT: Record<string, string> = {
  ENOSPC: "no space left on the file system",
  EDQUOT: "disk quota exceeded",
  EIO: "input/output error",
  EROFS: "read-only file system",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
};

export class Indexer implements PluginHost {
  readonly devices = new Map<string, Device>();
  /** The plugin factory: the plugins callers may activate. */
  readonly factory = new Map<PluginName, Plugin>();
  readonly scanner: Scanner;
  events: IndexerEvents = { devicesChanged() {}, indexed() {} };
  /** How a local device's changes are noticed (set by the service from its watcher). */
  monitorOf: (dev: Device) => Monitor = () => "none";
  /** Whether a directory of a device is watched (the "U:" rescans compare the others only). */
  watchedDir: (dev: Device, rel: string) => boolean = () => false;
  private closed = false;
  /** Devices available when the last run ended (restore() makes the local ones available again). */
  private wasAvailable = new Set<string>();

  constructor(
    readonly cfg: MediaIndexerConfig,
    readonly store: MediaStore,
    readonly log: Logger,
    private readonly available: Partial<Record<PluginName, PluginFactory>>,
    /** The file system with a caller's rights (ctx.files): scans of clients and of devices they made. */
    readonly files?: CallerFiles,
  ) {
    this.scanner = new Scanner({
      store,
      log,
      files,
      thumbnailDir: cfg.thumbnailDir,
      concurrency: cfg.scanConcurrency,
      batchFiles: cfg.scanBatchFiles,
      hooks: { changed: (uri, delta, wrote) => this.changed(uri, delta, wrote) },
    });
    // Devices known from earlier runs are listed, unavailable until detection finds them.
    const counts = store.counts();
    store.transaction(() => {
      for (const row of store.devices()) {
        if (row.available) this.wasAvailable.add(row.uri);
        if (row.available) store.setAvailable(row.uri, false);
        this.devices.set(row.uri, this.newDevice({ ...(row as DeviceInfo), owner: ownerFromJson(row.owner) }, false, counts.get(row.uri)));
      }
    });
    for (const name of cfg.plugins) this.putPlugin(name);
  }

  private newDevice(info: DeviceInfo, available: boolean, counts = [0, 0, 0]): Device {
    return {
      uri: info.uri, plugin: info.plugin, name: info.name, description: info.description, root: info.root, owner: info.owner,
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

  /** Adds or updates a device and sets its availability (persisted). An owner in info replaces the device's; without one it is kept. */
  upsertDevice(info: DeviceInfo, available: boolean): Device {
    let dev = this.devices.get(info.uri);
    const was = dev?.available ?? false;
    if (!dev) this.devices.set(info.uri, (dev = this.newDevice(info, available)));
    Object.assign(dev, { name: info.name, description: info.description, root: info.root, plugin: info.plugin });
    if ("owner" in info) dev.owner = info.owner;
    dev.available = available;
    if (available && !was) dev.abort = { aborted: false };
    if (!available && was) dev.abort.aborted = true;
    this.store.putDevice({ uri: info.uri, plugin: info.plugin, name: info.name, description: info.description, root: info.root, owner: ownerToJson(dev.owner), available: available ? 1 : 0, lastSeen: Date.now() });
    if (was !== available && isLocal(dev)) this.events.localDevice?.(dev, available);
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
    if (isLocal(dev)) this.events.localDevice?.(dev, false);
    this.events.devicesChanged(true);
  }

  /**
   * Queues a scan of a device (a subtree or one directory of it). Requests already
   * queued and not started are joined; a queued whole-device scan covers any other.
   * A scan of a local device is recorded in the database until it completes, so one
   * a crash (or a stop) interrupted is queued again at the next start (restore()).
   * `unwatched`: only the directories inotify does not watch are compared.
   * `as`: the client the scan is for (its rights; a local device only); without it,
   * the device owner's, or the service's own. Only scans with the same rights are joined.
   */
  scan(dev: Device, sub = "", recursive = true, unwatched = false, as?: Caller): Promise<ScanResult> {
    const plugin = this.factory.get(dev.plugin);
    if (!plugin) return Promise.resolve(emptyResult());
    const rights = isLocal(dev) ? (restricted(as) ? as : as ? undefined : dev.owner) : undefined;
    const key = unwatched ? "U:" : `${recursive ? "R" : "D"}:${sub}`;
    const who = `#${rightsKey(rights)}`;
    const joined = dev.queued.get(`R:${who}`) ?? dev.queued.get(key + who);
    if (joined) return joined;
    let record: number | undefined;
    if (isLocal(dev))
      try {
        record = this.store.putScan(dev.uri, key);
      } catch (e) {
        const f = storageFailure(e, this.store.file, "recording the scan");
        if (!f) throw e;
        const failed = { ...emptyResult(), aborted: false, error: f };
        void this.outcome(dev, failed);
        return Promise.resolve(failed);
      }
    const p = dev.chain.then(async () => {
      dev.queued.delete(key + who);
      if (!dev.available || this.closed) return emptyResult();
      dev.running++;
      const abort = dev.abort;
      try {
        const r = await plugin.scan(dev, sub, recursive, abort, unwatched ? (rel) => !this.watchedDir(dev, rel) : undefined, rights);
        if (recursive && !r.aborted && (r.indexed || r.removed || r.failed || r.error || sub === ""))
          this.log.info(
            { device: dev.uri, sub: sub || undefined, files: r.files, indexed: r.indexed, unchanged: r.unchanged, removed: r.removed, failed: r.failed, unreadableDirs: r.unreadableDirs || undefined, errno: r.error?.code, ms: Math.round(r.ms), filesPerSecond: Math.round((r.files * 1000) / Math.max(r.ms, 1)), peakEntries: r.peakEntries },
            r.error ? "scan failed" : "scan done",
          );
        if (r.indexed || r.removed) this.scanner.checkpoint();
        // Done (not stopped by the device going away or by a failure): its record goes, and a whole-device scan covers every one queued before it.
        if (record !== undefined && !r.aborted && !r.error)
          try {
            this.store.scanDone(dev.uri, record, key === "R:");
          } catch (e) {
            this.log.warn({ device: dev.uri, err: (e as Error).message }, "scan record not removed; the scan runs again at the next start");
          }
        if (!r.aborted || r.error) await this.outcome(dev, r);
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
    dev.queued.set(key + who, p);
    dev.chain = p.catch(() => {});
    if (dev.state !== "scanning") {
      dev.state = "scanning";
      this.events.devicesChanged(true);
    }
    return p;
  }

  /** Records how a scan ended on its device (lastScan), with the free space of a file system a write failed on. */
  private async outcome(dev: Device, r: ScanResult): Promise<ScanOutcome> {
    const o = describeScan(r);
    if (r.error && ["ENOSPC", "EDQUOT"].includes(r.error.code)) {
      const fs = await freeSpace(r.error.path);
      if (fs) {
        o.freeBytes = fs.freeBytes;
        o.reason += `; ${fs.freeBytes} of ${fs.totalBytes} bytes free`;
      }
    }
    dev.lastScan = o;
    this.events.devicesChanged(true);
    return o;
  }

  /**
   * At start, without detection: local storage devices that were available when the
   * last run ended (a clean stop or a crash) and are still readable directories are
   * available again, and the scans a crash or a stop interrupted are queued again.
   * Removable (msc) devices come back through detection only: another filesystem may
   * have been mounted in their place meanwhile.
   */
  async restore(): Promise<void> {
    const pending = new Map<string, string[]>();
    for (const s of this.store.scans()) {
      let keys = pending.get(s.device);
      if (!keys) pending.set(s.device, (keys = []));
      keys.push(s.key);
    }
    for (const dev of [...this.devices.values()]) {
      if (dev.plugin !== "storage" || !this.factory.has("storage") || dev.available) continue;
      if (!this.wasAvailable.has(dev.uri) && !pending.has(dev.uri)) continue;
      const ok = await this.readable(dev.root, dev.owner);
      if (!ok || dev.available) continue;
      this.upsertDevice({ uri: dev.uri, plugin: dev.plugin, name: dev.name, description: dev.description, root: dev.root }, true);
      const keys = pending.get(dev.uri) ?? [];
      if (keys.length) this.log.info({ device: dev.uri, scans: keys.length }, "resuming scans interrupted at the last run");
      for (const key of keys) {
        const sub = key.slice(2);
        if (key.startsWith("U:")) void this.scan(dev, "", true, true).catch(() => {});
        else void this.scan(dev, sub, key.startsWith("R:")).catch(() => {});
      }
    }
  }

  /** The scan of a local device (storage, msc): the directory walker, with the rights of `as` when given. */
  scanLocal(dev: Device, sub: string, recursive: boolean, abort: { aborted: boolean }, guard?: () => Promise<boolean>, only?: (rel: string) => boolean, as?: Caller) {
    const roots = new Set(this.localDevices().filter((d) => d !== dev).map((d) => d.root));
    return this.scanner.scan({ device: dev.uri, root: dev.root, sub, recursive, skip: (abs) => roots.has(abs), guard, only, as }, abort);
  }

  /** Whether a directory can be read and searched: by `as` (opened with its rights, no symlink on the path), or by the service. */
  async readable(dir: string, as?: Caller): Promise<boolean> {
    if (!restricted(as)) return readableDir(dir);
    return !(await this.refusal(dir, as));
  }

  /** Why `as` may not read and search a directory (opened with its rights, no symlink on the path): the errno name and which it may not do; undefined when it may. */
  async refusal(dir: string, as: Caller): Promise<{ errno: string; what: "read" | "search" } | undefined> {
    if (!this.files) return { errno: "EACCES", what: "read" };
    let fd: number;
    try {
      fd = await this.files.open(as, dir, { read: true, directory: true });
    } catch (e) {
      return { errno: e instanceof PathRefused ? REFUSED_ERRNO[e.reason] : "EACCES", what: "read" };
    }
    closeFd(fd);
    return (await this.files.may(as, dir, "x").catch(() => false)) ? undefined : { errno: "EACCES", what: "search" };
  }


  localDevices(): Device[] {
    return [...this.devices.values()].filter((d) => d.available && isLocal(d));
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
      if (!isLocal(d)) continue;
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
        ...(isLocal(d) && d.available ? { monitor: this.monitorOf(d) } : {}),
        ...(d.lastScan ? { lastScan: { ...d.lastScan } } : {}),
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

/** A scan's outcome: failed when the indexer's storage failed, the directory could not be read, or every media file failed. */
export function describeScan(r: ScanResult): ScanOutcome {
  const o: ScanOutcome = {
    ok: true, files: r.files, indexed: r.indexed, failed: r.failed, removed: r.removed, unreadableDirs: r.unreadableDirs, at: new Date().toISOString(),
  };
  if (r.error) {
    const f = r.error;
    Object.assign(o, { ok: false, errno: f.code, path: f.path, reason: `${f.what} ${f.path}: ${ERRNO_TEXT[f.code] ?? f.code} (${f.code})` });
  } else if (r.aborted) Object.assign(o, { ok: false, reason: "the device went away during the scan" });
  else if (r.failed > 0 && r.failed === r.files) Object.assign(o, { ok: false, reason: `none of the ${r.files} media files could be read` });
  return o;
}

export { StorageFailure, isLocal };
export type { Device, DeviceInfo, Monitor, ScanOutcome };
