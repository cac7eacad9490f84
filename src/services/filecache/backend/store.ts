// The metadata store: SQLite (bun:sqlite) in WAL mode. Every change of the cache is
// one transaction, so a SIGKILL leaves either the state before it or after it;
// files on disk are reconciled against these rows at start (cache.ts). On a full
// file system a reserve file is given up so removals can be committed, and changes
// already made in memory that still cannot be committed are kept and committed later
// (docs/decisions/filecache.md, "A full disk: removals").
// Why SQLite: docs/decisions/filecache.md, "Metadata store".
import { Database, type Statement } from "bun:sqlite";
import { closeSync, openSync, statSync, unlinkSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import type { Logger } from "../../../core/log";
import { checkSqlite, migrateSqlite, preparedOnUse, type SqliteFormat } from "../../../core/store";
import { freeBytes, storageCode } from "./files";

/** The most bytes one crypto.getRandomValues call fills. */
const RANDOM_CHUNK = 65536;

export interface TypeRow {
  name: string;
  lo: number;
  hi: number;
  size: number;
  cost: number;
  lifetime: number;
  dirType: number;
  /** The uid that defined the type (null in rows stored before owners were recorded: root's). */
  owner: number | null;
}

export interface ObjectRow {
  id: number;
  type: string;
  fileName: string;
  ext: string;
  size: number;
  cost: number;
  lifetime: number;
  lastUsed: number;
  /** 1 while its inserting subscription is open (the write has not completed). */
  writing: number;
  /** 1 when expiry was deferred: removed once no subscription remains. */
  doomed: number;
  /** The uid that inserted the object (null in rows stored before owners were recorded: root's). */
  owner: number | null;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS types (
  name TEXT PRIMARY KEY, lo INTEGER NOT NULL, hi INTEGER NOT NULL, size INTEGER NOT NULL,
  cost INTEGER NOT NULL, lifetime INTEGER NOT NULL, dirType INTEGER NOT NULL, owner INTEGER
);
CREATE TABLE IF NOT EXISTS objects (
  id INTEGER PRIMARY KEY, type TEXT NOT NULL, fileName TEXT NOT NULL, ext TEXT NOT NULL,
  size INTEGER NOT NULL, cost INTEGER NOT NULL, lifetime INTEGER NOT NULL, lastUsed INTEGER NOT NULL,
  writing INTEGER NOT NULL DEFAULT 0, doomed INTEGER NOT NULL DEFAULT 0, owner INTEGER
);
CREATE INDEX IF NOT EXISTS objects_by_type ON objects(type);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
`;

/**
 * The database's format (its user_version; docs/services/filecache.md, "State"). Step 1
 * makes format 1 of a new database or one written before versions (user_version 0):
 * the tables, and the owner columns in databases made before owners were recorded.
 */
export const METADATA_FORMAT: SqliteFormat = {
  what: "the file cache metadata",
  version: 1,
  steps: {
    1: (db) => {
      db.exec(SCHEMA);
      for (const table of ["types", "objects"]) {
        const cols = db.query(`PRAGMA table_info(${table})`).all() as { name: string }[];
        if (!cols.some((c) => c.name === "owner")) db.exec(`ALTER TABLE ${table} ADD COLUMN owner INTEGER`);
      }
    },
  },
};

export interface StoreOptions {
  /** Bytes kept in a file beside the database (<file>-reserve), given up when a commit finds its file system full (0, the default: none). */
  reserveBytes?: number;
  log?: Logger;
}

/** One statement of a change, and what it concerns (backlog entries of the same key replace each other). */
type Op = { key: string; run: () => void };

/** SQLite's ways of saying the database's file system is full. */
export const isFull = (e: unknown) => {
  const code = (e as { code?: unknown } | null)?.code;
  return code === "SQLITE_FULL" || code === "SQLITE_IOERR_SHMSIZE" || code === "ENOSPC" || code === "EDQUOT";
};

/** The metadata's statements (prepared on first use: core/store.ts, preparedOnUse). */
const STATEMENTS = {
  putType: "INSERT OR REPLACE INTO types (name, lo, hi, size, cost, lifetime, dirType, owner) VALUES ($name, $lo, $hi, $size, $cost, $lifetime, $dirType, $owner)",
  deleteType: "DELETE FROM types WHERE name = ?",
  deleteTypeObjects: "DELETE FROM objects WHERE type = ?",
  insertObject:
    "INSERT INTO objects (id, type, fileName, ext, size, cost, lifetime, lastUsed, writing, doomed, owner) VALUES ($id, $type, $fileName, $ext, $size, $cost, $lifetime, $lastUsed, $writing, $doomed, $owner)",
  deleteObject: "DELETE FROM objects WHERE id = ?",
  setSize: "UPDATE objects SET size = ? WHERE id = ?",
  setLastUsed: "UPDATE objects SET lastUsed = ? WHERE id = ?",
  setDoomed: "UPDATE objects SET doomed = 1 WHERE id = ?",
  finishWrite: "UPDATE objects SET writing = 0, size = ? WHERE id = ?",
  setLastId: "INSERT OR REPLACE INTO meta (key, value) VALUES ('lastId', ?)",
};

export class MetadataStore {
  private db: Database;
  /** The statements of the open transaction, run at its end. */
  private ops: Op[] | null = null;
  /**
   * Changes the cache has made in memory whose commit failed for lack of room or an
   * I/O error: committed before anything else, as soon as a commit succeeds.
   */
  private backlog = new Map<string, () => void>();
  private backlogSince = 0;
  readonly reserve: Reserve;
  private readonly log?: Logger;
  private s: Record<keyof typeof STATEMENTS, Statement>;
  private finalizeStatements: () => void;

  constructor(readonly file: string, opts: StoreOptions = {}) {
    this.log = opts.log;
    // A database newer than this binary knows (a rollback) is refused before anything
    // beside it or in it is written: StoreTooNew, and the service does not start.
    checkSqlite(file, METADATA_FORMAT);
    this.reserve = new Reserve(file + "-reserve", opts.reserveBytes ?? 0, opts.log);
    this.db = new Database(file, { create: true, strict: true });
    try {
      ({ s: this.s, finalize: this.finalizeStatements } = this.setUp());
    } catch (e) {
      this.db.close();
      throw e;
    }
    this.reserve.restore();
  }

  private setUp() {
    // First, before anything reads the file: another process's last connection may be
    // closing it (checkpointing the WAL under an exclusive lock, a restart right after
    // a stop), and without a busy timeout the first statement fails at once with
    // SQLITE_BUSY instead of waiting for it.
    this.db.exec("PRAGMA busy_timeout = 5000");
    // WAL: a commit is one append, readers never block, and a killed process loses
    // nothing committed. NORMAL sync: a power cut may lose the last commits, never
    // consistency; start-up reconciliation covers both.
    this.db.exec("PRAGMA journal_mode = WAL");
    this.db.exec("PRAGMA synchronous = NORMAL");
    // Older formats are migrated in one transaction (databases made before owners were
    // recorded get the column, empty: NULL is root's).
    migrateSqlite(this.db, this.file, METADATA_FORMAT);
    return preparedOnUse(this.db, STATEMENTS);
  }

  /**
   * Runs fn in one transaction, all or nothing (nested calls join the outer one): the
   * statements it makes are run at its end, with the backlog committed first. A throw
   * (fn's, or the commit's: SQLITE_FULL when the file system is full) means nothing of
   * fn is stored. It never spends the reserve: what it adds is refused on a full disk.
   */
  transaction<T>(fn: () => T): T {
    if (this.ops) return fn();
    const ops: Op[] = (this.ops = []);
    let r: T;
    try {
      r = fn();
    } finally {
      this.ops = null;
    }
    this.flushBacklog();
    this.commit(ops, false);
    return r;
  }

  /**
   * Runs fn, whose changes the cache has already made in memory (removals, uses,
   * completed writes), and stores its statements even when fn throws. A commit that
   * fails for lack of room is tried again after a checkpoint and then with the reserve
   * given up; one that still fails for lack of room (or an I/O error, a read-only file
   * system) is kept in the backlog and committed with the next commit that succeeds
   * (retryBacklog, the next change): it is never thrown. Other errors roll back, drop
   * the backlog (start-up reconciles the rows with the files) and are thrown.
   */
  transactionKeeping<T>(fn: () => T): T {
    if (this.ops) return fn();
    const ops: Op[] = (this.ops = []);
    let threw = true;
    try {
      const r = fn();
      threw = false;
      return r;
    } finally {
      this.ops = null;
      for (const op of ops) this.toBacklog(op);
      if (!threw) this.flushBacklog();
      else {
        try {
          this.flushBacklog();
        } catch (e) {
          // fn's error goes on; this one is told here.
          this.log?.error({ err: e }, "file cache: storing metadata changes failed");
        }
      }
    }
  }

  /** Statements are run at the end of their transaction (alone, one outside any). */
  private record(key: string, run: () => void) {
    if (this.ops) this.ops.push({ key, run });
    else this.transaction(() => this.ops!.push({ key, run }));
  }

  /** Adds a statement to the backlog: the latest of the same key replaces an earlier one; an object's removal, its other updates. */
  private toBacklog(op: Op) {
    if (this.backlog.size === 0) this.backlogSince = Date.now();
    const m = /^object\/(\d+)\/delete$/.exec(op.key);
    if (m) for (const k of ["size", "lastUsed", "doomed", "finish"]) this.backlog.delete(`object/${m[1]}/${k}`);
    this.backlog.delete(op.key);
    this.backlog.set(op.key, op.run);
  }

  /** Statements of changes made in memory and not stored yet. */
  get pending(): number {
    return this.backlog.size;
  }

  /** Commits the backlog; true when nothing is left of it. Never throws for lack of room or an I/O error. */
  retryBacklog(): boolean {
    if (this.ops) return false;
    this.flushBacklog();
    return this.backlog.size === 0;
  }

  private flushBacklog() {
    if (this.backlog.size === 0) return;
    const ops = [...this.backlog.values()];
    try {
      this.commit(
        ops.map((run) => ({ key: "", run })),
        true,
      );
    } catch (e) {
      if (storageCode(e)) {
        if (!this.backlogFailing) this.log?.warn({ err: e, code: (e as { code?: string }).code, pending: this.backlog.size }, "file cache: metadata changes kept in memory until they can be stored");
        this.backlogFailing = true;
        return;
      }
      this.backlog.clear();
      this.backlogFailing = false;
      throw e;
    }
    // Only what was committed goes (nothing was added meanwhile: commits are synchronous).
    this.backlog.clear();
    if (this.backlogFailing) this.log?.info({ after_ms: Date.now() - this.backlogSince, statements: ops.length }, "file cache: metadata changes kept in memory are stored");
    this.backlogFailing = false;
  }
  private backlogFailing = false;

  /**
   * BEGIN, the statements, COMMIT; rolled back on any failure. With `spend`, a file
   * system found full is worked around: a checkpoint (the WAL's pages moved into the
   * database, so the WAL is written from its start again, in blocks it already has),
   * then the reserve given up; after a commit that needed the reserve, a checkpoint
   * so the WAL's blocks are reused by the next commits.
   */
  private commit(ops: Op[], spend: boolean) {
    if (ops.length === 0) return;
    let first: unknown;
    try {
      return this.run(ops);
    } catch (e) {
      if (!spend || !isFull(e)) throw e;
      first = e;
    }
    if (this.checkpoint()) {
      try {
        return this.run(ops);
      } catch (e) {
        if (!isFull(e)) throw e;
      }
    }
    if (!this.reserve.release(first)) throw first;
    this.run(ops);
    this.checkpoint();
  }

  private run(ops: Op[]) {
    this.db.exec("BEGIN IMMEDIATE");
    try {
      for (const op of ops) op.run();
      this.db.exec("COMMIT");
    } catch (e) {
      this.rollback();
      throw e;
    }
  }

  /** A passive checkpoint (never waits); true when every frame of the WAL reached the database. */
  private checkpoint(): boolean {
    try {
      const r = this.db.query("PRAGMA wal_checkpoint(PASSIVE)").get() as { busy: number; log: number; checkpointed: number } | null;
      return !!r && r.busy === 0 && r.log === r.checkpointed;
    } catch {
      return false;
    }
  }

  /**
   * Ends a failed transaction. After SQLITE_FULL or an I/O error SQLite may have
   * rolled it back already, and then ROLLBACK fails harmlessly ("no transaction is active").
   */
  private rollback() {
    try {
      this.db.exec("ROLLBACK");
    } catch {
      /* already rolled back */
    }
  }

  types(): TypeRow[] {
    return this.db.query("SELECT * FROM types ORDER BY name").all() as TypeRow[];
  }

  objects(): ObjectRow[] {
    return this.db.query("SELECT * FROM objects ORDER BY id").all() as ObjectRow[];
  }

  lastId(): number {
    const m = this.db.query("SELECT value FROM meta WHERE key = 'lastId'").get() as { value: number } | null;
    const o = this.db.query("SELECT max(id) AS id FROM objects").get() as { id: number | null };
    return Math.max(m?.value ?? 0, o.id ?? 0);
  }

  putType(t: TypeRow) {
    const row = { ...t };
    this.record(`type/${t.name}`, () => this.s.putType.run(row as any));
  }

  deleteType(name: string) {
    this.record(`type/${name}`, () => {
      this.s.deleteTypeObjects.run(name);
      this.s.deleteType.run(name);
    });
  }

  insertObject(o: ObjectRow) {
    const row = { ...o };
    this.record(`object/${o.id}/insert`, () => {
      this.s.insertObject.run(row as any);
      this.s.setLastId.run(row.id);
    });
  }

  deleteObject(id: number) {
    this.record(`object/${id}/delete`, () => this.s.deleteObject.run(id));
  }

  setSize(id: number, size: number) {
    this.record(`object/${id}/size`, () => this.s.setSize.run(size, id));
  }

  setLastUsed(id: number, lastUsed: number) {
    this.record(`object/${id}/lastUsed`, () => this.s.setLastUsed.run(lastUsed, id));
  }

  setDoomed(id: number) {
    this.record(`object/${id}/doomed`, () => this.s.setDoomed.run(id));
  }

  finishWrite(id: number, size: number) {
    this.record(`object/${id}/finish`, () => this.s.finishWrite.run(size, id));
  }

  /**
   * Closes the connection for real: prepared statements left unfinalized would make
   * SQLite keep it open (sqlite3_close_v2) until they are garbage-collected, and
   * that late close, checkpointing the WAL under an exclusive lock, would then land
   * in the middle of whoever opens the database next.
   */
  close() {
    try {
      this.flushBacklog();
    } catch (e) {
      this.log?.warn({ err: e }, "file cache: metadata changes not stored at stop (start-up reconciles them)");
    }
    if (this.backlog.size) this.log?.warn({ pending: this.backlog.size }, "file cache: metadata changes not stored at stop (start-up reconciles them)");
    this.finalizeStatements();
    this.db.close();
  }
}

/**
 * A file of `bytes` reserved bytes beside the database. SQLite needs room to commit
 * even a removal (its WAL grows by a frame per page changed), so on a full file system
 * this file is unlinked to let removals be stored, and made again once its file system
 * has room for it twice over. Its bytes are random: a compressing file system
 * (UBIFS, btrfs) cannot make them smaller than they are.
 */
export class Reserve {
  private held = false;
  private shortLogged = false;

  constructor(
    readonly path: string,
    readonly bytes: number,
    private readonly log?: Logger,
  ) {
    let size = -1;
    try {
      size = statSync(path).size;
    } catch {
      /* none yet */
    }
    if (size >= 0 && size === bytes && bytes > 0) this.held = true;
    else if (size >= 0) this.remove();
  }

  /** Whether the reserve is on disk now. */
  get present(): boolean {
    return this.held;
  }

  /** Gives the reserve up for a commit that found the file system full; false when there was none. */
  release(cause: unknown): boolean {
    if (!this.held) return false;
    this.remove();
    this.held = false;
    this.shortLogged = false;
    this.log?.warn({ path: this.path, bytes: this.bytes, code: (cause as { code?: string })?.code }, "file cache: the metadata's file system is full; its reserve is given up so that changes can be stored");
    return true;
  }

  /** Makes the reserve again when its file system has room for it twice over; true when it is there. */
  restore(): boolean {
    if (this.held || this.bytes <= 0) return this.held;
    const free = freeBytes(dirname(this.path));
    if (free === null || free < 2 * this.bytes) {
      if (!this.shortLogged) this.log?.warn({ path: this.path, bytes: this.bytes, free }, "file cache: the metadata's reserve cannot be made now; it is made once there is room");
      this.shortLogged = true;
      return false;
    }
    let fd = -1;
    try {
      fd = openSync(this.path, "w", 0o600);
      // Random bytes (a compressing file system keeps them whole), from the runtime's
      // Web Crypto: node:crypto is not loaded at start for this (docs/performance.md).
      const buf = Buffer.allocUnsafe(this.bytes);
      for (let o = 0; o < buf.length; o += RANDOM_CHUNK) crypto.getRandomValues(buf.subarray(o, o + RANDOM_CHUNK));
      for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
      closeSync(fd);
      fd = -1;
    } catch (e) {
      if (fd >= 0) closeSync(fd);
      this.remove();
      if (!this.shortLogged) this.log?.warn({ err: e, path: this.path, bytes: this.bytes }, "file cache: the metadata's reserve cannot be made now; it is made once there is room");
      this.shortLogged = true;
      return false;
    }
    this.held = true;
    this.log?.info({ path: this.path, bytes: this.bytes }, "file cache: the metadata's reserve is made");
    return true;
  }

  private remove() {
    try {
      unlinkSync(this.path);
    } catch {
      /* already gone */
    }
  }
}
