// The file cache: types, objects, space accounting and eviction, kept in memory
// and written through to the metadata store (backend/store.ts) one transaction per
// change. Spec part 2, file cache: resources, object states, limits.
// Choices where the spec is silent: docs/decisions/filecache.md.
import { basename, dirname, isAbsolute, join, relative, resolve, extname } from "node:path";
import { raise } from "../../core/errors";
import { Throttle, type Logger } from "../../core/log";
import { E, type Row } from "./errors";
import { BLOCK, type FileCacheConfig } from "./config";
import { IndexedHeap } from "./heap";
import { MetadataStore, type ObjectRow } from "./backend/store";
import { StoreTooNew } from "../../core/store";
import * as files from "./backend/files";
import type { Identity, CopyAs } from "./backend/files";
import { PathRefused } from "../../core/service";
import { constants as osConstants } from "node:os";

export const API_VERSION = "1.0";
export const MAX_TYPE_NAME = 64;
/** Collision names tried by CopyCacheObject: base-(1).ext up to base-(MAX_COPY_SUFFIX).ext. */
export const MAX_COPY_SUFFIX = 999;

/** Bytes padded up to whole 4096-byte blocks: how watermarks are reported and space is counted. */
export const pad = (n: number) => Math.ceil(n / BLOCK) * BLOCK;
/** A byte count given with a fraction counts as the next whole byte. */
export const wholeBytes = (n: number) => Math.ceil(n);

export interface CacheType {
  name: string;
  /** Watermarks padded to blocks: what space is counted against and what is reported. */
  lo: number;
  hi: number;
  /** Watermarks as given (DefineType, ChangeType): what hi > lo is checked on. */
  loSet: number;
  hiSet: number;
  size: number;
  cost: number;
  lifetime: number;
  dirType: boolean;
  dir: string;
  /** The uid that defined it: only that uid or root may change or delete it (docs/decisions/filecache.md, "Owners"). */
  owner: number;
  /** Bytes (whole blocks) charged to its objects. */
  used: number;
  /** Bytes charged to objects that are subscribed (not evictable). */
  pinned: number;
  /** Objects with at least one active subscription. */
  held: number;
  objects: Set<CacheObject>;
  /** Evictable objects in eviction order: lifetime passed first, then cost, then least recently used. */
  order: IndexedHeap<CacheObject>;
  /** Evictable objects whose lifetime has not passed yet, by the time it does. */
  ripening: IndexedHeap<CacheObject>;
}

export interface CacheObject {
  id: number;
  type: CacheType;
  fileName: string;
  ext: string;
  path: string;
  /** Recorded size in bytes. */
  size: number;
  /** size padded to blocks: what it counts against the watermarks. */
  charge: number;
  cost: number;
  lifetime: number;
  lastUsed: number;
  expiresAt: number;
  ripe: boolean;
  /** Its inserting subscription is open: the caller is still writing. */
  writing: boolean;
  /** Expiry was deferred (-198): removed when the last subscription ends. */
  doomed: boolean;
  /** Active subscriptions (the writer's and SubscribeCacheObject's). */
  subs: number;
  removed: boolean;
  /** The uid that inserted it: only that uid or root may resize or expire it. */
  owner: number;
}

/** The eviction order (exported for the benchmark of the index). */
export const evictsBefore = (a: CacheObject, b: CacheObject) => {
  if (a.ripe !== b.ripe) return a.ripe;
  if (a.cost !== b.cost) return a.cost < b.cost;
  if (a.lastUsed !== b.lastUsed) return a.lastUsed < b.lastUsed;
  return a.id < b.id;
};
const ripensBefore = (a: CacheObject, b: CacheObject) => a.expiresAt < b.expiresAt || (a.expiresAt === b.expiresAt && a.id < b.id);

/** The extension kept in pathName: the last one of fileName, when it is a plain one. */
export function extensionOf(fileName: string): string {
  const ext = extname(basename(fileName));
  return /^\.[A-Za-z0-9_+-]{1,32}$/.test(ext) ? ext : "";
}

/** Control characters (C0 and DEL), refused in file names and copy destinations. */
const CONTROL = /[\u0000-\u001f\u007f]/;

const objectName = (id: number, ext: string) => id.toString(16).padStart(8, "0") + ext;
const OBJECT_NAME = /^([0-9a-f]{8,})((?:\.[A-Za-z0-9_+-]{1,32})?)$/;

export interface TypeDefinition {
  typeName: string;
  loWatermark: number;
  hiWatermark: number;
  size?: number;
  cost?: number;
  lifetime?: number;
  dirType?: boolean;
}

export interface InsertRequest {
  typeName: string;
  fileName: string;
  size?: number;
  cost?: number;
  lifetime?: number;
}

export class FileCache {
  readonly types = new Map<string, CacheType>();
  readonly objects = new Map<number, CacheObject>();
  readonly total: number;
  /** Bytes charged to all objects. */
  usedTotal = 0;
  /** Sum over types of max(used, lo): space taken or guaranteed. */
  private reservedTotal = 0;
  /** Sum of the low watermarks. */
  private loTotal = 0;
  private lastId = 0;
  private unlinkAfterCommit: string[] = [];
  /** Runs (after the change) for an object removed while subscriptions held it. */
  onHeldRemoved?: (o: CacheObject) => void;
  private readonly cacheDir: string;
  /** IN_CLOSE_WRITE on every type directory: an object written larger than declared goes when its writer closes it. */
  private watcher?: files.DirWatcher;
  /** Objects whose declared size could not be checked (a failure, or inotify events lost): checked again by the retry. */
  private recheck = new Set<CacheObject>();
  private recheckAll = false;
  /** Runs retryPending() while work is left that could not be done: metadata not stored, sizes not checked, the reserve not made. */
  private retryTimer?: ReturnType<typeof setTimeout>;
  private closed = false;
  /** Calls refused by a full or failing storage: a client can repeat them, so their log lines are throttled. */
  private readonly storageRefusals = new Throttle();

