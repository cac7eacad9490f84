// The one versioning and migration helper of what the services keep in the state
// directory (/var/lib/devservices). An image-based update replaces the binary and
// keeps that directory, and may roll back to the previous binary, so every store
// carries its format's version and every binary:
// - reads the formats it knows, migrating an older one to its own in numbered steps
//   (one per change of format, each tested), all or nothing: a SQLite database in one
//   transaction, a file written beside and renamed (fsync'd), so power lost during a
//   migration leaves the old format or the new one, never a mix;
// - never writes to a store newer than it knows: StoreTooNew is thrown before
//   anything is written, the service that owns the store does not start (or answers
//   a clear error), and the others serve (docs/updates.md).
// A store without a version (written by the product before stores were versioned) is
// format 1, except a SQLite database, whose user_version 0 means "new, or written
// before versions": its step 1 makes format 1 of either.
import { Database, type Statement } from "bun:sqlite";
import { closeSync, constants, fsyncSync, openSync, readFileSync, readSync, renameSync, statSync, unlinkSync, writeSync } from "node:fs";
import { dirname } from "node:path";

/**
 * Set at build time (`DEVSERVICES_STORE_BUMP=1 bun run build`, scripts/build.ts): a
 * test build in which the power-on reason file is one format newer, with its step, to
 * test an upgrade and a rollback across a change of format. Never set in the product.
 */
declare const DEVSERVICES_STORE_BUMP: string | undefined;
export const STORE_BUMP = typeof DEVSERVICES_STORE_BUMP === "string" && DEVSERVICES_STORE_BUMP === "1";

/** A store written by a newer binary (after a rollback): left untouched, the service does not use it. */
export class StoreTooNew extends Error {
  constructor(
    /** What the store is ("the power-on reason"). */
    readonly store: string,
    readonly path: string,
    /** The format found, and the newest this binary knows. */
    readonly found: number,
    readonly known: number,
  ) {
    super(`${store} ${path} is format ${found}, newer than format ${known} that this binary knows; it is left untouched`);
    this.name = "StoreTooNew";
  }
}

/** A store whose version field is not a format number at all. */
export class StoreUnreadable extends Error {
  constructor(readonly store: string, readonly path: string, why: string) {
    super(`${store} ${path}: ${why}`);
    this.name = "StoreUnreadable";
  }
}

/**
 * Steps from one format to the next: `steps[n]` turns format n-1 into format n. A
 * binary of format `version` has every step up to it.
 */
export type Steps<T> = Record<number, (from: T) => T>;

/** Runs the steps from `from` up to `to` (nothing when equal). */
export function migrate<T>(what: string, value: T, from: number, to: number, steps: Steps<T>): T {
  for (let v = from + 1; v <= to; v++) {
    const step = steps[v];
    if (!step) throw new Error(`${what}: no step from format ${v - 1} to ${v}`);
    value = step(value);
  }
  return value;
}

/**
 * Writes a file so that a crash or power loss leaves either its old content or the
 * new one: a temporary file beside it, fsync, rename over it, fsync of the directory.
 */
export function writeDurably(path: string, data: string | Uint8Array, mode = 0o644): void {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, "w", mode);
  try {
    const buf = typeof data === "string" ? Buffer.from(data) : data;
    for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    try {
      unlinkSync(tmp);
    } catch {}
    throw e;
  }
  closeSync(fd);
  renameSync(tmp, path);
  // The rename itself is durable only once the directory is.
  const dfd = openSync(dirname(path), constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    fsyncSync(dfd);
  } finally {
    closeSync(dfd);
  }
}

/** The version of a store: a whole number of at least 1, or a problem. */
function formatNumber(v: unknown): number | null {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 1 ? v : null;
}

// ---- JSON files ---------------------------------------------------------------

/** A JSON object file with a `version` field (absent: format 1). */
export interface JsonFormat {
  /** What the file is, for messages ("the power-on reason"). */
  what: string;
  /** The format this binary writes. */
  version: number;
  steps: Steps<Record<string, unknown>>;
}

export interface JsonRead {
  /** The file's fields (without `version`), in this binary's format; undefined: no file. */
  value: Record<string, unknown> | undefined;
  /** The format the file had (before a migration). */
  from?: number;
}

/**
 * Reads a JSON store. An older format is migrated and written back (writeDurably)
 * before this returns; a newer one throws StoreTooNew and is not written; a file that
 * is not a JSON object or whose version is no format number throws StoreUnreadable
 * (SyntaxError for bad JSON), and is not written either.
 */
