// File cache service (spec part 2, com.vendor.service.filecache): a shared cache
// space of objects grouped in types with watermarks. The logic lives in cache.ts;
// this file maps the spec's methods onto it. An open write (the inserting
// subscription) and a hold (SubscribeCacheObject) are leases of the caller bound to
// their subscription; an object's subscriptions are the topic objectKey(id).
import { raise, ok, answer, type Invalid, type Json } from "../../core/errors";
import { defineService, type BadRequest, type Caller } from "../../core/service";
import { group, describeRule, type AccessRule } from "../../core/access";
import { mayAct, uidOwner } from "../../core/leases";
import { api, TYPE_GROUP } from "./schemas";
import { E, BAD_REQUEST_CODE } from "./errors";
import { loadConfig } from "./config";
import { API_VERSION, FileCache, type CacheObject } from "./cache";
import { identityOf, usableDir, type CopyAs } from "./backend/files";

/** One line of a request that is not JSON or is over the limits, for errorText. */
function problemText(method: string, p: Parameters<BadRequest>[1]) {
  if (p.kind === "json") return `${method}: invalid JSON payload: ${p.message}`;
  return `${method}: ${p.message}`;
}

/**
 * The row of a request failing its schema: the method's code for bad input
 * (BAD_REQUEST_CODE) with a text naming the field. GetCacheStatus and GetCacheTypes
 * have none (their badRequest answers returnValue true).
 */
function invalidRow(v: Invalid) {
  if (ANSWERED_ANYWAY.has(v.method) || !(v.method in BAD_REQUEST_CODE)) return undefined;
  const text = v.missing !== undefined ? `${v.method}: ${v.missing} is required` : `${v.method}: invalid ${v.path.join(".") || "payload"}: ${v.message}`;
  return { code: BAD_REQUEST_CODE[v.method] ?? null, text };
}
const ANSWERED_ANYWAY = new Set(["GetCacheStatus", "GetCacheTypes"]);

/** The topic of an object's subscriptions (its writer's and SubscribeCacheObject's). */
const objectKey = (o: CacheObject) => `object/${o.id}`;

const statusOf = (cache: FileCache) => ({ returnValue: true as const, ...cache.status() });
const typesOf = (cache: FileCache) => {
  const types = [...cache.types.keys()].sort();
  return types.length ? { returnValue: true as const, types } : { returnValue: true as const };
};

/**
 * Open caches of this process, newest last. GetCacheStatus and GetCacheTypes answer
 * returnValue true whatever the payload (spec), so badRequest, which is the
 * module's and not an instance's, answers them from the cache being served.
 */
const open: FileCache[] = [];

/** The methods typeGroup governs. */
const TYPE_METHODS = ["DefineType", "ChangeType", "DeleteType"] as const;

/** The rule of the type methods: root and typeGroup ("*": any caller). */