  private constructor(
    readonly cfg: FileCacheConfig,
    private readonly store: MetadataStore,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.total = cfg.totalCacheSpace;
    this.cacheDir = resolve(cfg.cacheDirectory);
  }

  /** Opens the store and reconciles it with the files on disk. */
  static open(cfg: FileCacheConfig, log: Logger, now: () => number = Date.now): FileCache {
    // Each place is checked before use, so a failure names it with its errno (err.path, err.code):
    // SQLite's own errors name neither.
    files.usableDir("the cache directory", cfg.cacheDirectory);
    files.usableDir("the metadata directory", dirname(cfg.metadataFile));
    for (const f of [cfg.metadataFile, cfg.metadataFile + "-wal", cfg.metadataFile + "-shm"]) files.usableFile("the metadata file", f);
    let store: MetadataStore;
    try {
      store = new MetadataStore(cfg.metadataFile, { reserveBytes: cfg.metadataReserve, log });
    } catch (e) {
      // A database of a newer format is told as such (the file, both formats), untouched.
      if (e instanceof StoreTooNew) throw e;
      throw new files.StorageUnusable("the metadata file", cfg.metadataFile, e);
    }
    const cache = new FileCache(cfg, store, log, now);
    try {
      cache.reconcile();
    } catch (e: any) {
      store.close();
      if (e instanceof files.StorageUnusable) throw e;
      // Node's file errors name their path; SQLite's are the metadata file's.
      throw new files.StorageUnusable(typeof e?.path === "string" ? "a file of the cache" : "the metadata file", typeof e?.path === "string" ? e.path : cfg.metadataFile, e);
    }
    try {
      cache.watcher = new files.DirWatcher((dir, name) => cache.closedAfterWrite(dir, name), {
        error: (e) => log.error({ err: e }, "file cache: watching the cache's writes failed; declared sizes are checked again"),
        overflow: () => cache.recheckEverything("file cache: inotify events were lost; every object's declared size is checked again"),
      });
      for (const t of cache.types.values()) cache.watchType(t);
    } catch (e) {
      // Without inotify the sizes are still checked at the object's next touch, copy or status call.
      log.warn({ err: e }, "file cache: writes cannot be watched; declared sizes are checked on use only");
    }
    cache.scheduleRetry();
    return cache;
  }

  close() {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.watcher?.close();
    this.store.close();
  }

  /**
   * What could not be done when it was due, done later: metadata changes kept in
   * memory because their commit failed (a full or failing file system) are stored,
   * declared sizes that could not be checked are checked, and the metadata's reserve
   * is made again once there is room. Runs every storageRetryInterval while any of it
   * is left, and after every change; never throws (its failures are log lines).
   */
  private retryPending() {
    this.retryTimer = undefined;
    if (this.closed) return;
    try {
      this.store.retryBacklog();
      if (this.recheckAll || this.recheck.size) {
        const objects = this.recheckAll ? [...this.objects.values()] : [...this.recheck];
        this.recheckAll = false;
        this.recheck.clear();
        this.enforceDeclared(objects);
      }
      this.store.reserve.restore();
    } catch (e) {
      this.log.error({ err: e }, "file cache: work left from a failure could not be done; tried again later");
    }
    this.scheduleRetry();
  }

  private get workLeft(): boolean {
    return this.store.pending > 0 || this.recheckAll || this.recheck.size > 0 || (this.cfg.metadataReserve > 0 && !this.store.reserve.present);
  }

  private scheduleRetry() {
    if (this.retryTimer || this.closed || !this.workLeft) return;
    this.retryTimer = setTimeout(() => this.retryPending(), this.cfg.storageRetryInterval);
    // Nothing waits on it: it does not keep the process alive.
    (this.retryTimer as { unref?: () => void }).unref?.();
  }

  private recheckEverything(why: string) {
    if (!this.recheckAll) this.log.warn({ objects: this.objects.size }, why);
    this.recheckAll = true;
    this.scheduleRetry();
  }

  private watchType(t: CacheType) {
    try {
      this.watcher?.add(t.dir);
    } catch (e) {
      this.log.warn({ err: e, type: t.name }, "file cache: the type's directory cannot be watched; declared sizes are checked on use only");
    }
  }

  /**
   * A file of a type directory was closed after writing: its object must not be larger
   * than declared. Called by the event source: it never throws; a failure is logged and
   * the object checked again by the retry.
   */
  private closedAfterWrite(dir: string, name: string) {
    const m = name.match(OBJECT_NAME);
    const o = m ? this.objects.get(parseInt(m[1]!, 16)) : undefined;
    if (o && o.type.dir === dir) this.enforceDeclared([o]);
  }

