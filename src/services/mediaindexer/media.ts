// The media indexer's domain (spec part 3, com.vendor.service.mediaindexer): one
// media index made from the service's context. It owns the database (index/store.ts),
// the devices and their scans with the plugin factory (indexer.ts), the inotify
// watches of local devices (watcher.ts), the periodic rescans, and the subscribers of
// the lists and of the device list; it answers with the caller's rights (rights.ts).
// service.ts maps the spec's methods onto it. Choices where the spec is silent:
// docs/decisions/mediaindexer.md.
import { accessSync, constants, mkdirSync } from "node:fs";
import { opendir, stat } from "node:fs/promises";
import { dirname, isAbsolute, join, resolve as resolvePath } from "node:path";
import { ok, raise, type Json } from "../../core/errors";
import { PathRefused, type Call, type Caller, type CallerFiles, type Peers, type Subscription } from "../../core/service";
import { allowed, group } from "../../core/access";
import type { Logger } from "../../core/log";
import type { Topics } from "../../core/topics";
import { StoreTooNew } from "../../core/store";
import { E } from "./errors";
import { PLUGIN_NAMES, type MediaIndexerConfig, type PluginName } from "./config";
import { MediaStore, type MediaRow } from "./index/store";
import { mediaType, extensionOf, KIND_CODE, BAD, type Kind } from "./index/kinds";
import { Slicer, type ScanResult } from "./index/scanner";
import { sqliteErrno } from "./index/failure";
import { Indexer, describeScan, isLocal, type Device, type Monitor, type ScanOutcome } from "./indexer";
import { frozen, restricted, REFUSED_ERRNO } from "./rights";
import { listEntry, metadata } from "./format";
import { grantRead, uidOfUser, isBusName } from "./permission";
import { StoragePlugin } from "./plugins/storage";
import { MscPlugin } from "./plugins/msc";
import { UpnpPlugin } from "./plugins/upnp";
import { MtpPlugin } from "./plugins/mtp";
import type { PluginFactory } from "./plugins/plugin";
import { Watcher } from "./watcher";

const PLUGINS: Record<PluginName, PluginFactory> = {
  storage: (ix) => new StoragePlugin(ix),
  msc: (ix) => new MscPlugin(ix),
  upnp: (ix) => new UpnpPlugin(ix),
  mtp: (ix) => new MtpPlugin(ix),
};

const DEFAULT_COUNT = 500;
/** Entries per message at most, whatever count asks: one message's query, size and encoding stay bounded (docs/decisions/mediaindexer.md). */
export const MAX_COUNT = 5000;
const NO_ERROR = { errorCode: 0, errorText: E.none.text };

/** What a media index needs of the service's context. */
export interface MediaIndexContext {
  stateDir: string;
  log: Logger;
  topics: Topics;
  files: CallerFiles;
  peers: Peers;
}

interface ListSub {
  kind: Kind;
  key: string;
  device?: string;
  count: number;
  /** Entries up to this seq were sent. */
  cursor: number;
  /** The subscriber's rights, as at subscription: its entries are those of directories it may read. */
  who: Caller;
}

/** "msc", "msc:", "msc://" -> "msc"; anything else undefined. */
function pluginName(uri: string): PluginName | undefined {
  const m = /^([a-z]+)(?::(?:\/\/)?)?$/.exec(uri.trim());
  return m && (PLUGIN_NAMES as readonly string[]).includes(m[1]!) ? (m[1] as PluginName) : undefined;
}

export class MediaIndex {
  /** The devices, their scans and the plugin factory. */
  readonly ix: Indexer;
  private readonly watcher?: Watcher;
  private readonly listSubs = new Map<Subscription, ListSub>();
  private readonly timers = new Set<ReturnType<typeof setInterval>>();
  private rightsFailureLogged = false;
  // Device list pushes: at once for availability and state, at most once a second for counts.
  private devicesTimer?: ReturnType<typeof setTimeout>;
  private devicesUrgent = false;
  private lastDevices = "";
  // List pushes: each subscriber gets the entries after its cursor, count at a time.
  private readonly pumping = new Set<Kind>();
  private readonly again = new Set<Kind>();
  private indexedQueued = false;
  /** Root and grantGroups members may grant for any service (the platform's group rule). */
  private readonly grantRule;