export default defineService({
  spec: {
    name: "filecache",
    busName: "com.vendor.service.filecache",
    description:
      "File cache: a shared space of cache objects grouped in types with low and high watermarks; objects are expired automatically as space is needed, unless subscribed.",
    api,
    invalid: { default: invalidRow },
    badRequest: (method, p) => {
      const live = open.at(-1);
      if (live && method === "GetCacheStatus") return statusOf(live);
      if (live && method === "GetCacheTypes") return typesOf(live);
      return answer({ code: BAD_REQUEST_CODE[method] ?? null, text: problemText(method, p) });
    },
    internalError: (method, e) => ({ errorText: `${method}: ${(e as Error)?.message ?? String(e)}` }),
    // DefineType, ChangeType, DeleteType refused by their rule: -193, the spec's permission row.
    denied: (method) => {
      const live = open.at(-1);
      return answer(E.deniedByRule(method, describeRule(group(live?.cfg.typeGroup ?? TYPE_GROUP))));
    },
    // SubscribeCacheObject always answers `subscribed` (the spec marks it required), failures too.
    failureFields: (method): Json => (method === "SubscribeCacheObject" ? { subscribed: false } : {}),
  },

  create(ctx) {
    const cfg = loadConfig(ctx.config, ctx.stateDir, ctx.log);
    // A directory or the metadata file that cannot be used throws an Error naming it,
    // with err.path and err.code (the errno's code: EROFS, EACCES, ...).
    usableDir("the copy directory", cfg.copyDirectory);
    const cache = FileCache.open(cfg, ctx.log);
    open.push(cache);
    ctx.log.info({ configFile: cfg.configFile, cacheDirectory: cfg.cacheDirectory, totalCacheSpace: cfg.totalCacheSpace }, "file cache configuration");
    // An object removed while held (its file deleted behind the cache's back): its subscriptions end.
    // A callback of the cache (queued after the change): it never throws, its failure is a log line.
    cache.onHeldRemoved = (o) => {
      try {
        ctx.topics.end(objectKey(o));
      } catch (e) {
        ctx.log.error({ err: e, path: o.path }, "ending the subscriptions of a removed cache object failed");
      }
    };

    const typeRequired = (method: string, name: string) => cache.type(name) ?? raise(E.typeMissing(method, name));

    // Types and objects outlive connections (they are stored): they are their uid's.
    // Only that uid or root may change, resize or remove them; the lease registry's
    // one ownership check decides (docs/decisions/filecache.md, "Owners").
    const mayChange = (caller: Caller, owner: number) => mayAct(caller, { owner: uidOwner(owner) });
    const ownType = (method: string, name: string, caller: Caller) => {
      const t = cache.type(name);
      if (t && !mayChange(caller, t.owner)) raise(E.notOwner(method, "type", name));
    };
    const ownObject = (method: string, o: CacheObject, caller: Caller) => {
      if (!mayChange(caller, o.owner)) raise(E.notOwner(method, "object", o.path));
    };

    /** A copy's destination as the caller may use it: the platform's caller files. */
    const copyAs = (caller: Caller): CopyAs => ({
      check: (path) => ctx.files.check(path),
      create: (path) => ctx.files.open(caller, path, { write: true, create: "new" }, 0o644),
      mkdir: (path) => ctx.files.mkdir(caller, path, 0o755),
      // An empty directory a failed copy made: removed as the caller, by the same rules.
      remove: (path, dir) => (dir ? ctx.files.rmdir(caller, path) : ctx.files.unlink(caller, path)),
    });

    /** The inserting subscription ended (cancel or disconnect): the write is complete. */
    const completeWrite = (o: CacheObject) => {
      try {
        cache.writeCompleted(o);
      } catch (e) {
        ctx.log.error({ err: e, path: o.path }, "completing a cache object's write failed");
      }
    };

    const unhold = (o: CacheObject) => {
      try {
        cache.unsubscribe(o);
      } catch (e) {
        ctx.log.error({ err: e, path: o.path }, "ending a cache object subscription failed");
      }
    };

    return {
      // The type methods' rule from typeGroup (a board recipe or FileCache.conf may widen it, "*"; the runtime logs a rule other than the table's).
      access: Object.fromEntries(TYPE_METHODS.map((m) => [m, group(cfg.typeGroup)])),
      handlers: {
        ChangeType(req, call) {
          ownType("ChangeType", req.typeName, call.caller);
          cache.changeType(req);
          return ok();
        },

        async CopyCacheObject(req, call) {
          const o = cache.resolve("CopyCacheObject", req.pathName);
          const newPathName = await cache.copy(o, req.destination, req.fileName, identityOf(call.caller), copyAs(call.caller));
          return ok({ newPathName });
        },

        DefineType(req, call) {
          cache.defineType(req, call.caller.uid);
          return ok();
        },

        DeleteType(req, call) {
          ownType("DeleteType", req.typeName, call.caller);
          return ok({ freedSpace: cache.deleteType(req.typeName) });
        },

        DescribeType(req) {
          const t = typeRequired("DescribeType", req.typeName);
          return ok({ loWatermark: t.lo, hiWatermark: t.hi, size: t.size, cost: t.cost, lifetime: t.lifetime });
        },

        ExpireCacheObject(req, call) {
          const o = cache.resolve("ExpireCacheObject", req.pathName);
          ownObject("ExpireCacheObject", o, call.caller);
          cache.expire(o);
          return ok();
        },

        GetCacheObjectFilename(req) {
          const o = cache.resolve("GetCacheObjectFilename", req.pathName, E.objectMissing);
          return ok({ fileName: o.fileName });
        },

        GetCacheObjectSize(req) {
          const o = cache.resolve("GetCacheObjectSize", req.pathName, E.objectMissing);
          return ok({ size: o.size });
        },

        GetCacheStatus: () => statusOf(cache),

        GetCacheTypeStatus(req) {
          const t = typeRequired("GetCacheTypeStatus", req.typeName);
          cache.enforceDeclared(t.objects);
          return ok({ size: t.used, numObjs: t.objects.size });
        },

        GetCacheTypes: () => typesOf(cache),

        GetVersion: () => ok({ version: API_VERSION }),

        InsertCacheObject(req, call) {
          const sub = call.subscription;
          const o = cache.insert(req, identityOf(call.caller), !!sub);
          if (!sub) return ok({ pathName: o.path });
          // The write completes when the caller ends the call (cancel or disconnect).
          ctx.leases.take(call.caller.name, `write/${o.id}`, { boundTo: sub, release: () => completeWrite(o) });
          ctx.topics.add(objectKey(o), sub);
          return ok({ pathName: o.path, subscribed: true });
        },

        ResizeCacheObject(req, call) {
          const o = cache.resolve("ResizeCacheObject", req.pathName);
          ownObject("ResizeCacheObject", o, call.caller);
          cache.resize(o, req.newSize);
          return ok({ newSize: o.size });
        },

        SubscribeCacheObject(req, call) {
          const o = cache.resolve("SubscribeCacheObject", req.pathName);
          // alwaysSubscribes: the spec's state table subscribes unconditionally.
          const sub = call.subscription ?? raise(E.objectNotLocated("SubscribeCacheObject", req.pathName));
          cache.subscribe(o);
          ctx.leases.take(call.caller.name, `hold/${o.id}`, { exclusive: false, boundTo: sub, release: () => unhold(o) });
          ctx.topics.add(objectKey(o), sub);
          return ok({ subscribed: true });
        },

        TouchCacheObject(req) {
          cache.touch(cache.resolve("TouchCacheObject", req.pathName));
          return ok();
        },
      },

      // Nothing per client here: writes and holds are leases bound to their
      // subscriptions, which end on cancel or disconnect.
      stop() {
        const i = open.indexOf(cache);
        if (i >= 0) open.splice(i, 1);
        cache.close();
      },
    };
  },
});