  /**
   * The spec's object state table: an object written larger than its declared size is
   * removed automatically. Objects still being written under their inserting
   * subscription are checked when it ends (writeCompleted). Returns the ones removed.
   */
  enforceDeclared(objects: Iterable<CacheObject>): CacheObject[] {
    const over: [CacheObject, number][] = [];
    for (const o of objects) {
      if (o.removed || o.writing) continue;
      const written = files.measure(o.path, o.type.dirType);
      if (written !== null && written > o.size) over.push([o, written]);
    }
    if (over.length) {
      try {
        this.change(() => {
          for (const [o, written] of over) this.removeObject(o, `written ${written} bytes, more than the declared ${o.size}`);
        });
      } catch (e) {
        // Never thrown on (the event source's callback and the status calls run this):
        // what is still there is checked again by the retry.
        const left = over.filter(([o]) => !o.removed).map(([o]) => o);
        this.log.error({ err: e, objects: over.map(([o]) => o.path) }, "file cache: removing objects written larger than declared failed; checked again later");
        for (const o of left) this.recheck.add(o);
        this.scheduleRetry();
      }
    }
    return over.filter(([o]) => o.removed).map(([o]) => o);
  }

  // ---- changes: one transaction each; files of removed objects go after the commit

  /**
   * A change of the cache: fn changes memory and records its statements, which are
   * stored at its end (the store's transactionKeeping: on a full disk with its reserve
   * and a checkpoint, else kept and stored later; never thrown for lack of room). The
   * files of removed objects go then, stored or not: a row whose file is gone is
   * dropped at start, and the room they free may be what the kept statements need.
   */
  private change<T>(fn: () => T): T {
    try {
      return this.store.transactionKeeping(fn);
    } finally {
      let unlinked = false;
      for (const p of this.unlinkAfterCommit.splice(0)) {
        try {
          files.removePath(p);
          unlinked = true;
        } catch (e) {
          // Left behind: start-up reconciliation removes it as an orphan.
          this.log.warn({ err: e, path: p }, "cannot remove a file of a removed object");
        }
      }
      this.afterChange(unlinked);
    }
  }

  /** After a change: kept statements stored when files were just removed, the reserve made again when there is room. */
  private afterChange(unlinked: boolean) {
    try {
      if (unlinked && this.store.pending) this.store.retryBacklog();
      this.store.reserve.restore();
    } catch (e) {
      this.log.error({ err: e }, "file cache: storing kept metadata changes failed; tried again later");
    }
    this.scheduleRetry();
  }

  // ---- accounting -----------------------------------------------------------

  private addUsed(t: CacheType, delta: number) {
    this.reservedTotal -= Math.max(t.used, t.lo);
    t.used += delta;
    this.usedTotal += delta;
    this.reservedTotal += Math.max(t.used, t.lo);
  }

  private setLo(t: CacheType, lo: number) {
    this.reservedTotal -= Math.max(t.used, t.lo);
    this.loTotal += lo - t.lo;
    t.lo = lo;
    this.reservedTotal += Math.max(t.used, t.lo);
  }

  /** Space type t may still fill: what no other type uses or is guaranteed. */
  private availableTo(t: CacheType): number {
    return this.total - (this.reservedTotal - Math.max(t.used, t.lo)) - t.used;
  }

  private setSize(o: CacheObject, size: number) {
    const charge = pad(size);
    const delta = charge - o.charge;
    this.addUsed(o.type, delta);
    if (o.subs > 0) o.type.pinned += delta;
    o.size = size;
    o.charge = charge;
  }

  // ---- eviction index ---------------------------------------------------------

  private index(o: CacheObject) {
    if (o.subs > 0 || o.removed) return;
    const t = o.type;
    o.ripe = o.expiresAt <= this.now();
    if (o.ripe) t.ripening.remove(o);
    else t.ripening.push(o);
    t.order.push(o);
  }

  private unindex(o: CacheObject) {
    o.type.order.remove(o);
    o.type.ripening.remove(o);
  }

  /** The type's next object to evict (lifetimes that passed are applied first). */
  private candidate(t: CacheType): CacheObject | undefined {
    const now = this.now();
    for (let o = t.ripening.peek(); o && o.expiresAt <= now; o = t.ripening.peek()) {
      t.ripening.pop();
      o.ripe = true;
      t.order.update(o);
    }
    return t.order.peek();
  }

  private hold(o: CacheObject) {
    if (o.subs++ === 0) {
      this.unindex(o);
      o.type.pinned += o.charge;
      o.type.held++;
    }
  }

  private unhold(o: CacheObject) {
    if (o.removed || o.subs === 0) return;
    if (--o.subs > 0) return;
    o.type.pinned -= o.charge;
    o.type.held--;
    if (o.doomed) this.removeObject(o, "expiry deferred until the last subscription ended");
    else this.index(o);
  }

  private removeObject(o: CacheObject, why: string) {
    if (o.removed) return;
    o.removed = true;
    const t = o.type;
    this.unindex(o);
    if (o.subs > 0) {
      t.pinned -= o.charge;
      t.held--;
      // Its subscriptions have nothing left to hold: the service ends them once this change is done.
      const gone = this.onHeldRemoved;
      if (gone) queueMicrotask(() => gone(o));
    }
    this.addUsed(t, -o.charge);
    t.objects.delete(o);
    this.objects.delete(o.id);
    this.store.deleteObject(o.id);
    this.unlinkAfterCommit.push(o.path);
    this.log.debug({ path: o.path, type: t.name, size: o.size, why }, "cache object removed");
  }