  private constructor(
    readonly cfg: MediaIndexerConfig,
    private readonly store: MediaStore,
    private readonly ctx: MediaIndexContext,
  ) {
    this.ix = new Indexer(cfg, store, ctx.log, PLUGINS, ctx.files);
    this.grantRule = group(...cfg.grantGroups);
    this.watcher = cfg.watch ? new Watcher(this.ix, ctx.log, cfg.maxWatches) : undefined;
    this.ix.monitorOf = (dev) => monitorOf(this.watcher?.coverage(dev.uri) ?? "none", cfg.fallbackRescanInterval > 0);
    this.ix.watchedDir = (dev, rel) => this.watcher?.watched(dev.uri, rel) ?? false;
    this.ix.events = {
      devicesChanged: (urgent) => this.devicesChanged(urgent),
      indexed: () => this.indexed(),
      localDevice: (dev, available) => this.watcher?.follow(dev, available),
    };
  }

  /**
   * The database and thumbnail directories made and opened, the index on them. A failure
   * names the path and carries the errno (err.path, err.code), so the runtime can say
   * which service could not start on what, and keep the others.
   */
  static open(cfg: MediaIndexerConfig, ctx: MediaIndexContext): MediaIndex {
    let at = cfg.thumbnailDir;
    let store: MediaStore | undefined;
    try {
      mkdirSync(cfg.thumbnailDir, { recursive: true, mode: 0o755 });
      accessSync(cfg.thumbnailDir, constants.W_OK);
      at = dirname(cfg.database);
      mkdirSync(at, { recursive: true, mode: 0o700 });
      accessSync(at, constants.W_OK);
      at = cfg.database;
      store = new MediaStore(cfg.database);
      return new MediaIndex(cfg, store, ctx);
    } catch (e) {
      try {
        store?.close();
      } catch {}
      // A database of a newer format is told as such (the file, both formats), untouched.
      if (e instanceof StoreTooNew) throw e;
      const errno = e as NodeJS.ErrnoException;
      const path = typeof errno.path === "string" ? errno.path : at;
      const code = typeof errno.code === "string" && /^E[A-Z0-9]+$/.test(errno.code) ? errno.code : sqliteErrno(e) ?? (/NOTADB|CORRUPT/.test(String(errno.code)) ? "EBADMSG" : "EIO");
      const err = new Error(`mediaindexer: cannot use its state at ${path}: ${code} (${errno.message ?? e})`, { cause: e }) as NodeJS.ErrnoException & { service: string };
      err.code = code;
      err.path = path;
      err.service = "mediaindexer";
      throw err;
    }
  }

  /**
   * Local devices of the last run available again and their interrupted scans queued;
   * every plugin of the factory active and detecting (detect); the periodic rescans;
   * the database grants of earlier runs renewed.
   */
  async start(): Promise<void> {
    const { cfg, ix, ctx } = this;
    await ix.restore();
    if (cfg.detect)
      for (const p of ix.factory.values()) {
        if (p.unavailable()) continue;
        p.active = true;
        p.startDetect().catch((e) => ctx.log.warn({ plugin: p.name, err: e }, "detection failed to start"));
      }
    this.every(cfg.rescanInterval, () => {
      for (const d of ix.localDevices()) void ix.scan(d).catch(() => {});
    });
    // The cheap fallback: devices inotify does not cover entirely (unchanged files cost a stat each): the
    // directories not watched of a device partly watched, every directory of one not watched at all.
    this.every(cfg.fallbackRescanInterval, () => {
      for (const d of ix.localDevices()) {
        const c = this.watcher?.coverage(d.uri) ?? "none";
        if (c === "some") void ix.scan(d, "", true, true).catch(() => {});
        else if (c === "none") void ix.scan(d).catch(() => {});
      }
    });
    // Grants of earlier runs, again (a database file recreated since then has lost its ACL).
    for (const g of this.store.permissions())
      try {
        grantRead(g.uid, { database: cfg.database, stateDir: ctx.stateDir });
      } catch (e) {
        ctx.log.warn({ service: g.service, err: (e as Error).message }, "could not renew a database read grant");
      }
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers.clear();
    if (this.devicesTimer) clearTimeout(this.devicesTimer);
    this.watcher?.close();
    this.ix.close();
    await Promise.race([this.ix.idle(), Bun.sleep(2000)]);
    this.store.close();
  }

