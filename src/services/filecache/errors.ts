// File cache errors (spec part 2, "Errors", file cache): the table as data. Every
// text starts with the method name and names the type or the path concerned.
export interface Row {
  code: number;
  text: string;
}

const row = (code: number) => (text: string): Row => ({ code, text });
const e200 = row(-200);
const e199 = row(-199);

export const E = {
  // -200
  hiNotAboveLo: (m: string, type: string) => e200(`${m}: hiWatermark must be greater than loWatermark for type ${type}`),
  noSuchTypeDefined: (m: string, type: string) => e200(`${m}: no such type defined: ${JSON.stringify(type)}`),
  dirTypeTooSmall: (m: string, type: string) =>
    e200(`${m}: size must be greater than 1 block (4096 bytes) when dirType is true (type ${type})`),
  noSize: (m: string, type: string) => e200(`${m}: size is required, type ${type} has no default size`),
  cannotReserve: (m: string, type: string, why: string) => e200(`${m}: watermarks of type ${type} cannot be reserved: ${why}`),
  badParameters: (m: string, why: string) => e200(`${m}: invalid parameters: ${why}`),
  /** A fileName that cannot be one file name (empty, ".", "..", "/", control characters, too long): never echoed. */
  badFileName: (m: string, why: string) => e200(`${m}: invalid fileName: ${why}`),
  // -199
  typeExists: (m: string, type: string) => e199(`${m}: type already exists: ${type}`),
  typeMissing: (m: string, type: string) => e199(`${m}: type does not exist: ${type}`),
  objectNotLocated: (m: string, path: string) => e199(`${m}: object not located: ${path}`),
  pathGone: (m: string, path: string) => e199(`${m}: path no longer found in cache: ${path}`),
  invalidId: (m: string, path: string) => e199(`${m}: invalid object ID derived from the path: ${path}`),
  typeNotFoundForId: (m: string, path: string) => e199(`${m}: cache type not found for the ID of ${path}`),
  objectMissing: (m: string, path: string) => e199(`${m}: object does not exist: ${path}`),
  noSpace: (m: string, type: string, size: number) => e199(`${m}: no space of the requested size (${size} bytes) in type ${type}`),
  /** The file system holding the cache has less room than the object needs, or creating its file or row failed for lack of room. */
  noSpaceOnStorage: (m: string, type: string, size: number, why: string) =>
    e199(`${m}: no space of the requested size (${size} bytes) in type ${type}: ${why}`),
  /** Creating the object's file or row failed for another reason of the storage (an I/O error, read-only): docs/decisions/filecache.md. */
  storageFailed: (m: string, type: string, why: string) => e199(`${m}: the object cannot be stored in type ${type}: ${why}`),
  // -198
  deferred: (m: string, path: string) => row(-198)(`${m}: expiry deferred, object in use: ${path}`),
  // -197
  cannotConfigure: (m: string, type: string, why: string) => row(-197)(`${m}: failed to configure or allocate the type ${type}: ${why}`),
  // -196
  changeTypeMissing: (m: string, type: string) => row(-196)(`${m}: type does not exist: ${type}`),
  // -195
  typeSubscribed: (m: string, type: string) => row(-195)(`${m}: type has subscribed objects: ${type}`),
  deleteTypeMissing: (m: string, type: string) => row(-195)(`${m}: type does not exist: ${type}`),
  // -194
  cannotResize: (m: string, path: string, why: string) => row(-194)(`${m}: unable to resize ${path}: ${why}`),
  // -193
  invalidDestination: (m: string, dest: string) => row(-193)(`${m}: invalid destination: ${dest}`),
  /** A destination holding control characters: quoted as JSON, never echoed raw. */
  controlInDestination: (m: string, dest: string) =>
    row(-193)(`${m}: invalid destination: ${JSON.stringify(dest.slice(0, 64))}: the path holds control characters`),
  noWritePermission: (m: string, dest: string) => row(-193)(`${m}: no write permission on destination: ${dest}`),
  /** A type or object of another uid (only its owner and root may change it): docs/decisions/filecache.md, "Owners". */
  notOwner: (m: string, what: "type" | "object", name: string) =>
    row(-193)(`${m}: no write permission on ${what} ${name}: it belongs to another user (only its owner and root may change it)`),
  /** A caller the method's access rule refuses (DefineType, ChangeType, DeleteType). */
  deniedByRule: (m: string, rule: string) => row(-193)(`${m}: no write permission: ${m} is for ${rule}`),
  /** The copy itself failed at the destination (a file system that takes no files, no space): why is a fixed phrase, never errno text. */
  copyFailed: (m: string, dest: string, why: string) => row(-193)(`${m}: invalid destination: ${dest}: ${why}`),
  // -192
  noFileName: (m: string, path: string) => row(-192)(`${m}: no file name specified or found for ${path}`),
  /** The copy's name holds control characters (U+0000 to U+001F, U+007F): never echoed. */
  controlInName: (m: string, path: string) => row(-192)(`${m}: no file name specified or found for ${path}: the name holds control characters`),
  nameTooLong: (m: string, name: string) => row(-192)(`${m}: no file name specified or found: the name is too long for the destination (${Buffer.byteLength(name)} bytes, from ${JSON.stringify(name.slice(0, 32))})`),
  noUniqueName: (m: string, name: string, dest: string) => row(-192)(`${m}: no unique destination name for ${name} in ${dest}`),
  notDirectory: (m: string, dest: string) => row(-192)(`${m}: destination not a directory: ${dest}`),
  // -189
  differentConfig: (m: string, type: string) => row(-189)(`${m}: type ${type} has a different configuration (use ChangeType)`),
} as const;

/**
 * The code a request that fails its schema (or is not JSON) gets, per method: the
 * method's own code for bad input (docs/decisions/filecache.md, "Malformed requests").
 * Methods without an error row answer with errorText alone.
 */
export const BAD_REQUEST_CODE: Record<string, number | null> = {
  ChangeType: -200,
  CopyCacheObject: -192,
  DefineType: -197,
  DeleteType: -195,
  DescribeType: -199,
  ExpireCacheObject: -199,
  GetCacheObjectFilename: -199,
  GetCacheObjectSize: -199,
  GetCacheStatus: null,
  GetCacheTypeStatus: -199,
  GetCacheTypes: null,
  GetVersion: null,
  InsertCacheObject: -200,
  ResizeCacheObject: -194,
  SubscribeCacheObject: -199,
  TouchCacheObject: -199,
};