  /**
   * Makes `need` more bytes available to type t: first within its own high
   * watermark, then in the cache, taking objects of other types only while they
   * stay at or above their low watermark. Objects in the way are removed in
   * eviction order; subscribed objects never. False when it cannot be done.
   */
  private makeRoom(t: CacheType, need: number, keep?: CacheObject): boolean {
    if (need <= 0) return true;
    const kept = keep && keep.subs === 0 ? keep.charge : 0;
    // Refuse at once what no eviction could give.
    if (t.pinned + kept + need > t.hi) return false;
    let floor = t.pinned + kept;
    for (const u of this.types.values()) if (u !== t) floor += Math.max(u.lo, u.pinned);
    if (floor + need > this.total) return false;
    if (keep) this.unindex(keep);
    try {
      while (t.used + need > t.hi) {
        const victim = this.candidate(t);
        if (!victim) return false;
        this.removeObject(victim, `room in type ${t.name} (hiWatermark)`);
      }
      while (this.availableTo(t) < need) {
        let best: CacheObject | undefined;
        for (const u of this.types.values()) {
          const c = this.candidate(u);
          if (!c || (u !== t && u.used - c.charge < u.lo)) continue;
          if (!best || evictsBefore(c, best)) best = c;
        }
        if (!best) return false;
        this.removeObject(best, `room for type ${t.name}`);
      }
      return true;
    } finally {
      if (keep) this.index(keep);
    }
  }

  // ---- lookups ----------------------------------------------------------------

  static validTypeName(name: string): string | null {
    if (name.length === 0) return "the name is empty";
    if (name.length > MAX_TYPE_NAME) return `the name is longer than ${MAX_TYPE_NAME} characters`;
    if (name.startsWith(".")) return "the name starts with '.'";
    if (/[/\0]/.test(name)) return "the name contains '/' or NUL";
    return null;
  }

  type(name: string): CacheType | undefined {
    return this.types.get(name);
  }

  /**
   * Why a name cannot be one file name (InsertCacheObject's fileName, the name of a
   * copy), or null: empty, "." or "..", holding "/" or a control character (U+0000
   * to U+001F, U+007F), or longer than maxFileNameBytes in UTF-8. `kind` tells the
   * cases CopyCacheObject answers with rows of their own (control, long) from the rest.
   */
  fileNameProblem(name: string): { kind: "none" | "control" | "long"; why: string } | null {
    if (name.length === 0) return { kind: "none", why: "the name is empty" };
    if (name === "." || name === "..") return { kind: "none", why: `the name is ${JSON.stringify(name)}` };
    if (name.includes("/")) return { kind: "none", why: "the name holds '/'" };
    if (CONTROL.test(name)) return { kind: "control", why: "the name holds control characters" };
    const bytes = Buffer.byteLength(name);
    if (bytes > this.cfg.maxFileNameBytes) return { kind: "long", why: `the name is ${bytes} bytes long, more than ${this.cfg.maxFileNameBytes}` };
    return null;
  }

  /**
   * The object a pathName names, with the spec's -199 cases told apart; `asMissing`
   * answers every case with the given row instead (GetCacheObjectFilename/Size).
   */
  resolve(method: string, pathName: string, asMissing?: (m: string, p: string) => Row): CacheObject {
    const no = (row: (m: string, p: string) => Row) => raise((asMissing ?? row)(method, pathName));
    const rel = isAbsolute(pathName) ? relative(this.cacheDir, resolve(pathName)) : "";
    const parts = rel.split("/");
    if (!rel || rel.startsWith("..") || parts.length !== 2) return no(E.invalidId);
    const m = parts[1]!.match(OBJECT_NAME);
    if (!m) return no(E.invalidId);
    const t = this.types.get(parts[0]!);
    if (!t) return no(E.typeNotFoundForId);
    const o = this.objects.get(parseInt(m[1]!, 16));
    if (!o || o.type !== t || o.ext !== m[2]) return no(E.objectNotLocated);
    if (!files.exists(o.path)) {
      this.change(() => this.removeObject(o, "its file was removed from outside the cache"));
      return no(E.pathGone);
    }
    // Written larger than declared (by a writer that has not closed it yet, or where
    // writes are not watched): removed now, before anything uses it.
    if (this.enforceDeclared([o]).length) return no(E.pathGone);
    return o;
  }

  // ---- types ------------------------------------------------------------------

  /** Defines a type owned by uid owner (root's when not given). */
  defineType(req: TypeDefinition, owner = 0): void {
    const M = "DefineType";
    const name = req.typeName;
    const bad = FileCache.validTypeName(name) ?? this.reservedPath(name);
    if (bad) raise(E.cannotConfigure(M, name, bad));
    const def = {
      lo: pad(req.loWatermark),
      hi: pad(req.hiWatermark),
      size: req.size !== undefined ? wholeBytes(req.size) : this.cfg.defaultSize,
      cost: req.cost ?? this.cfg.defaultCost,
      lifetime: req.lifetime ?? this.cfg.defaultLifetime,
      dirType: req.dirType ?? false,
    };
    const old = this.types.get(name);
    if (old) {
      const same = (Object.keys(def) as (keyof typeof def)[]).every((k) => old[k] === def[k]);
      raise(same ? E.typeExists(M, name) : E.differentConfig(M, name));
    }
    // Compared as given: only what is reported is padded (spec, cache type).
    if (req.hiWatermark <= req.loWatermark) raise(E.hiNotAboveLo(M, name));
    if (this.loTotal + def.lo > this.total)
      raise(E.cannotConfigure(M, name, `loWatermark ${def.lo} cannot be guaranteed: ${this.loTotal} of the cache's ${this.total} bytes are guaranteed to other types`));
    const dir = join(this.cfg.cacheDirectory, name);
    try {
      files.ensureDir(dir);
    } catch (e) {
      raise(E.cannotConfigure(M, name, `cannot create ${dir}: ${(e as Error).message}`));
    }
    this.change(() => {
      this.store.putType({ name, ...def, lo: req.loWatermark, hi: req.hiWatermark, dirType: def.dirType ? 1 : 0, owner });
      this.watchType(this.addType({ name, ...def, loSet: req.loWatermark, hiSet: req.hiWatermark, dir, owner }));
    });
    this.log.info({ type: name, ...def, owner }, "cache type defined");
  }