  private every(seconds: number, fn: () => void) {
    if (seconds <= 0) return;
    const t = setInterval(fn, seconds * 1000);
    t.unref?.();
    this.timers.add(t);
  }

  // ---- lists and metadata

  /** getAudioList, getVideoList, getImageList: the first count entries the caller may see; with a subscription, the rest and new ones follow. */
  async list(kind: Kind, req: { uri?: string; count?: number }, call: Call) {
    const key = `${kind}List`;
    const count = Math.min(req.count ?? DEFAULT_COUNT, MAX_COUNT);
    const who = frozen(call.caller);
    const { rows, last, more } = await this.visibleRows(kind, 0, count, req.uri, who);
    const sub = call.subscription;
    if (sub) {
      this.listSubs.set(sub, { kind, key, device: req.uri, count, cursor: last, who });
      sub.onEnd(() => this.listSubs.delete(sub));
      this.ctx.topics.add(`list/${kind}`, sub);
      // The rest of the list (when longer than count) follows in messages of count entries.
      if (more) this.indexed();
    }
    return ok({ [key]: this.listObject(rows, req.uri), ...NO_ERROR, subscribed: !!sub });
  }

  /** getAudioMetadata, getVideoMetadata, getImageMetadata: an item the caller may see. */
  async metadata(kind: Kind, uri: string, caller: Caller) {
    const item = this.ix.resolveItem(uri);
    const row = item && this.store.entry(item.dev.uri, item.dir, item.name);
    if (!item || !row || row.kind !== KIND_CODE[kind]) raise(E.noSuchItem(uri));
    // An item of a directory the caller may not read is, for it, no item at all.
    const who = frozen(caller);
    if (restricted(who) && !(await this.canSee(who, new Map(), item.dev.uri, item.dir))) raise(E.noSuchItem(uri));
    return ok({ metadata: metadata(item.dev, row), ...NO_ERROR });
  }

  /**
   * Whether a caller may see the entries of a directory of a device: remote devices'
   * entries yes; local ones when the kernel lets the caller read and search the
   * directory (its uid and groups; ctx.files). One decision per directory for the
   * length of one answer (`seen`).
   */
  private canSee(who: Caller, seen: Map<string, Promise<boolean>>, deviceUri: string, dir: string): Promise<boolean> {
    const key = `${deviceUri}/${dir}`;
    let v = seen.get(key);
    if (v) return v;
    const dev = this.ix.devices.get(deviceUri);
    if (!dev) v = Promise.resolve(false);
    else if (!isLocal(dev)) v = Promise.resolve(true);
    else
      v = this.ctx.files.may(who, dir ? join(dev.root, dir) : dev.root, "rx").catch((e) => {
        if (!(e instanceof PathRefused) && !this.rightsFailureLogged) {
          this.rightsFailureLogged = true;
          this.ctx.log.warn({ err: (e as Error).message }, "cannot check a directory with a caller's rights; its entries are not listed");
        }
        return false;
      });
    seen.set(key, v);
    return v;
  }

  /**
   * Up to count entries of a kind after a seq that the caller may see, in index order.
   * Directories it may not read are left out of the next query, so each further page
   * is either full or met a directory not decided before. `last`: the seq the answer
   * went up to (hidden entries included); `more`: count was reached.
   */
  private async visibleRows(kind: Kind, after: number, count: number, device: string | undefined, who: Caller): Promise<{ rows: MediaRow[]; last: number; more: boolean }> {
    if (!restricted(who)) {
      const rows = this.store.list(KIND_CODE[kind], after, count, device);
      return { rows, last: rows.at(-1)?.seq ?? after, more: rows.length === count };
    }
    const seen = new Map<string, Promise<boolean>>();
    const hidden = new Set<string>();
    const out: MediaRow[] = [];
    let cursor = after;
    for (;;) {
      const need = count - out.length;
      const rows = this.store.listExcept(KIND_CODE[kind], cursor, need, device, [...hidden]);
      if (!rows.length) return { rows: out, last: cursor, more: false };
      const verdicts = await Promise.all(rows.map((r) => this.canSee(who, seen, r.device, r.dir)));
      rows.forEach((r, i) => {
        if (verdicts[i]) out.push(r);
        else hidden.add(`${r.device}/${r.dir}`);
      });
      cursor = rows.at(-1)!.seq;
      if (out.length === count) return { rows: out, last: cursor, more: true };
      if (rows.length < need) return { rows: out, last: cursor, more: false };
    }
  }

