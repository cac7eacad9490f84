// File cache API (spec part 2, com.vendor.service.filecache, API level 11): one
// entry per method of the spec's endpoint table; method names are case-sensitive.
import { z } from "zod";
import { base, once, type Api } from "../../core/service";
import { group } from "../../core/access";

/** Root or members of this group manage cache types (configurable: typeGroup). */
export const TYPE_GROUP = "devservices-cache";
const typeAccess = group(TYPE_GROUP);

const Response = once(() => z.looseObject(base()));
/** Methods whose success fields are all required still fail on a malformed request. */
const Failure = once(() => z.looseObject({ returnValue: z.literal(false), errorCode: z.number().optional(), errorText: z.string() }));
const orFailure = <T extends z.ZodType>(success: T) => z.union([success, Failure()]);
/**
 * Sizes, watermarks and lifetimes are Numbers, not negative (spec, limits); a byte
 * count with a fraction is taken as the next whole byte (decisions, "Numbers").
 */
const bytes = once(() => z.number().nonnegative());
const seconds = once(() => z.number().nonnegative());
const typeCost = once(() => z.number().min(0).max(100));
const typeName = once(() => z.string().describe("cache type name: up to 64 characters, not starting with '.'"));
const pathName = once(() => z.string().describe("the pathName InsertCacheObject returned"));
const level = 11;

export const api = {
  ChangeType: {
    summary: "Changes the given values of a cache type (watermarks, default size, cost, lifetime); the name cannot change.",
    request: () => z.looseObject({
      typeName: typeName(),
      loWatermark: bytes().optional(),
      hiWatermark: bytes().optional(),
      size: bytes().optional(),
      cost: typeCost().optional(),
      lifetime: seconds().optional().describe("seconds"),
    }),
    response: () => Response(),
    access: typeAccess,
    level,
  },
  CopyCacheObject: {
    summary: "Copies a cache object's file to a directory the caller may write; a colliding name becomes base-(1).ext.",
    request: () => z.looseObject({
      pathName: pathName(),
      destination: z.string().optional().describe("target directory (default: the configured copyDirectory)"),
      fileName: z.string().optional().describe("default: the fileName given at insert"),
    }),
    response: () => Response().extend({ newPathName: z.string().optional() }),
    level,
  },
  DefineType: {
    summary: "Defines a cache type with its watermarks and object defaults; a name cannot be defined twice.",
    request: () => z.looseObject({
      typeName: typeName(),
      loWatermark: bytes().describe("bytes guaranteed to the type"),
      hiWatermark: bytes().describe("bytes the type may use at most; greater than loWatermark"),
      size: bytes().optional().describe("default object size in bytes (0: none)"),
      cost: typeCost().optional().describe("default object cost"),
      lifetime: seconds().optional().describe("default object lifetime in seconds"),
      dirType: z.boolean().optional().describe("objects are directories"),
    }),
    response: () => Response(),
    access: typeAccess,
    level,
  },
  DeleteType: {
    summary: "Expires every object of a type and removes the type; refused while any object is subscribed.",
    request: () => z.looseObject({ typeName: typeName() }),
    response: () => Response().extend({ freedSpace: z.number().optional() }),
    access: typeAccess,
    level,
  },
  DescribeType: {
    summary: "A type's watermarks (padded to 4096-byte blocks) and object defaults.",
    request: () => z.looseObject({ typeName: typeName() }),
    response: () => Response().extend({
      loWatermark: z.number().optional(),
      hiWatermark: z.number().optional(),
      size: z.number().optional(),
      cost: z.number().optional(),
      lifetime: z.number().optional(),
    }),
    level,
  },
  ExpireCacheObject: {
    summary: "Removes an object; while it is subscribed the removal is deferred (-198) until the last subscription ends.",
    request: () => z.looseObject({ pathName: pathName() }),
    response: () => Response(),
    level,
  },
  GetCacheObjectFilename: {
    summary: "The fileName an object was inserted with.",
    request: () => z.looseObject({ pathName: pathName() }),
    response: () => Response().extend({ fileName: z.string().optional() }),
    level,
  },
  GetCacheObjectSize: {
    summary: "An object's recorded size in bytes.",
    request: () => z.looseObject({ pathName: pathName() }),
    response: () => Response().extend({ size: z.number().optional() }),
    level,
  },
  GetCacheStatus: {
    summary: "Number of types and objects, bytes used by all objects and bytes still available (returnValue always true).",
    request: () => z.looseObject({}),
    response: () => z.looseObject({ returnValue: z.literal(true), numTypes: z.number(), size: z.number(), numObjs: z.number(), availSpace: z.number() }),
    level,
  },
  GetCacheTypeStatus: {
    summary: "Bytes used by a type's objects and their number.",
    request: () => z.looseObject({ typeName: typeName() }),
    response: () => Response().extend({ size: z.number().optional(), numObjs: z.number().optional() }),
    level,
  },
  GetCacheTypes: {
    summary: "The names of the defined types (no types field when there is none; returnValue always true).",
    request: () => z.looseObject({}),
    response: () => z.looseObject({ returnValue: z.literal(true), types: z.array(z.string()).optional() }),
    level,
  },
  GetVersion: {
    summary: "The File Cache API version.",
    request: () => z.looseObject({}),
    response: () => orFailure(z.looseObject({ returnValue: z.literal(true), version: z.string() })),
    level,
  },
  InsertCacheObject: {
    summary:
      "Reserves a new object of a type and returns the pathName to write it to (extension of fileName kept); with subscribe true the caller keeps writing until it ends the subscription.",
    request: () => z.looseObject({
      typeName: typeName(),
      fileName: z.string().describe("stored; its extension is kept in pathName"),
      size: z.number().positive().optional().describe("bytes; required when the type has no default size"),
      cost: z.number().min(1).max(100).optional(),
      lifetime: seconds().optional().describe("seconds"),
      subscribe: z.boolean().optional(),
    }),
    response: () => Response().extend({ pathName: z.string().optional(), subscribed: z.boolean().optional() }),
    subscribable: true,
    level,
  },
  ResizeCacheObject: {
    summary: "Declares a new size for an object (growing may expire other objects).",
    request: () => z.looseObject({ pathName: pathName(), newSize: z.number().positive().describe("bytes") }),
    response: () => Response().extend({ newSize: z.number().optional() }),
    level,
  },
  SubscribeCacheObject: {
    summary: "Holds an object (always a subscription): it is not expired while any subscription is active.",
    request: () => z.looseObject({ pathName: pathName(), subscribe: z.boolean().optional().describe("ignored: the call always subscribes") }),
    response: () => Response().extend({ subscribed: z.boolean() }),
    subscribable: true,
    alwaysSubscribes: true,
    level,
  },
  TouchCacheObject: {
    summary: "Marks an object recently used, which makes it less likely to be expired.",
    request: () => z.looseObject({ pathName: pathName() }),
    response: () => Response(),
    level,
  },
} satisfies Api;