  /** A type directory must not be where the metadata or the copies live. */
  private reservedPath(name: string): string | null {
    const dir = resolve(this.cfg.cacheDirectory, name);
    const md = resolve(this.cfg.metadataFile);
    if ([md, md + "-wal", md + "-shm", md + "-journal", md + "-reserve", resolve(this.cfg.copyDirectory)].includes(dir))
      return `the name is taken by the cache's own files (${dir})`;
    return null;
  }

  /** A type from its watermarks as given (d.loSet, d.hiSet); d.lo and d.hi are recomputed. */
  private addType(d: Omit<CacheType, "lo" | "hi" | "used" | "pinned" | "held" | "objects" | "order" | "ripening">): CacheType {
    const t: CacheType = {
      ...d,
      lo: 0,
      hi: pad(d.hiSet),
      used: 0,
      pinned: 0,
      held: 0,
      objects: new Set(),
      order: new IndexedHeap(evictsBefore),
      ripening: new IndexedHeap(ripensBefore),
    };
    this.types.set(t.name, t);
    this.setLo(t, pad(d.loSet));
    return t;
  }

  changeType(req: Partial<TypeDefinition> & { typeName: string }): void {
    const M = "ChangeType";
    const t = this.types.get(req.typeName);
    if (!t) return raise(E.changeTypeMissing(M, req.typeName));
    const loSet = req.loWatermark ?? t.loSet;
    const hiSet = req.hiWatermark ?? t.hiSet;
    // Compared as given: only what is reported is padded (spec, cache type).
    if (hiSet <= loSet) raise(E.hiNotAboveLo(M, t.name));
    const lo = pad(loSet);
    const hi = pad(hiSet);
    if (this.loTotal - t.lo + lo > this.total)
      raise(E.cannotReserve(M, t.name, `${this.loTotal - t.lo} of the cache's ${this.total} bytes are guaranteed to other types`));
    if (hi < t.pinned) raise(E.cannotReserve(M, t.name, `subscribed objects hold ${t.pinned} bytes`));
    this.change(() => {
      this.setLo(t, lo);
      t.hi = hi;
      t.loSet = loSet;
      t.hiSet = hiSet;
      if (req.size !== undefined) t.size = wholeBytes(req.size);
      if (req.cost !== undefined) t.cost = req.cost;
      if (req.lifetime !== undefined) t.lifetime = req.lifetime;
      this.store.putType({ name: t.name, lo: loSet, hi: hiSet, size: t.size, cost: t.cost, lifetime: t.lifetime, dirType: t.dirType ? 1 : 0, owner: t.owner });
      for (let o = this.candidate(t); t.used > t.hi && o; o = this.candidate(t)) this.removeObject(o, "hiWatermark lowered");
    });
  }

  /** Expires every object of the type and removes it; returns the bytes freed. */
  deleteType(name: string): number {
    const M = "DeleteType";
    const t = this.types.get(name);
    if (!t) return raise(E.deleteTypeMissing(M, name));
    if (t.held > 0) raise(E.typeSubscribed(M, name));
    const freed = t.used;
    this.change(() => {
      for (const o of [...t.objects]) this.removeObject(o, "type deleted");
      this.store.deleteType(name);
      this.setLo(t, 0);
      this.types.delete(name);
      this.unlinkAfterCommit.push(t.dir);
    });
    this.watcher?.remove(t.dir);
    this.log.info({ type: name, freed }, "cache type deleted");
    return freed;
  }

  // ---- objects ----------------------------------------------------------------

  insert(req: InsertRequest, owner: Identity | null, writing: boolean): CacheObject {
    const M = "InsertCacheObject";
    if (FileCache.validTypeName(req.typeName)) raise(E.noSuchTypeDefined(M, req.typeName));
    const t = this.types.get(req.typeName);
    if (!t) return raise(E.typeMissing(M, req.typeName));
    const badName = this.fileNameProblem(req.fileName);
    if (badName) raise(E.badFileName(M, badName.why));
    const size = req.size !== undefined ? wholeBytes(req.size) : t.size > 0 ? t.size : 0;
    if (size <= 0) raise(E.noSize(M, t.name));
    if (t.dirType && size <= BLOCK) raise(E.dirTypeTooSmall(M, t.name));
    const charge = pad(size);
    // Room in the cache's accounting: the objects evicted for it go (committed, their files removed).
    this.change(() => {
      if (!this.makeRoom(t, charge)) raise(E.noSpace(M, t.name, size));
    });
    // Room on the file system holding the cache, as it is now (other files share it).
    const free = files.freeBytes(t.dir);
    if (free !== null && free < charge) raise(E.noSpaceOnStorage(M, t.name, size, `the cache's file system has ${free} bytes free`));
    // The file, then its row in a transaction of its own: both, or neither.
    const id = ++this.lastId;
    const ext = extensionOf(req.fileName);
    const path = join(t.dir, objectName(id, ext));
    try {
      files.createObject(path, t.dirType, owner);
    } catch (e) {
      return raise(this.storageFailure(M, t.name, size, e, path));
    }
    const row: ObjectRow = {
      id,
      type: t.name,
      fileName: req.fileName,
      ext,
      size,
      cost: req.cost ?? t.cost,
      lifetime: req.lifetime ?? t.lifetime,
      lastUsed: this.now(),
      writing: writing ? 1 : 0,
      doomed: 0,
      owner: owner?.uid ?? 0,
    };
    try {
      this.store.insertObject(row);
    } catch (e) {
      this.removeQuietly(path);
      return raise(this.storageFailure(M, t.name, size, e, path));
    }
    const o = this.addObject(t, row, path);
    if (writing) this.hold(o);
    return o;
  }