  private listObject(rows: MediaRow[], device?: string): Json {
    const results: Json[] = [];
    for (const r of rows) {
      const dev = this.ix.devices.get(r.device);
      if (dev) results.push(listEntry(dev, r));
    }
    return { results, count: results.length, ...(device !== undefined ? { uri: device } : {}) };
  }

  /** Entries were written: list subscribers get what is new for them (once per turn of the event loop). */
  private indexed() {
    if (this.indexedQueued) return;
    this.indexedQueued = true;
    setImmediate(() => {
      this.indexedQueued = false;
      for (const k of ["audio", "video", "image"] as Kind[]) if (this.ctx.topics.count(`list/${k}`)) void this.pump(k);
    });
  }

  private async pump(kind: Kind) {
    if (this.pumping.has(kind)) return void this.again.add(kind);
    this.pumping.add(kind);
    const slicer = new Slicer();
    try {
      do {
        this.again.delete(kind);
        for (const sub of this.ctx.topics.subscribers(`list/${kind}`)) {
          const st = this.listSubs.get(sub);
          if (!st) continue;
          for (;;) {
            if (!sub.active) break;
            const { rows, last, more } = await this.visibleRows(kind, st.cursor, st.count, st.device, st.who);
            st.cursor = Math.max(st.cursor, last);
            if (rows.length && sub.active) sub.push({ returnValue: true, ...NO_ERROR, subscribed: true, [st.key]: this.listObject(rows, st.device) });
            if (!more) break;
            await slicer.tick();
          }
        }
      } while (this.again.has(kind));
    } finally {
      this.pumping.delete(kind);
    }
  }

  // ---- devices and plugins

  /** getDeviceList: the plugins with their devices; a subscriber gets the list again when it changes. */
  deviceList(sub?: Subscription) {
    const pluginList = this.ix.pluginList();
    if (sub) {
      this.ctx.topics.add("devices", sub, { shared: true }); // the same for every caller (no caller's rights applied), any caller: shared
      this.lastDevices = JSON.stringify(pluginList);
    }
    return ok({ pluginList, ...NO_ERROR, subscribed: !!sub });
  }

  private devicesChanged(urgent: boolean) {
    if (this.devicesTimer && (this.devicesUrgent || !urgent)) return;
    if (this.devicesTimer) clearTimeout(this.devicesTimer);
    this.devicesUrgent = urgent;
    this.devicesTimer = setTimeout(() => this.pushDevices(), urgent ? 0 : 1000);
  }

  private pushDevices() {
    this.devicesTimer = undefined;
    this.devicesUrgent = false;
    if (!this.ctx.topics.count("devices")) return;
    const pluginList = this.ix.pluginList();
    const text = JSON.stringify(pluginList);
    if (text === this.lastDevices) return;
    this.lastDevices = text;
    this.ctx.topics.publish("devices", { returnValue: true, ...NO_ERROR, subscribed: true, pluginList });
  }

  /** getPluginList: the URIs of the plugin factory. */
  pluginUris(): { uri: string }[] {
    return [...this.ix.factory.keys()].map((uri) => ({ uri }));
  }

  /** putPlugin: a known plugin added to the factory. */
  putPlugin(uri: string) {
    const name = pluginName(uri);
    if (!name || !this.ix.putPlugin(name)) raise(E.notHandled("putPlugin"));
    return ok(NO_ERROR);
  }

  /** getPlugin: the plugin (every available one without uri) active. */
  getPlugin(uri: string | undefined) {
    for (const p of this.targets("getPlugin", uri, false)) {
      const why = p.unavailable();
      if (why) raise(E.pluginUnavailable(p.name, why));
      this.activate(p);
    }
    return ok(NO_ERROR);
  }

