// The metadata store: SQLite (bun:sqlite) in WAL mode. Every change of the cache is
// one transaction, so a SIGKILL leaves either the state before it or after it;
// files on disk are reconciled against these rows at start (cache.ts).
// Why SQLite: docs/decisions/filecache.md, "Metadata store".
import { Database, type Statement } from "bun:sqlite";

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

export class MetadataStore {
  private db: Database;
  private depth = 0;
  private s: {
    putType: Statement;
    deleteType: Statement;
    deleteTypeObjects: Statement;
    insertObject: Statement;
    deleteObject: Statement;
    setSize: Statement;
    setLastUsed: Statement;
    setDoomed: Statement;
    finishWrite: Statement;
    setLastId: Statement;
  };

  constructor(readonly file: string) {
    this.db = new Database(file, { create: true, strict: true });
    try {
      this.s = this.setUp();
    } catch (e) {
      this.db.close();
      throw e;
    }
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
    this.db.exec(SCHEMA);
    // Databases made before owners were recorded: the column is added, empty (NULL: root's).
    for (const table of ["types", "objects"]) {
      const cols = this.db.query(`PRAGMA table_info(${table})`).all() as { name: string }[];
      if (!cols.some((c) => c.name === "owner")) this.db.exec(`ALTER TABLE ${table} ADD COLUMN owner INTEGER`);
    }
    const q = (sql: string) => this.db.prepare(sql);
    return {
      putType: q(
        "INSERT OR REPLACE INTO types (name, lo, hi, size, cost, lifetime, dirType, owner) VALUES ($name, $lo, $hi, $size, $cost, $lifetime, $dirType, $owner)",
      ),
      deleteType: q("DELETE FROM types WHERE name = ?"),
      deleteTypeObjects: q("DELETE FROM objects WHERE type = ?"),
      insertObject: q(
        "INSERT INTO objects (id, type, fileName, ext, size, cost, lifetime, lastUsed, writing, doomed, owner) VALUES ($id, $type, $fileName, $ext, $size, $cost, $lifetime, $lastUsed, $writing, $doomed, $owner)",
      ),
      deleteObject: q("DELETE FROM objects WHERE id = ?"),
      setSize: q("UPDATE objects SET size = ? WHERE id = ?"),
      setLastUsed: q("UPDATE objects SET lastUsed = ? WHERE id = ?"),
      setDoomed: q("UPDATE objects SET doomed = 1 WHERE id = ?"),
      finishWrite: q("UPDATE objects SET writing = 0, size = ? WHERE id = ?"),
      setLastId: q("INSERT OR REPLACE INTO meta (key, value) VALUES ('lastId', ?)"),
    };
  }

  /**
   * Runs fn in one transaction (nested calls join the outer one): committed when fn
   * returns, rolled back when fn or the commit fails (a full file system fails the
   * commit: SQLITE_FULL), so a throw means nothing of it is stored.
   */
  transaction<T>(fn: () => T): T {
    if (this.depth > 0) return fn();
    this.db.exec("BEGIN IMMEDIATE");
    this.depth++;
    try {
      const r = fn();
      this.db.exec("COMMIT");
      return r;
    } catch (e) {
      this.rollback();
      throw e;
    } finally {
      this.depth--;
    }
  }

  /**
   * Commits what fn did even when it throws (evictions already made stay made). When
   * the commit itself fails the transaction is rolled back and the commit's error
   * thrown (or fn's, when fn threw first).
   */
  transactionKeeping<T>(fn: () => T): T {
    if (this.depth > 0) return fn();
    this.db.exec("BEGIN IMMEDIATE");
    this.depth++;
    let returned = false;
    try {
      const r = fn();
      returned = true;
      return r;
    } finally {
      this.depth--;
      try {
        this.db.exec("COMMIT");
      } catch (e) {
        this.rollback();
        // Thrown in place of fn's result; when fn threw first, its error goes on instead.
        if (returned) throw e;
      }
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
    this.s.putType.run(t as any);
  }

  deleteType(name: string) {
    this.transaction(() => {
      this.s.deleteTypeObjects.run(name);
      this.s.deleteType.run(name);
    });
  }

  insertObject(o: ObjectRow) {
    this.transaction(() => {
      this.s.insertObject.run(o as any);
      this.s.setLastId.run(o.id);
    });
  }

  deleteObject(id: number) {
    this.s.deleteObject.run(id);
  }

  setSize(id: number, size: number) {
    this.s.setSize.run(size, id);
  }

  setLastUsed(id: number, lastUsed: number) {
    this.s.setLastUsed.run(lastUsed, id);
  }

  setDoomed(id: number) {
    this.s.setDoomed.run(id);
  }

  finishWrite(id: number, size: number) {
    this.s.finishWrite.run(size, id);
  }

  /**
   * Closes the connection for real: prepared statements left unfinalized would make
   * SQLite keep it open (sqlite3_close_v2) until they are garbage-collected, and
   * that late close, checkpointing the WAL under an exclusive lock, would then land
   * in the middle of whoever opens the database next.
   */
  close() {
    for (const st of Object.values(this.s)) st.finalize();
    this.db.close();
  }
}