  /**
   * The answer to a storage failure while creating an object (its file or its row):
   * full (ENOSPC, EDQUOT) is the spec's -199 "no space of the requested size"; an
   * I/O error or a read-only file system is -199 "cannot be stored"
   * (docs/decisions/filecache.md). The reason is a fixed phrase: no errno text, no
   * path. Anything else is thrown on as it is.
   */
  private storageFailure(m: string, type: string, size: number, e: unknown, path: string): Row {
    const code = files.storageCode(e);
    const why = code ? STORAGE_FAILURES[code] : undefined;
    if (!why) throw e;
    this.storageRefusals.log(`${m}/${code}`, (repeated) => this.log.warn({ err: e, path, code, repeated }, "cache object not created: its storage failed"));
    return code === "ENOSPC" || code === "EDQUOT" ? E.noSpaceOnStorage(m, type, size, why) : E.storageFailed(m, type, why);
  }

  private removeQuietly(path: string) {
    try {
      files.removePath(path);
    } catch (e) {
      // Left behind: start-up reconciliation removes it as an orphan.
      this.log.warn({ err: e, path }, "cannot remove the file of an object that was not created");
    }
  }

  private addObject(t: CacheType, row: ObjectRow, path: string): CacheObject {
    const o: CacheObject = {
      id: row.id,
      type: t,
      fileName: row.fileName,
      ext: row.ext,
      path,
      size: row.size,
      charge: pad(row.size),
      cost: row.cost,
      lifetime: row.lifetime,
      lastUsed: row.lastUsed,
      expiresAt: row.lastUsed + row.lifetime * 1000,
      ripe: false,
      writing: row.writing === 1,
      doomed: row.doomed === 1,
      subs: 0,
      removed: false,
      owner: row.owner ?? 0,
    };
    this.objects.set(o.id, o);
    t.objects.add(o);
    this.addUsed(t, o.charge);
    this.index(o);
    return o;
  }

  /**
   * The inserting subscription ended: the write is complete. Larger than declared:
   * removed; smaller: the recorded size is corrected (spec, object state table).
   */
  writeCompleted(o: CacheObject): void {
    if (o.removed || !o.writing) return;
    this.change(() => {
      o.writing = false;
      const written = files.measure(o.path, o.type.dirType);
      if (written === null) this.removeObject(o, "its file is gone");
      else if (written > o.size) this.removeObject(o, `written ${written} bytes, more than the declared ${o.size}`);
      else {
        if (written < o.size) this.setSize(o, written);
        this.store.finishWrite(o.id, o.size);
        this.unhold(o);
      }
    });
  }

  /** A SubscribeCacheObject subscription starts: the object is not expired while it lasts. */
  subscribe(o: CacheObject): void {
    this.change(() => {
      this.hold(o);
      this.touchNow(o);
    });
  }

  unsubscribe(o: CacheObject): void {
    if (o.removed) return;
    this.change(() => this.unhold(o));
  }

  touch(o: CacheObject): void {
    this.change(() => this.touchNow(o));
  }

  private touchNow(o: CacheObject) {
    this.stamp(o, this.now());
    this.store.setLastUsed(o.id, o.lastUsed);
  }

  /** Marks o used at now in memory: its expiry and its place in the eviction order follow. */
  private stamp(o: CacheObject, now: number) {
    o.lastUsed = now;
    o.expiresAt = now + o.lifetime * 1000;
    this.index(o);
  }

  /** Removes the object now, or marks it for removal (-198) while it is subscribed. */
  expire(o: CacheObject): void {
    if (o.subs > 0) {
      if (!o.doomed) {
        o.doomed = true;
        this.change(() => this.store.setDoomed(o.id));
      }
      raise(E.deferred("ExpireCacheObject", o.path));
    }
    this.change(() => this.removeObject(o, "expired"));
  }

  resize(o: CacheObject, requested: number): void {
    const M = "ResizeCacheObject";
    const newSize = wholeBytes(requested);
    const written = files.measure(o.path, o.type.dirType) ?? 0;
    if (newSize < written) raise(E.cannotResize(M, o.path, `it already holds ${written} bytes`));
    if (o.type.dirType && newSize <= BLOCK) raise(E.cannotResize(M, o.path, "objects of a dirType type need more than 1 block"));
    this.change(() => {
      if (!this.makeRoom(o.type, pad(newSize) - o.charge, o)) raise(E.cannotResize(M, o.path, `no space for ${newSize} bytes in type ${o.type.name}`));
    });
    // The new size is the object's only once it is stored: a full metadata file system changes nothing.
    const now = this.now();
    try {
      this.store.transaction(() => {
        this.store.setSize(o.id, newSize);
        this.store.setLastUsed(o.id, now);
      });
    } catch (e) {
      const code = files.storageCode(e);
      if (!code || !STORAGE_FAILURES[code]) throw e;
      this.storageRefusals.log(`${M}/${code}`, (repeated) => this.log.warn({ err: e, path: o.path, code, repeated }, "cache object not resized: its storage failed"));
      raise(E.cannotResize(M, o.path, STORAGE_FAILURES[code]!));
    }
    this.setSize(o, newSize);
    this.stamp(o, now);
  }