  /** runDetect: detection started on the plugin named, else on the active plugins (every available one when none is). */
  async runDetect(uri: string | undefined) {
    for (const p of this.targets("runDetect", uri, true)) {
      const why = p.unavailable();
      if (why) raise(E.pluginUnavailable(p.name, why));
      this.activate(p);
      try {
        await p.startDetect();
      } catch (e) {
        raise(E.pluginUnavailable(p.name, (e as Error).message));
      }
    }
    return ok(NO_ERROR);
  }

  /** stopDetect: detection stopped on the plugin named, else on every plugin; known devices stay listed. */
  stopDetect(uri: string | undefined) {
    for (const p of this.targets("stopDetect", uri, false)) p.stopDetect();
    return ok(NO_ERROR);
  }

  private activate(p: { active: boolean }) {
    if (p.active) return;
    p.active = true;
    this.devicesChanged(true);
  }

  private targets(method: string, uri: string | undefined, activeOnly: boolean) {
    if (uri !== undefined) {
      const name = pluginName(uri);
      const p = name && this.ix.factory.get(name);
      if (!p) raise(E.notHandled(method));
      return [p];
    }
    const all = [...this.ix.factory.values()].filter((p) => !p.unavailable());
    return activeOnly && all.some((p) => p.active) ? all.filter((p) => p.active) : all;
  }

  // ---- the database's readers

  /** getMediaDbPermission: read access to the database for a service (its bus name's uid) or a user. */
  async grantDbPermission(serviceName: string | undefined, caller: Caller) {
    if (typeof serviceName !== "string" || !serviceName) raise(E.serviceNameMandatory);
    if (!(await this.mayGrant(caller, serviceName))) raise(E.denied("getMediaDbPermission"));
    const uid = await this.uidOf(serviceName, caller);
    const { cfg, ctx } = this;
    try {
      const r = grantRead(uid, { database: cfg.database, stateDir: ctx.stateDir });
      this.store.putPermission(serviceName, uid);
      ctx.log.info({ service: serviceName, uid, by: caller.name, result: r }, "media database read access granted");
    } catch (e) {
      ctx.log.warn({ service: serviceName, uid, err: (e as Error).message }, "media database read access not granted");
      raise(E.grantFailed((e as Error).message));
    }
    return ok(NO_ERROR);
  }

  /** Past the method's group rule: root and grantGroups members grant for any service, the others for their own only. */
  private async mayGrant(caller: Caller, serviceName: string): Promise<boolean> {
    if (serviceName === caller.name) return true;
    if (await allowed(this.grantRule, caller, { serviceName })) return true;
    if (!isBusName(serviceName) || serviceName.startsWith(":")) return false;
    try {
      const r = await this.ctx.peers.callRaw({
        destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
        member: "GetNameOwner", signature: "s", body: [serviceName],
      });
      return r.body[0] === caller.name;
    } catch {
      return false;
    }
  }

  private async uidOf(serviceName: string, caller: Caller): Promise<number> {
    if (serviceName === caller.name) return caller.uid;
    if (isBusName(serviceName)) {
      try {
        const r = await this.ctx.peers.callRaw({
          destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
          member: "GetConnectionUnixUser", signature: "s", body: [serviceName],
        });
        return Number(r.body[0]);
      } catch {
        raise(E.grantFailed(`${serviceName} has no owner on the bus`));
      }
    }
    const uid = uidOfUser(serviceName);
    if (uid === undefined) raise(E.grantFailed(`no bus name or user ${serviceName}`));
    return uid;
  }

  // ---- scans and deletes

