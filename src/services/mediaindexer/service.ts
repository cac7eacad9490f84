// Media indexer service (spec part 3, com.vendor.service.mediaindexer): scans media
// files of local storage, USB mass storage, UPnP servers (and MTP devices where
// libmtp is present), keeps their metadata in an SQLite database, and answers the
// spec's list, metadata, device, plugin, scan, delete and permission methods.
// Design and the choices the spec leaves open: docs/decisions/mediaindexer.md.
import { accessSync, constants, mkdirSync } from "node:fs";
import { opendir, stat } from "node:fs/promises";
import { dirname, isAbsolute, join, resolve as resolvePath } from "node:path";
import { answer, ok, raise, type Json } from "../../core/errors";
import { defineService, PathRefused, type Subscription, type Caller, type ServiceContext } from "../../core/service";
import { allowed, group } from "../../core/access";
import { api } from "./schemas";
import { E, NOT_HANDLED_METHODS } from "./errors";
import { loadConfig, PLUGIN_NAMES, type MediaIndexerConfig, type PluginName } from "./config";
import { MediaStore } from "./index/store";
import { StoreTooNew } from "../../core/store";
import { mediaType, extensionOf, KIND_CODE, BAD, type Kind } from "./index/kinds";
import { Slicer } from "./index/scanner";
import { Indexer, describeScan, isLocal, type Device, type Monitor, type ScanOutcome } from "./indexer";
import { frozen, restricted, REFUSED_ERRNO } from "./rights";
import type { MediaRow } from "./index/store";
import { sqliteErrno } from "./index/failure";
import type { ScanResult } from "./index/scanner";
import { listEntry, metadata } from "./format";
import { grantRead, uidOfUser, isBusName } from "./permission";
import { StoragePlugin } from "./plugins/storage";
import { MscPlugin } from "./plugins/msc";
import { UpnpPlugin } from "./plugins/upnp";
import { MtpPlugin } from "./plugins/mtp";
import { Watcher } from "./watcher";
import type { PluginFactory } from "./plugins/plugin";

const PLUGINS: Record<PluginName, PluginFactory> = {
  storage: (ix) => new StoragePlugin(ix),
  msc: (ix) => new MscPlugin(ix),
  upnp: (ix) => new UpnpPlugin(ix),
  mtp: (ix) => new MtpPlugin(ix),
};

const LISTS: Record<string, { kind: Kind; key: string }> = {
  getAudioList: { kind: "audio", key: "audioList" },
  getVideoList: { kind: "video", key: "videoList" },
  getImageList: { kind: "image", key: "imageList" },
};
const METADATA: Record<string, Kind> = { getAudioMetadata: "audio", getVideoMetadata: "video", getImageMetadata: "image" };
const DEFAULT_COUNT = 500;
/** Entries per message at most, whatever count asks: one message's query, size and encoding stay bounded (docs/decisions/mediaindexer.md). */
export const MAX_COUNT = 5000;
const NO_ERROR = { errorCode: 0, errorText: E.none.text };

/** Indexers of this process, newest last: badRequest (per module) answers getPluginList from the one being served. */
const live: Indexer[] = [];