  /**
   * Copies an object out of the cache; returns the new path. A destination the
   * caller names is written with the caller's rights (`as`: the kernel decides, no
   * symlink on the path, never the service's own files, new names only); without
   * one, the configured copyDirectory, the service's own directory, is written with
   * the service's rights for a caller allowed to write it. See copyError() and
   * refusedCopy() for how a failed copy is answered.
   */
  async copy(o: CacheObject, destination: string | undefined, fileName: string | undefined, caller: Identity | null, as: CopyAs): Promise<string> {
    const M = "CopyCacheObject";
    const name = fileName ?? o.fileName;
    // The same rule as InsertCacheObject's fileName, answered with CopyCacheObject's rows (-192).
    const badName = this.fileNameProblem(name);
    if (badName) raise(badName.kind === "control" ? E.controlInName(M, o.path) : badName.kind === "long" ? E.nameTooLong(M, name) : E.noFileName(M, o.path));
    if (destination === undefined) return this.copyToOwnDirectory(o, name, caller);
    if (CONTROL.test(destination)) raise(E.controlInDestination(M, destination));
    if (!isAbsolute(destination)) raise(E.invalidDestination(M, destination));
    // A copy is the caller's file, outside the cache's accounting: never inside the cache's own directory
    // (it would be an untracked file there, removed as an orphan at the next start).
    const resolved = resolve(destination);
    if (resolved === this.cacheDir || resolved.startsWith(this.cacheDir + "/")) raise(E.copyFailed(M, destination, "the destination is inside the cache"));
    let dest: string;
    try {
      dest = as.check(destination);
    } catch (e) {
      return raise(refusedCopy(M, e, name, destination));
    }
    return this.copyUnder(o, dest, name, destination, (candidate) => files.copyAs(o.path, candidate, o.type.dirType, as));
  }

  /** The default destination: the configured copyDirectory, written with the service's rights. */
  private async copyToOwnDirectory(o: CacheObject, name: string, caller: Identity | null): Promise<string> {
    const M = "CopyCacheObject";
    const destination = this.cfg.copyDirectory;
    if (!files.exists(destination)) raise(E.invalidDestination(M, destination));
    if (!files.isDirectory(destination)) raise(E.notDirectory(M, destination));
    if (!files.canWrite(destination, caller)) raise(E.noWritePermission(M, destination));
    return this.copyUnder(o, destination, name, destination, (candidate) => files.copyNew(o.path, candidate, o.type.dirType, caller));
  }

  /**
   * Copies o into dir under name, or name-(1), name-(2)... when taken; `copy` makes one
   * candidate (false: the name exists). Failures are answered as CopyCacheObject's.
   */
  private async copyUnder(o: CacheObject, dir: string, name: string, destination: string, copy: (candidate: string) => Promise<boolean>): Promise<string> {
    const M = "CopyCacheObject";
    const ext = extname(name);
    const stem = ext ? name.slice(0, -ext.length) : name;
    for (let n = 0; n <= MAX_COPY_SUFFIX; n++) {
      const candidate = join(dir, n === 0 ? name : `${stem}-(${n})${ext}`);
      let done: boolean;
      try {
        done = await copy(candidate);
      } catch (e: any) {
        if (e instanceof PathRefused) return raise(refusedCopy(M, e, name, destination));
        if (e?.code === "ENOENT" && !files.exists(o.path)) return raise(E.pathGone(M, o.path));
        return raise(copyError(M, e?.code, name, destination));
      }
      if (done) {
        if (!o.removed) this.touch(o);
        return candidate;
      }
    }
    return raise(E.noUniqueName(M, name, destination));
  }

  /**
   * The cache's figures, after objects written larger than declared are gone (one stat
   * per object). availSpace is what the cache may still take and its file system
   * still holds: the smaller of totalCacheSpace minus what objects use and the file
   * system's free space (statfs), in whole blocks.
   */
  status() {
    // Answered from memory whatever storing the removals does (enforceDeclared never throws).
    this.enforceDeclared(this.objects.values());
    const free = files.freeBytes(this.cacheDir);
    const avail = Math.max(0, Math.min(this.total - this.usedTotal, free ?? Infinity));
    return { numTypes: this.types.size, size: this.usedTotal, numObjs: this.objects.size, availSpace: avail };
  }

  // ---- start-up ---------------------------------------------------------------