export function readJsonStore(path: string, format: JsonFormat): JsonRead {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return { value: undefined };
    throw e;
  }
  const obj = JSON.parse(text) as unknown;
  if (!obj || typeof obj !== "object" || Array.isArray(obj)) throw new StoreUnreadable(format.what, path, "not a JSON object");
  const { version, ...fields } = obj as Record<string, unknown>;
  const from = version === undefined ? 1 : formatNumber(version);
  if (from === null) throw new StoreUnreadable(format.what, path, `version ${JSON.stringify(version)} is no format number`);
  if (from > format.version) throw new StoreTooNew(format.what, path, from, format.version);
  if (from === format.version) return { value: fields, from };
  const value = migrate(format.what, fields, from, format.version, format.steps);
  writeJsonStore(path, format, value);
  return { value, from };
}

/** Writes a JSON store in this binary's format: `{"version":N, ...fields}`. */
export function writeJsonStore(path: string, format: JsonFormat, fields: Record<string, unknown>): void {
  writeDurably(path, JSON.stringify({ version: format.version, ...fields }) + "\n");
}

// ---- SQLite databases -----------------------------------------------------------

/** A SQLite database whose format is its `PRAGMA user_version`. */
export interface SqliteFormat {
  what: string;
  /** The format this binary writes (at least 1). */
  version: number;
  /**
   * `steps[n]` turns format n-1 into n inside the migration's transaction; step 1
   * makes format 1 of a new database or of one written before versions (user_version 0).
   */
  steps: Record<number, (db: Database) => void>;
}

/**
 * The user_version of a database file, read without writing anything: from the
 * file's header, or through a read-only connection when a write-ahead log holds
 * commits not yet in the file. undefined: no file, or not a database (yet).
 */
export function sqliteVersion(file: string): number | undefined {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  const header = Buffer.alloc(100);
  let n: number;
  try {
    n = readSync(fd, header, 0, 100, 0);
  } finally {
    closeSync(fd);
  }
  if (n < 100 || header.toString("latin1", 0, 16) !== "SQLite format 3\0") return undefined;
  let wal = 0;
  try {
    wal = statSync(`${file}-wal`).size;
  } catch {}
  if (wal === 0) return header.readInt32BE(60);
  const db = new Database(file, { readonly: true });
  try {
    return (db.query("PRAGMA user_version").get() as { user_version: number }).user_version;
  } finally {
    db.close();
  }
}

/**
 * Refuses a database newer than the format: call before the database is opened for
 * writing (a read-write open of a WAL database may write to it).
 */
export function checkSqlite(file: string, format: SqliteFormat): void {
  const v = sqliteVersion(file);
  if (v !== undefined && v > format.version) throw new StoreTooNew(format.what, file, v, format.version);
}

/**
 * Brings an open database to the format: the steps after its user_version and the new
 * user_version, in one transaction (a failure or power loss leaves the old format).
 * Returns the format it had. A newer database throws StoreTooNew, unchanged.
 */
export function migrateSqlite(db: Database, file: string, format: SqliteFormat): number {
  const version = () => (db.query("PRAGMA user_version").get() as { user_version: number }).user_version;
  const before = version();
  if (before > format.version) throw new StoreTooNew(format.what, file, before, format.version);
  if (before === format.version) return before;
  db.exec("BEGIN IMMEDIATE");
  try {
    // Read again under the write lock: another connection may have migrated it meanwhile.
    const from = version();
    if (from > format.version) throw new StoreTooNew(format.what, file, from, format.version);
    for (let v = from + 1; v <= format.version; v++) {
      const step = format.steps[v];
      if (!step) throw new Error(`${format.what}: no step from format ${v - 1} to ${v}`);
      step(db);
    }
    db.exec(`PRAGMA user_version = ${format.version}`);
    db.exec("COMMIT");
    return from;
  } catch (e) {
    if (db.inTransaction)
      try {
        db.exec("ROLLBACK");
      } catch {}
    throw e;
  }
}

/**
 * A database's statements by name, each prepared by its first use: a start prepares
 * none it does not run (preparing the media index's 27 and the file cache's 10 at
 * every start took about 0.6 ms of it: docs/performance.md). `finalize` finalizes the
 * ones that were prepared, before the database is closed.
 */
export function preparedOnUse<K extends string>(db: Database, sql: Record<K, string>): { s: Record<K, Statement>; finalize(): void } {
  const made: Statement[] = [];
  const s = {} as Record<K, Statement>;
  for (const name of Object.keys(sql) as K[]) {
    Object.defineProperty(s, name, {
      configurable: true,
      enumerable: true,
      get() {
        const st = db.prepare(sql[name]);
        made.push(st);
        Object.defineProperty(s, name, { value: st, enumerable: true });
        return st;
      },
    });
  }
  return { s, finalize: () => made.splice(0).forEach((st) => st.finalize()) };
}