/** "msc", "msc:", "msc://" -> "msc"; anything else undefined. */
function pluginName(uri: string): PluginName | undefined {
  const m = /^([a-z]+)(?::(?:\/\/)?)?$/.exec(uri.trim());
  return m && (PLUGIN_NAMES as readonly string[]).includes(m[1]!) ? (m[1] as PluginName) : undefined;
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
    badRequest: (method, p) => {
      if (method === "getPluginList") return { returnValue: true, pluginList: pluginListOf(live.at(-1)) };
      return answer(NOT_HANDLED_METHODS.has(method) ? E.notHandled(method) : E.parse(p.message));
    },
    internalError: (method, e) =>
      method === "requestMediaScan"
        ? { errorCode: -1, errorText: E.scanFailed.text }
        : { errorCode: -1, errorText: `${method}: ${(e as Error)?.message ?? String(e)}` },
    denied: (method) => answer(E.denied(method)),
  },

  async create(ctx) {
    const cfg = loadConfig(ctx.config, ctx.stateDir);
    const { store, ix } = openState(cfg, ctx);
    let rightsFailureLogged = false;

    /**
     * Whether a caller may see the entries of a directory of a device: remote devices'
     * entries yes; local ones when the kernel lets the caller read and search the
     * directory (its uid and groups; ctx.files). One decision per directory for the
     * length of one answer (`seen`).
     */
    const canSee = (who: Caller, seen: Map<string, Promise<boolean>>, deviceUri: string, dir: string): Promise<boolean> => {
      const key = `${deviceUri}/${dir}`;
      let v = seen.get(key);
      if (v) return v;
      const dev = ix.devices.get(deviceUri);
      if (!dev) v = Promise.resolve(false);
      else if (!isLocal(dev)) v = Promise.resolve(true);
      else
        v = ctx.files.may(who, dir ? join(dev.root, dir) : dev.root, "rx").catch((e) => {
          if (!(e instanceof PathRefused) && !rightsFailureLogged) {
            rightsFailureLogged = true;
            ctx.log.warn({ err: (e as Error).message }, "cannot check a directory with a caller's rights; its entries are not listed");
          }
          return false;
        });
      seen.set(key, v);
      return v;
    };

    /**
     * Up to count entries of a kind after a seq that the caller may see, in index order.
     * Directories it may not read are left out of the next query, so each further page
     * is either full or met a directory not decided before. `last`: the seq the answer
     * went up to (hidden entries included); `more`: count was reached.
     */
    const visibleRows = async (kind: Kind, after: number, count: number, device: string | undefined, who: Caller): Promise<{ rows: MediaRow[]; last: number; more: boolean }> => {
      if (!restricted(who)) {
        const rows = store.list(KIND_CODE[kind], after, count, device);
        return { rows, last: rows.at(-1)?.seq ?? after, more: rows.length === count };
      }
      const seen = new Map<string, Promise<boolean>>();
      const hidden = new Set<string>();
      const out: MediaRow[] = [];
      let cursor = after;
      for (;;) {
        const need = count - out.length;
        const rows = store.listExcept(KIND_CODE[kind], cursor, need, device, [...hidden]);
        if (!rows.length) return { rows: out, last: cursor, more: false };
        const verdicts = await Promise.all(rows.map((r) => canSee(who, seen, r.device, r.dir)));
        rows.forEach((r, i) => {
          if (verdicts[i]) out.push(r);
          else hidden.add(`${r.device}/${r.dir}`);
        });
        cursor = rows.at(-1)!.seq;
        if (out.length === count) return { rows: out, last: cursor, more: true };
        if (rows.length < need) return { rows: out, last: cursor, more: false };
      }
    };
    live.push(ix);
    const listSubs = new Map<Subscription, ListSub>();
    const watcher = cfg.watch ? new Watcher(ix, ctx.log, cfg.maxWatches) : undefined;
    ix.monitorOf = (dev) => monitorOf(watcher?.coverage(dev.uri) ?? "none", cfg.fallbackRescanInterval > 0);
    ix.watchedDir = (dev, rel) => watcher?.watched(dev.uri, rel) ?? false;
    const timers = new Set<ReturnType<typeof setTimeout>>();

    // ---- device list pushes: at once for availability and state, at most once a second for counts
    let devicesTimer: ReturnType<typeof setTimeout> | undefined;
    let devicesUrgent = false;
    let lastDevices = "";
    const pushDevices = () => {
      devicesTimer = undefined;
      devicesUrgent = false;
      if (!ctx.topics.count("devices")) return;
      const pluginList = ix.pluginList();
      const text = JSON.stringify(pluginList);
      if (text === lastDevices) return;
      lastDevices = text;
      ctx.topics.publish("devices", { returnValue: true, ...NO_ERROR, subscribed: true, pluginList });
    };
    const devicesChanged = (urgent: boolean) => {
      if (devicesTimer && (devicesUrgent || !urgent)) return;
      if (devicesTimer) clearTimeout(devicesTimer);
      devicesUrgent = urgent;
      devicesTimer = setTimeout(pushDevices, urgent ? 0 : 1000);
    };

    // ---- list pushes: each subscriber gets the entries after its cursor, count at a time
    const pumping = new Set<Kind>();
    const again = new Set<Kind>();
    const pump = async (kind: Kind) => {
      if (pumping.has(kind)) return void again.add(kind);
      pumping.add(kind);
      const slicer = new Slicer();
      try {
        do {
          again.delete(kind);
          for (const sub of ctx.topics.subscribers(`list/${kind}`)) {
            const st = listSubs.get(sub);
            if (!st) continue;
            for (;;) {
              if (!sub.active) break;
              const { rows, last, more } = await visibleRows(kind, st.cursor, st.count, st.device, st.who);
              st.cursor = Math.max(st.cursor, last);
              if (rows.length && sub.active) sub.push({ returnValue: true, ...NO_ERROR, subscribed: true, [st.key]: listObject(rows, st.device) });
              if (!more) break;
              await slicer.tick();
            }
          }
        } while (again.has(kind));
      } finally {
        pumping.delete(kind);
      }
    };
    let indexedQueued = false;
    const indexed = () => {
      if (indexedQueued) return;
      indexedQueued = true;
      setImmediate(() => {
        indexedQueued = false;
        for (const k of ["audio", "video", "image"] as Kind[]) if (ctx.topics.count(`list/${k}`)) void pump(k);
      });
    };

    ix.events = {
      devicesChanged,
      indexed,
      localDevice: (dev, available) => watcher?.follow(dev, available),
    };

    const listObject = (rows: ReturnType<typeof store.list>, device?: string): Json => {
      const results: Json[] = [];
      for (const r of rows) {
        const dev = ix.devices.get(r.device);
        if (dev) results.push(listEntry(dev, r));
      }
      return { results, count: results.length, ...(device !== undefined ? { uri: device } : {}) };
    };

    // ---- start: local devices of the last run available again, interrupted scans queued again
    await ix.restore();
    // ---- every plugin of the factory active and detecting (configurable)
    if (cfg.detect)
      for (const p of ix.factory.values()) {
        if (p.unavailable()) continue;
        p.active = true;
        p.startDetect().catch((e) => ctx.log.warn({ plugin: p.name, err: e }, "detection failed to start"));
      }
    const every = (seconds: number, fn: () => void) => {
      if (seconds <= 0) return;
      const t = setInterval(fn, seconds * 1000);
      t.unref?.();
      timers.add(t);
    };
    every(cfg.rescanInterval, () => {
      for (const d of ix.localDevices()) void ix.scan(d).catch(() => {});
    });
    // The cheap fallback: devices inotify does not cover entirely (unchanged files cost a stat each): the
    // directories not watched of a device partly watched, every directory of one not watched at all.
    every(cfg.fallbackRescanInterval, () => {
      for (const d of ix.localDevices()) {
        const c = watcher?.coverage(d.uri) ?? "none";
        if (c === "some") void ix.scan(d, "", true, true).catch(() => {});
        else if (c === "none") void ix.scan(d).catch(() => {});
      }
    });
    // Grants of earlier runs, again (a database file recreated since then has lost its ACL).
    for (const g of store.permissions())
      try {
        grantRead(g.uid, { database: cfg.database, stateDir: ctx.stateDir });
      } catch (e) {
        ctx.log.warn({ service: g.service, err: (e as Error).message }, "could not renew a database read grant");
      }

    const listHandler = (method: string) => async (req: { uri?: string; count?: number; subscribe?: boolean }, call: { caller: Caller; subscription?: Subscription }): Promise<any> => {
      const { kind, key } = LISTS[method]!;
      const count = Math.min(req.count ?? DEFAULT_COUNT, MAX_COUNT);
      const who = frozen(call.caller);
      const { rows, last, more } = await visibleRows(kind, 0, count, req.uri, who);
      const sub = call.subscription;
      if (sub) {
        listSubs.set(sub, { kind, key, device: req.uri, count, cursor: last, who });
        sub.onEnd(() => listSubs.delete(sub));
        ctx.topics.add(`list/${kind}`, sub);
        // The rest of the list (when longer than count) follows in messages of count entries.
        if (more) indexed();
      }
      return ok({ [key]: listObject(rows, req.uri), ...NO_ERROR, subscribed: !!sub });
    };

    const metadataHandler = (method: string) => async (req: { uri: string }, call: { caller: Caller }) => {
      const kind = METADATA[method]!;
      const item = ix.resolveItem(req.uri);
      const row = item && store.entry(item.dev.uri, item.dir, item.name);
      if (!item || !row || row.kind !== KIND_CODE[kind]) raise(E.noSuchItem(req.uri));
      // An item of a directory the caller may not read is, for it, no item at all.
      const who = frozen(call.caller);
      if (restricted(who) && !(await canSee(who, new Map(), item.dev.uri, item.dir))) raise(E.noSuchItem(req.uri));
      return ok({ metadata: metadata(item.dev, row), ...NO_ERROR });
    };

    const pluginRequired = (method: string, uri: string) => {
      const name = pluginName(uri);
      const p = name && ix.factory.get(name);
      if (!p) raise(E.notHandled(method));
      return p;
    };
    const targets = (method: string, uri: string | undefined, activeOnly: boolean) => {
      if (uri !== undefined) return [pluginRequired(method, uri)];
      const all = [...ix.factory.values()].filter((p) => !p.unavailable());
      return activeOnly && all.some((p) => p.active) ? all.filter((p) => p.active) : all;
    };

    /** Root and grantGroups members may grant for any service (the platform's group rule). */
    const grantRule = group(...cfg.grantGroups);
    /** Past the method's group rule: root and grantGroups members grant for any service, the others for their own only. */
    const mayGrant = async (caller: Caller, req: { serviceName?: string }) => {
      if (typeof req.serviceName !== "string" || req.serviceName === caller.name) return true;
      if (await allowed(grantRule, caller, req)) return true;
      if (!isBusName(req.serviceName) || req.serviceName.startsWith(":")) return false;
      try {
        const r = await ctx.peers.callRaw({
          destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
          member: "GetNameOwner", signature: "s", body: [req.serviceName],
        });
        return r.body[0] === caller.name;
      } catch {
        return false;
      }
    };

    /**
     * requestMediaScan's check of the directory named: one the caller may read and search
     * (opened with its rights, no symlink on the path; root: one the service may read);
     * else the spec's "Scan Failed" with the errno.
     */
    const mayScan = async (as: Caller | undefined, path: string): Promise<void> => {
      if (!as) {
        const why = await unreadableDir(path);
        if (why) failScan({ errno: why, path, reason: `${path} is not a readable directory (${why})` });
        return;
      }
      const no = await ix.refusal(path, as);
      if (no) failScan({ errno: no.errno, path, reason: `${path} is not a directory the caller may ${no.what} (${no.errno})` });
    };

    const uidOf = async (serviceName: string, caller: Caller): Promise<number> => {
      if (serviceName === caller.name) return caller.uid;
      if (isBusName(serviceName)) {
        try {
          const r = await ctx.peers.callRaw({
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
    };

    return {
      // The table's rule (devservices-media), or the board's permissionGroup ("*": any caller).
      access: { getMediaDbPermission: group(cfg.permissionGroup) },
      handlers: {
        getAudioList: listHandler("getAudioList"),
        getVideoList: listHandler("getVideoList"),
        getImageList: listHandler("getImageList"),
        getAudioMetadata: metadataHandler("getAudioMetadata"),
        getVideoMetadata: metadataHandler("getVideoMetadata"),
        getImageMetadata: metadataHandler("getImageMetadata"),

        getDeviceList(req, call) {
          const sub = call.subscription;
          const pluginList = ix.pluginList();
          if (sub) {
            ctx.topics.add("devices", sub);
            lastDevices = JSON.stringify(pluginList);
          }
          return ok({ pluginList, ...NO_ERROR, subscribed: !!sub });
        },

        async getMediaDbPermission(req, call) {
          if (typeof req.serviceName !== "string" || !req.serviceName) raise(E.serviceNameMandatory);
          if (!(await mayGrant(call.caller, req))) raise(E.denied("getMediaDbPermission"));
          const uid = await uidOf(req.serviceName, call.caller);
          try {
            const r = grantRead(uid, { database: cfg.database, stateDir: ctx.stateDir });
            store.putPermission(req.serviceName, uid);
            ctx.log.info({ service: req.serviceName, uid, by: call.caller.name, result: r }, "media database read access granted");
          } catch (e) {
            ctx.log.warn({ service: req.serviceName, uid, err: (e as Error).message }, "media database read access not granted");
            raise(E.grantFailed((e as Error).message));
          }
          return ok(NO_ERROR);
        },

        getPlugin(req) {
          for (const p of targets("getPlugin", req.uri, false)) {
            const why = p.unavailable();
            if (why) raise(E.pluginUnavailable(p.name, why));
            if (!p.active) {
              p.active = true;
              devicesChanged(true);
            }
          }
          return ok({ errorCode: 0, errorText: E.none.text });
        },

        getPluginList: () => ({ returnValue: true as const, pluginList: pluginListOf(ix) }),

        putPlugin(req) {
          const name = pluginName(req.uri);
          if (!name || !ix.putPlugin(name)) raise(E.notHandled("putPlugin"));
          return ok({ errorCode: 0, errorText: E.none.text });
        },

        async runDetect(req) {
          for (const p of targets("runDetect", req.uri, true)) {
            const why = p.unavailable();
            if (why) raise(E.pluginUnavailable(p.name, why));
            if (!p.active) {
              p.active = true;
              devicesChanged(true);
            }
            try {
              await p.startDetect();
            } catch (e) {
              raise(E.pluginUnavailable(p.name, (e as Error).message));
            }
          }
          return ok({ errorCode: 0, errorText: E.none.text });
        },

        stopDetect(req) {
          for (const p of targets("stopDetect", req.uri, false)) p.stopDetect();
          return ok({ errorCode: 0, errorText: E.none.text });
        },

        async requestMediaScan(req, call) {
          let path = req.path.trim();
          if (!path) raise(E.notHandled("requestMediaScan"));
          // The scan covers what this caller may read (root: everything): its rights, frozen now, walk the tree.
          const who = frozen(call.caller);
          const as = restricted(who) ? who : undefined;
          let scan: Promise<ScanResult>;
          const asDevice = ix.devices.get(path);
          if (asDevice) {
            if (!asDevice.available) failScan({ reason: `device ${asDevice.uri} is not available` });
            if (as && isLocal(asDevice)) await mayScan(as, asDevice.root);
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
            await mayScan(as, path);
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
          // The answer carries the scan's outcome when it ends within scanAnswerTimeout; a longer scan is
          // answered as going on (completed false) and its outcome is the device's lastScan.
          let timer: any;
          const outcome = await Promise.race([
            scan.then(
              (r) => (r.aborted && !r.error ? { ...describeScan(r), ok: false } : describeScan(r)),
              (e) => ({ ...describeScan({ files: 0, indexed: 0, unchanged: 0, removed: 0, failed: 0, subdirs: [], unreadableDirs: 0, peakEntries: 0, ms: 0, aborted: false }), ok: false, reason: (e as Error)?.message ?? String(e) }),
            ),
            new Promise<undefined>((res) => (timer = setTimeout(res, cfg.scanAnswerTimeout * 1000))),
          ]);
          clearTimeout(timer);
          if (!outcome) return { returnValue: true, errorCode: 0, errorText: E.scanOk.text, completed: false };
          const dev = asDevice ?? ix.localDeviceOfPath(path)?.dev;
          const withSpace = dev?.lastScan && !dev.lastScan.ok && dev.lastScan.errno === outcome.errno ? dev.lastScan : outcome;
          if (!withSpace.ok) failScan(withSpace);
          return { returnValue: true, errorCode: 0, errorText: E.scanOk.text, completed: true, ...counts(withSpace) };
        },

        async requestDelete(req, call) {
          const uri = req.uri.trim();
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
          const caller = call.caller;
          const row = dev && store.entry(dev.uri, dir, name);
          if (!dev || !row || row.kind === BAD) {
            // Nothing indexed there; a caller that may not even search that directory learns nothing either way.
            if (file !== undefined && restricted(caller) && !(await ctx.files.may(caller, dirname(file), "x").catch(() => false)))
              raise(E.denied("requestDelete"), { reason: "denied" });
            return ok({ count: 0, errorCode: 0, errorText: E.none.text });
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
          return ok({ count, errorCode: 0, errorText: E.none.text });
        },
      },

      async stop() {
        const i = live.indexOf(ix);
        if (i >= 0) live.splice(i, 1);
        for (const t of timers) clearInterval(t);
        if (devicesTimer) clearTimeout(devicesTimer);
        watcher?.close();
        ix.close();
        await Promise.race([ix.idle(), Bun.sleep(2000)]);
        store.close();
      },
    };
  },
});

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

/**
 * The database and thumbnail directories, made and opened. A failure names the path and
 * carries the errno (err.path, err.code), so the runtime can say which service could not
 * start on what, and keep the others.
 */
function openState(cfg: MediaIndexerConfig, ctx: ServiceContext): { store: MediaStore; ix: Indexer } {
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
    return { store, ix: new Indexer(cfg, store, ctx.log, PLUGINS, ctx.files) };
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

function pluginListOf(ix: Indexer | undefined) {
  return ix ? [...ix.factory.keys()].map((uri) => ({ uri })) : [];
}

export type { ServiceContext };