  /**
   * Makes the metadata and the files agree after any stop, clean or not: objects
   * whose write never completed (or whose expiry was deferred) are removed, rows
   * without a file are dropped, files without a row are deleted, and the
   * watermarks and the total are enforced again.
   */
  private reconcile() {
    const removed = { unfinished: 0, missing: 0, oversized: 0, orphans: 0, evicted: 0 };
    this.change(() => {
      for (const r of this.store.types()) {
        const dir = join(this.cfg.cacheDirectory, r.name);
        files.ensureDir(dir);
        // Rows hold the watermarks as given (rows written before that hold them padded, which is the same).
        // A row stored before owners were recorded is root's (docs/decisions/filecache.md, "Owners").
        this.addType({ name: r.name, loSet: r.lo, hiSet: r.hi, size: r.size, cost: r.cost, lifetime: r.lifetime, dirType: r.dirType === 1, dir, owner: r.owner ?? 0 });
      }
      this.lastId = this.store.lastId();
      for (const r of this.store.objects()) {
        const t = this.types.get(r.type);
        const path = t ? join(t.dir, objectName(r.id, r.ext)) : "";
        if (!t || r.writing || r.doomed) {
          this.store.deleteObject(r.id);
          if (path) this.unlinkAfterCommit.push(path);
          removed.unfinished++;
          continue;
        }
        const written = files.measure(path, t.dirType);
        if (written === null) {
          this.store.deleteObject(r.id);
          removed.missing++;
        } else if (written > r.size) {
          this.store.deleteObject(r.id);
          this.unlinkAfterCommit.push(path);
          removed.oversized++;
        } else this.addObject(t, r, path);
      }
    });
    // Files no row accounts for.
    const md = resolve(this.cfg.metadataFile);
    const own = new Set([md, md + "-wal", md + "-shm", md + "-journal", md + "-reserve", resolve(this.cfg.copyDirectory)]);
    for (const entry of files.listDir(this.cfg.cacheDirectory)) {
      const p = join(this.cfg.cacheDirectory, entry);
      if (own.has(resolve(p))) continue;
      const t = this.types.get(entry);
      if (!t) {
        files.removePath(p);
        removed.orphans++;
        continue;
      }
      const live = new Set([...t.objects].map((o) => basename(o.path)));
      for (const f of files.listDir(t.dir))
        if (!live.has(f)) {
          files.removePath(join(t.dir, f));
          removed.orphans++;
        }
    }
    // Limits may have shrunk (FileCache.conf) since the objects were stored.
    this.change(() => {
      for (const t of this.types.values())
        for (let o = this.candidate(t); t.used > t.hi && o; o = this.candidate(t)) {
          this.removeObject(o, "over hiWatermark at start");
          removed.evicted++;
        }
      while (this.usedTotal > this.total) {
        let best: CacheObject | undefined;
        for (const u of this.types.values()) {
          const c = this.candidate(u);
          if (c && (!best || evictsBefore(c, best))) best = c;
        }
        if (!best) break;
        this.removeObject(best, "over totalCacheSpace at start");
        removed.evicted++;
      }
    });
    if (this.loTotal > this.total)
      this.log.warn({ loTotal: this.loTotal, total: this.total }, "the low watermarks add up to more than totalCacheSpace");
    this.log.info({ types: this.types.size, objects: this.objects.size, used: this.usedTotal, total: this.total, removed }, "file cache ready");
  }
}

/** Why creating an object's file or row failed, in words that carry no internal path or errno text. */
const STORAGE_FAILURES: Record<string, string> = {
  ENOSPC: "the cache's storage is full",
  EDQUOT: "disk quota exceeded on the cache's storage",
  EIO: "input/output error on the cache's storage",
  EROFS: "the cache's storage is read-only",
};

/** Why a copy failed at the destination, in words that carry no internal path or errno text. */
const COPY_FAILURES: Record<string, string> = {
  ENOSPC: "no space left on the destination",
  EDQUOT: "disk quota exceeded on the destination",
  EFBIG: "the object is too large for the destination",
  EROFS: "the destination is read-only",
  EINVAL: "the destination does not take files",
  EOPNOTSUPP: "the destination does not take files",
  ENOTSUP: "the destination does not take files",
  ENOENT: "the destination went away",
  ENOTDIR: "the destination went away",
  EIO: "input/output error on the destination",
};

/** errno numbers -> their codes (EACCES, ENAMETOOLONG, ...). */
const ERRNO_CODES = new Map(Object.entries(osConstants.errno).map(([k, v]) => [v as number, k]));

/**
 * The spec's row for a destination the caller's rights refused (PathRefused from the
 * platform's caller files): not absolute, `.`/`..`, the service's own files, a
 * symbolic link on the path or a missing directory are -193 "invalid destination";
 * no permission is -193 "no write permission"; a path through a file is -192
 * "destination not a directory"; the rest as copyError() (docs/decisions/filecache.md).
 */
export function refusedCopy(m: string, e: unknown, name: string, destination: string): Row {
  if (!(e instanceof PathRefused)) throw e;
  const code = e.errno !== undefined ? ERRNO_CODES.get(e.errno) : undefined;
  switch (e.reason) {
    case "relative":
    case "traversal":
    case "missing":
    case "isdir":
      return E.invalidDestination(m, destination);
    case "own":
      return E.copyFailed(m, destination, "the destination belongs to the service");
    case "symlink":
      return E.copyFailed(m, destination, "the path holds a symbolic link");
    case "notdir":
      return E.notDirectory(m, destination);
    case "denied":
      return code === "EROFS" ? E.copyFailed(m, destination, COPY_FAILURES.EROFS!) : E.noWritePermission(m, destination);
    default:
      return copyError(m, code, name, destination);
  }
}

/**
 * The spec's row for a copy that failed on its way (the checks before it passed):
 * a name the destination's file system cannot hold is -192; no permission is -193
 * "no write permission"; anything else is -193 "invalid destination" with a fixed
 * reason (/proc, /sys, a read-only or full file system).
 */
export function copyError(m: string, code: string | undefined, name: string, destination: string) {
  if (code === "ENAMETOOLONG") return E.nameTooLong(m, name);
  if (code === "EACCES" || code === "EPERM") return E.noWritePermission(m, destination);
  return E.copyFailed(m, destination, COPY_FAILURES[code ?? ""] ?? `the copy failed (${code ?? "unknown error"})`);
}