  /**
   * requestMediaScan: a device, a directory of one, or a directory outside every device
   * (a storage device of its own, the caller's), scanned with the caller's rights. The
   * answer carries the scan's outcome when it ends within scanAnswerTimeout; a longer
   * scan is answered as going on (completed false), its outcome is the device's lastScan.
   */
  async requestMediaScan(pathIn: string, caller: Caller) {
    const { ix, cfg, ctx } = this;
    let path = pathIn.trim();
    if (!path) raise(E.notHandled("requestMediaScan"));
    // The scan covers what this caller may read (root: everything): its rights, frozen now, walk the tree.
    const who = frozen(caller);
    const as = restricted(who) ? who : undefined;
    let scan: Promise<ScanResult>;
    const asDevice = ix.devices.get(path);
    if (asDevice) {
      if (!asDevice.available) failScan({ reason: `device ${asDevice.uri} is not available` });
      if (as && isLocal(asDevice)) await this.mayScan(as, asDevice.root);
      scan = ix.scan(asDevice, "", true, false, who);
    } else {
      if (path.startsWith("storage://")) path = path.slice("storage://".length);
      else if (path.startsWith("file://")) path = path.slice("file://".length);
      if (!isAbsolute(path)) {
        if (/^[a-z]+:\/\//.test(path)) failScan({ reason: `no such device: ${path}` });
        raise(E.notHandled("requestMediaScan"));
      }
      // The path rules (no . or .., not the service's own files), then the kernel's decision with the caller's rights.
      try {
        path = ctx.files.check(path);
      } catch (e) {
        const r = e as PathRefused;
        failScan({ errno: REFUSED_ERRNO[r.reason], path, reason: r.message });
      }
      await this.mayScan(as, path);
      const inside = ix.localDeviceOfPath(path);
      if (inside?.dev.available) scan = ix.scan(inside.dev, inside.rel, true, false, who);
      else {
        // A directory outside every device: a storage device of its own (kept across restarts), the caller's.
        const storage = ix.factory.get("storage") as StoragePlugin | undefined;
        if (!storage) failScan({ reason: "the storage plugin is not in the factory" });
        // One uid's saved devices (counted from the store's devices, so across restarts) are bounded; its existing ones stay rescannable.
        if (as && !ix.devices.has(`storage://${path}`)) {
          const owned = [...ix.devices.values()].filter((d) => d.plugin === "storage" && d.owner?.uid === as.uid && !cfg.mediaRoots.includes(d.root)).length;
          if (owned >= cfg.maxDevicesPerUser)
            failScan({ errno: "EDQUOT", path, reason: `uid ${as.uid} already owns ${owned} storage devices (maxDevicesPerUser ${cfg.maxDevicesPerUser})` });
        }
        const attached = await storage.attach(path, who);
        if (!attached) failScan({ errno: "EACCES", path, reason: `${path} is not a readable directory` });
        scan = attached.scan;
      }
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([
      scan.then(
        (r) => (r.aborted && !r.error ? { ...describeScan(r), ok: false } : describeScan(r)),
        (e) => ({ ...describeScan({ files: 0, indexed: 0, unchanged: 0, removed: 0, failed: 0, subdirs: [], unreadableDirs: 0, peakEntries: 0, ms: 0, aborted: false }), ok: false, reason: (e as Error)?.message ?? String(e) }),
      ),
      new Promise<undefined>((res) => (timer = setTimeout(() => res(undefined), cfg.scanAnswerTimeout * 1000))),
    ]);
    clearTimeout(timer);
    if (!outcome) return { returnValue: true as const, errorCode: 0, errorText: E.scanOk.text, completed: false };
    const dev = asDevice ?? ix.localDeviceOfPath(path)?.dev;
    const withSpace = dev?.lastScan && !dev.lastScan.ok && dev.lastScan.errno === outcome.errno ? dev.lastScan : outcome;
    if (!withSpace.ok) failScan(withSpace);
    return { returnValue: true as const, errorCode: 0, errorText: E.scanOk.text, completed: true, ...counts(withSpace) };
  }

  /**
   * requestMediaScan's check of the directory named: one the caller may read and search
   * (opened with its rights, no symlink on the path; root: one the service may read);
   * else the spec's "Scan Failed" with the errno.
   */
  private async mayScan(as: Caller | undefined, path: string): Promise<void> {
    if (!as) {
      const why = await unreadableDir(path);
      if (why) failScan({ errno: why, path, reason: `${path} is not a readable directory (${why})` });
      return;
    }
    const no = await this.ix.refusal(path, as);
    if (no) failScan({ errno: no.errno, path, reason: `${path} is not a directory the caller may ${no.what} (${no.errno})` });
  }

  /** requestDelete: the media file of an item (its URI, its file's path or its playback URL) deleted with the caller's rights, and its entry. */
  async requestDelete(uriIn: string, caller: Caller) {
    const { ix, store, ctx } = this;
    const uri = uriIn.trim();
    if (!uri) raise(E.notHandled("requestDelete"));
    let dev: Device | undefined;
    let dir = "";
    let name = "";
    /** The file on the local file system, when the URI names one. */
    let file: string | undefined;
    const local = uri.startsWith("file://") ? uri.slice("file://".length) : isAbsolute(uri) ? uri : undefined;
    if (local !== undefined) {
      const abs = resolvePath(local);
      file = local;
      const at = ix.localDeviceOfPath(abs);
      name = abs.slice(abs.lastIndexOf("/") + 1);
      if (at) {
        dev = at.dev;
        const i = at.rel.lastIndexOf("/");
        dir = i < 0 ? "" : at.rel.slice(0, i);
      }
    } else {
      if (!/^[a-z]+:\/\//.test(uri)) raise(E.notHandled("requestDelete"));
      // An item URI, or the playback URL of a server's item (its file_path).
      const byUrl = /^https?:\/\//.test(uri) ? store.byUrl(uri) : undefined;
      const item = byUrl ? { dev: ix.devices.get(byUrl.device), dir: byUrl.dir, name: byUrl.name } : ix.resolveItem(uri);
      if (item?.dev) ({ dev, dir, name } = item as { dev: Device; dir: string; name: string });
      else {
        const path = uri.replace(/[?#].*$/, "");
        name = path.slice(path.lastIndexOf("/") + 1);
      }
      if (dev && isLocal(dev)) file = join(dev.root, dir, name);
    }
    if (!mediaType(name)) raise(E.kindNotRegistered(extensionOf(name) || name));
    const row = dev && store.entry(dev.uri, dir, name);
    if (!dev || !row || row.kind === BAD) {
      // Nothing indexed there; a caller that may not even search that directory learns nothing either way.
      if (file !== undefined && restricted(caller) && !(await ctx.files.may(caller, dirname(file), "x").catch(() => false)))
        raise(E.denied("requestDelete"), { reason: "denied" });
      return ok({ count: 0, ...NO_ERROR });
    }
    if (row.url !== null) raise(E.deleteFailed(`${uri} is on a remote server`));
    if (!dev.available) raise(E.deleteFailed(`device ${dev.uri} is not available`));
    let count = 1;
    try {
      // The caller's own rights decide (the kernel, with its uid and groups): the service lends it none of its own.
      await ctx.files.unlink(caller, file ?? join(dev.root, dir, name));
    } catch (e) {
      if (!(e instanceof PathRefused)) raise(E.deleteFailed((e as Error).message));
      if (["denied", "own", "symlink", "traversal", "relative"].includes(e.reason)) raise(E.denied("requestDelete"), { reason: e.reason });
      if (e.reason !== "missing") raise(E.deleteFailed(e.message));
      count = 0;
    }
    const [kind] = store.deleteIds([row.id]);
    const delta = [0, 0, 0];
    if (kind !== undefined && kind !== BAD) delta[kind]!--;
    ix.noteChange(dev.uri, delta, false);
    return ok({ count, ...NO_ERROR });
  }
}

/** The spec's "Scan Failed" (-1) with what failed: errno, path, reason, free space (docs/decisions/mediaindexer.md). */
function failScan(o: Partial<ScanOutcome>): never {
  raise(E.scanFailed, {
    ...(o.errno ? { errno: o.errno } : {}),
    ...(o.path ? { path: o.path } : {}),
    ...(o.reason ? { reason: o.reason } : {}),
    ...(o.freeBytes !== undefined ? { freeBytes: o.freeBytes } : {}),
    ...(o.files !== undefined ? counts(o as ScanOutcome) : {}),
  });
}

function counts(o: ScanOutcome) {
  return { files: o.files, indexed: o.indexed, failed: o.failed, removed: o.removed, unreadableDirs: o.unreadableDirs };
}

/** The errno name when path is not a directory the service may read, else undefined. */
async function unreadableDir(path: string): Promise<string | undefined> {
  try {
    const st = await stat(path);
    if (!st.isDirectory()) return "ENOTDIR";
    const dir = await opendir(path, { bufferSize: 1 });
    await dir.close();
    return undefined;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? "EIO";
  }
}

/** The device list's monitor value from the watcher's coverage of a device. */
function monitorOf(coverage: "all" | "some" | "none", fallback: boolean): Monitor {
  if (coverage === "all") return "inotify";
  if (coverage === "some") return fallback ? "inotify+rescan" : "inotify";
  return fallback ? "rescan" : "none";
}
