// File cache service (spec part 2, com.vendor.service.filecache): a shared cache
// space of objects grouped in types with watermarks. The logic lives in cache.ts;
// this file maps the spec's methods onto it.
import { fail, type Json } from "../../core/errors";
import { defineService, type Call } from "../../core/service";
import { api } from "./schemas";
import { E, BAD_REQUEST_CODE } from "./errors";
import { loadConfig } from "./config";
import { API_VERSION, FileCache, type InsertRequest, type TypeDefinition } from "./cache";
import { identityOf } from "./backend/files";
import { ensureDir } from "./backend/files";

/** One line of the request problem, for errorText. */
function problemText(method: string, p: { kind: "json" | "schema"; message: string; missing?: string; path?: (string | number)[] }) {
  if (p.kind === "json") return `${method}: invalid JSON payload: ${p.message}`;
  if (p.missing !== undefined) return `${method}: ${p.missing} is required`;
  const first = p.message.split("\n")[0]!.replace(/^✖\s*/, "");
  return `${method}: invalid ${p.path?.join(".") || "payload"}: ${first}`;
}

/** SubscribeCacheObject always answers `subscribed` (the spec marks it required). */
const extraFor = (method: string): Json => (method === "SubscribeCacheObject" ? { subscribed: false } : {});

export default defineService({
  spec: {
    name: "filecache",
    busName: "com.vendor.service.filecache",
    description:
      "File cache: a shared space of cache objects grouped in types with low and high watermarks; objects are expired automatically as space is needed, unless subscribed.",
    api,
    badRequest: (method, p) => {
      const code = BAD_REQUEST_CODE[method] ?? null;
      return { ...(code === null ? {} : { errorCode: code }), errorText: problemText(method, p), ...extraFor(method) };
    },
    internalError: (method, e) => ({ errorText: `${method}: ${(e as Error)?.message ?? String(e)}`, ...extraFor(method) }),
  },

  create(ctx) {
    const cfg = loadConfig(ctx.config as Record<string, unknown>, ctx.stateDir, ctx.log);
    ensureDir(cfg.copyDirectory);
    const cache = FileCache.open(cfg, ctx.log);
    ctx.log.info({ configFile: cfg.configFile, cacheDirectory: cfg.cacheDirectory, totalCacheSpace: cfg.totalCacheSpace }, "file cache configuration");

    const typeRequired = (method: string, name: string, missing: typeof E.typeMissing) => {
      const t = cache.type(name);
      if (!t) return fail(missing(method, name).code, missing(method, name).text);
      return t;
    };

    return {
      handlers: {
        ChangeType(req: Partial<TypeDefinition> & { typeName: string }) {
          cache.changeType(req);
          return { returnValue: true };
        },

        async CopyCacheObject(req: { pathName: string; destination?: string; fileName?: string }, call: Call) {
          const o = cache.resolve("CopyCacheObject", req.pathName);
          const newPathName = await cache.copy(o, req.destination ?? cfg.copyDirectory, req.fileName, identityOf(call.caller));
          return { returnValue: true, newPathName };
        },

        DefineType(req: TypeDefinition) {
          cache.defineType(req);
          return { returnValue: true };
        },

        DeleteType(req: { typeName: string }) {
          return { returnValue: true, freedSpace: cache.deleteType(req.typeName) };
        },

        DescribeType(req: { typeName: string }) {
          const t = typeRequired("DescribeType", req.typeName, E.typeMissing);
          return { returnValue: true, loWatermark: t.lo, hiWatermark: t.hi, size: t.size, cost: t.cost, lifetime: t.lifetime };
        },

        ExpireCacheObject(req: { pathName: string }) {
          cache.expire(cache.resolve("ExpireCacheObject", req.pathName));
          return { returnValue: true };
        },

        GetCacheObjectFilename(req: { pathName: string }) {
          const o = cache.resolve("GetCacheObjectFilename", req.pathName, E.objectMissing);
          return { returnValue: true, fileName: o.fileName };
        },

        GetCacheObjectSize(req: { pathName: string }) {
          const o = cache.resolve("GetCacheObjectSize", req.pathName, E.objectMissing);
          return { returnValue: true, size: o.size };
        },

        GetCacheStatus() {
          return { returnValue: true, ...cache.status() };
        },

        GetCacheTypeStatus(req: { typeName: string }) {
          const t = typeRequired("GetCacheTypeStatus", req.typeName, E.typeMissing);
          return { returnValue: true, size: t.used, numObjs: t.objects.size };
        },

        GetCacheTypes() {
          const types = [...cache.types.keys()].sort();
          return types.length ? { returnValue: true, types } : { returnValue: true };
        },

        GetVersion() {
          return { returnValue: true, version: API_VERSION };
        },

        InsertCacheObject(req: InsertRequest & { subscribe?: boolean }, call: Call) {
          const sub = call.subscription;
          const o = cache.insert(req, identityOf(call.caller), !!sub);
          if (!sub) return { returnValue: true, pathName: o.path };
          // The write completes when the caller ends the call (cancel or disconnect).
          sub.onEnd(() => {
            try {
              cache.writeCompleted(o);
            } catch (e) {
              ctx.log.error({ err: e, path: o.path }, "completing a cache object's write failed");
            }
          });
          return { returnValue: true, pathName: o.path, subscribed: true };
        },

        ResizeCacheObject(req: { pathName: string; newSize: number }) {
          const o = cache.resolve("ResizeCacheObject", req.pathName);
          cache.resize(o, req.newSize);
          return { returnValue: true, newSize: o.size };
        },

        SubscribeCacheObject(req: { pathName: string }, call: Call) {
          let o;
          try {
            o = cache.resolve("SubscribeCacheObject", req.pathName);
          } catch (e: any) {
            if (e?.fields) fail(e.fields.errorCode, e.fields.errorText, { subscribed: false });
            throw e;
          }
          const sub = call.subscription;
          if (!sub) {
            cache.touch(o);
            return { returnValue: true, subscribed: false };
          }
          cache.subscribe(o);
          sub.onEnd(() => {
            try {
              cache.unsubscribe(o);
            } catch (e) {
              ctx.log.error({ err: e, path: o.path }, "ending a cache object subscription failed");
            }
          });
          return { returnValue: true, subscribed: true };
        },

        TouchCacheObject(req: { pathName: string }) {
          cache.touch(cache.resolve("TouchCacheObject", req.pathName));
          return { returnValue: true };
        },
      },

      // Everything a client holds here is a subscription, and those end by
      // themselves when the client goes (their onEnd hooks above do the rest).
      clientGone() {},

      stop() {
        cache.close();
      },
    };
  },
});
