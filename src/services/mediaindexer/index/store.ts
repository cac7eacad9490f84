// The media database: SQLite (bun:sqlite) in WAL mode. Devices, media entries (one
// row per file, keyed by device, directory and name), permissions. Every batch a
// scan writes is one transaction, so a SIGKILL or a full file system loses at most the
// batch in flight (rolled back whole) and the next scan (incremental: size and mtime)
// picks up where it stopped. Scans queued or running are recorded (scans) until they
// complete, so the next start queues those a crash interrupted again.
import { Database, type Statement } from "bun:sqlite";
import { mkdirSync, chmodSync } from "node:fs";
import { dirname } from "node:path";
import { BAD } from "./kinds";
import { checkSqlite, migrateSqlite, preparedOnUse, type SqliteFormat } from "../../../core/store";

export interface DeviceRow {
  uri: string;
  plugin: string;
  name: string;
  description: string;
  /** Local mount point or directory, or a UPnP server's description URL. */
  root: string;
  available: number;
  lastSeen: number;
  /** Whose rights the device's scans have (JSON uid and groups): the client whose requestMediaScan made it; null: the service's. */
  owner?: string | null;
}

export interface MediaRow {
  id: number;
  device: string;
  /** Directory relative to the device root ("" at the root), and file name: the path on the device. */
  dir: string;
  name: string;
  /** 0 audio, 1 video, 2 image, 9 unreadable (kept so a rescan skips it). */
  kind: number;
  size: number;
  /** Modification time in ms. */
  mtime: number;
  /** Index order: raised each time the entry is (re)written; what list subscriptions follow. */
  seq: number;
  title: string | null;
  duration: number | null;
  thumbnail: string | null;
  genre: string | null;
  album: string | null;
  artist: string | null;
  width: number | null;
  height: number | null;
  /** Remote URL (UPnP); null for local files. */
  url: string | null;
  /** JSON object: the other metadata fields. */
  meta: string | null;
}

export type NewMedia = Omit<MediaRow, "id" | "seq">;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS devices (
  uri TEXT PRIMARY KEY, plugin TEXT NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL,
  root TEXT NOT NULL, available INTEGER NOT NULL DEFAULT 0, lastSeen INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS media (
  id INTEGER PRIMARY KEY, device TEXT NOT NULL, dir TEXT NOT NULL, name TEXT NOT NULL, kind INTEGER NOT NULL,
  size INTEGER NOT NULL, mtime INTEGER NOT NULL, seq INTEGER NOT NULL,
  title TEXT, duration REAL, thumbnail TEXT, genre TEXT, album TEXT, artist TEXT, width INTEGER, height INTEGER,
  url TEXT, meta TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS media_path ON media(device, dir, name);
CREATE INDEX IF NOT EXISTS media_kind_seq ON media(kind, seq);
CREATE INDEX IF NOT EXISTS media_device_kind_seq ON media(device, kind, seq);
CREATE TABLE IF NOT EXISTS permissions (service TEXT PRIMARY KEY, uid INTEGER NOT NULL, granted INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS scans (id INTEGER PRIMARY KEY AUTOINCREMENT, device TEXT NOT NULL, key TEXT NOT NULL, UNIQUE(device, key));
`;

/**
 * The database's format (its user_version; docs/services/mediaindexer.md, "State").
 * Step 1 makes format 1 of a new database or one written before versions
 * (user_version 0): the tables, and devices' owner column in databases made before
 * scans had an owner (their scans keep the service's rights).
 */
export const MEDIA_FORMAT: SqliteFormat = {
  what: "the media database",
  version: 1,
  steps: {
    1: (db) => {
      db.exec(SCHEMA);
      const columns = db.prepare("PRAGMA table_info(devices)");
      try {
        if (!(columns.all() as { name: string }[]).some((c) => c.name === "owner")) db.exec("ALTER TABLE devices ADD COLUMN owner TEXT");
      } finally {
        columns.finalize();
      }
    },
  },
};

/** The index's statements (prepared on first use: core/store.ts, preparedOnUse). */
const STATEMENTS = {
  putDevice:
    "INSERT INTO devices (uri, plugin, name, description, root, available, lastSeen, owner) VALUES ($uri, $plugin, $name, $description, $root, $available, $lastSeen, $owner) " +
      "ON CONFLICT(uri) DO UPDATE SET plugin=excluded.plugin, name=excluded.name, description=excluded.description, root=excluded.root, available=excluded.available, lastSeen=excluded.lastSeen, owner=excluded.owner",
  setAvailable: "UPDATE devices SET available = ?, lastSeen = ? WHERE uri = ?",
  dirPage: "SELECT id, name, kind, size, mtime FROM media WHERE device = ? AND dir = ? AND name > ? ORDER BY name LIMIT ?",
  upsert:
    "INSERT INTO media (device, dir, name, kind, size, mtime, seq, title, duration, thumbnail, genre, album, artist, width, height, url, meta) " +
      "VALUES ($device, $dir, $name, $kind, $size, $mtime, $seq, $title, $duration, $thumbnail, $genre, $album, $artist, $width, $height, $url, $meta) " +
      "ON CONFLICT(device, dir, name) DO UPDATE SET kind=excluded.kind, size=excluded.size, mtime=excluded.mtime, seq=excluded.seq, title=excluded.title, " +
      "duration=excluded.duration, thumbnail=excluded.thumbnail, genre=excluded.genre, album=excluded.album, artist=excluded.artist, width=excluded.width, " +
      "height=excluded.height, url=excluded.url, meta=excluded.meta",
  deleteId: "DELETE FROM media WHERE id = ? RETURNING kind",
  deleteDir: "DELETE FROM media WHERE device = ? AND dir = ? RETURNING kind",
  deleteDevice: "DELETE FROM media WHERE device = ?",
  dirs: "SELECT DISTINCT dir FROM media WHERE device = ?",
  rowsOf: "SELECT id, dir, name, kind, size, mtime, url, title FROM media WHERE device = ?",
  byPath: "SELECT * FROM media WHERE device = ? AND dir = ? AND name = ?",
  knownRow: "SELECT id, name, kind, size, mtime FROM media WHERE device = ? AND dir = ? AND name = ?",
  byUrl: "SELECT device, dir, name FROM media WHERE url = ? LIMIT 1",
  counts: "SELECT device, kind, count(*) AS n FROM media WHERE kind != 9 GROUP BY device, kind",
  listDevice: "SELECT * FROM media WHERE device = ? AND kind = ? AND seq > ? ORDER BY seq LIMIT ?",
  listAvailable: "SELECT * FROM media WHERE kind = ? AND seq > ? AND device IN (SELECT uri FROM devices WHERE available = 1) ORDER BY seq LIMIT ?",
  // The same, without the directories a caller may not read (a JSON array of "<device>/<dir>": the same string is the same directory).
  listDeviceExcept: "SELECT * FROM media WHERE device = ? AND kind = ? AND seq > ? AND (device || '/' || dir) NOT IN (SELECT value FROM json_each(?)) ORDER BY seq LIMIT ?",
  listAvailableExcept:
    "SELECT * FROM media WHERE kind = ? AND seq > ? AND device IN (SELECT uri FROM devices WHERE available = 1) AND (device || '/' || dir) NOT IN (SELECT value FROM json_each(?)) ORDER BY seq LIMIT ?",
  deleteDeviceRow: "DELETE FROM devices WHERE uri = ?",
  allDevices: "SELECT * FROM devices ORDER BY uri",
  maxSeq: "SELECT max(seq) AS s FROM media",
  putPermission: "INSERT OR REPLACE INTO permissions (service, uid, granted) VALUES (?, ?, ?)",
  permissions: "SELECT service, uid, granted FROM permissions ORDER BY service",
  putScan: "INSERT OR REPLACE INTO scans (device, key) VALUES (?, ?) RETURNING id",
  scanDone: "DELETE FROM scans WHERE id = ?",
  scansDoneUpTo: "DELETE FROM scans WHERE device = ? AND id <= ?",
  scans: "SELECT id, device, key FROM scans ORDER BY id",
};

export class MediaStore {
  readonly db: Database;
  private seq: number;
  private s: Record<keyof typeof STATEMENTS, Statement>;
  private finalizeStatements: () => void;

  constructor(readonly file: string) {
    // The database's directory is the service's alone; getMediaDbPermission opens it to named readers (ACL entries).
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    try {
      chmodSync(dirname(file), 0o700);
    } catch {}
    // A database newer than this binary knows (a rollback) is refused before it is
    // opened for writing: StoreTooNew, and the service does not start.
    checkSqlite(file, MEDIA_FORMAT);
    this.db = new Database(file, { create: true, strict: true });
    this.db.exec("PRAGMA busy_timeout = 5000");
    // WAL: a commit is one append, readers (the list methods, a granted reader
    // process) never block the scanner, and a killed process loses nothing committed.
    this.db.exec("PRAGMA journal_mode = WAL");
    this.db.exec("PRAGMA synchronous = NORMAL");
    // Checkpoints (and their fsyncs) run on the metadata thread, never in a write of the main thread.
    this.db.exec("PRAGMA wal_autocheckpoint = 0");
    // Older formats are migrated in one transaction.
    try {
      migrateSqlite(this.db, file, MEDIA_FORMAT);
    } catch (e) {
      this.db.close();
      throw e;
    }
    try {
      chmodSync(file, 0o640);
    } catch {}
    ({ s: this.s, finalize: this.finalizeStatements } = preparedOnUse(this.db, STATEMENTS));
    this.seq = (this.s.maxSeq!.get() as { s: number | null }).s ?? 0;
  }

  /** Runs fn in one transaction. */
  transaction<T>(fn: () => T): T {
    this.db.exec("BEGIN IMMEDIATE");
    try {
      const r = fn();
      this.db.exec("COMMIT");
      return r;
    } catch (e) {
      // SQLite has rolled back already after some failures (SQLITE_FULL, SQLITE_IOERR): the first error is what counts.
      if (this.db.inTransaction)
        try {
          this.db.exec("ROLLBACK");
        } catch {}
      throw e;
    }
  }

  devices(): DeviceRow[] {
    return this.s.allDevices!.all() as DeviceRow[];
  }

  putDevice(d: DeviceRow) {
    this.s.putDevice!.run({ ...d, owner: d.owner ?? null } as any);
  }

  setAvailable(uri: string, available: boolean) {
    this.s.setAvailable!.run(available ? 1 : 0, Date.now(), uri);
  }

  /** A page of a directory's entries by name (keyset), for the scanner's comparison. */
  dirPage(device: string, dir: string, after: string, limit: number) {
    return this.s.dirPage!.all(device, dir, after, limit) as Pick<MediaRow, "id" | "name" | "kind" | "size" | "mtime">[];
  }

  /** Writes entries in one transaction; each gets the next seq. Returns the seqs written. */
  upsertMany(rows: NewMedia[]): number {
    if (!rows.length) return this.seq;
    const before = this.seq;
    try {
      this.transaction(() => {
        for (const r of rows) this.s.upsert!.run({ ...r, seq: ++this.seq } as any);
      });
    } catch (e) {
      this.seq = before;
      throw e;
    }
    return this.seq;
  }

  /** Deletes entries by id in one transaction; returns the kinds deleted. */
  deleteIds(ids: number[]): number[] {
    if (!ids.length) return [];
    return this.transaction(() => ids.map((id) => (this.s.deleteId!.get(id) as { kind: number } | null)?.kind ?? BAD));
  }

  deleteDirs(device: string, dirs: string[]): number[] {
    if (!dirs.length) return [];
    return this.transaction(() => dirs.flatMap((d) => (this.s.deleteDir!.all(device, d) as { kind: number }[]).map((r) => r.kind)));
  }

  deleteDevice(device: string) {
    this.transaction(() => {
      this.s.deleteDevice!.run(device);
      this.s.deleteDeviceRow!.run(device);
    });
  }

  dirsOf(device: string): string[] {
    return (this.s.dirs!.all(device) as { dir: string }[]).map((r) => r.dir);
  }

  /** The identity and change markers of every entry of a device (remote devices: compared after a walk). */
  rowsOf(device: string) {
    return this.s.rowsOf!.all(device) as Pick<MediaRow, "id" | "dir" | "name" | "kind" | "size" | "mtime" | "url" | "title">[];
  }

  /** The entry of a remote item by its URL. */
  byUrl(url: string): Pick<MediaRow, "device" | "dir" | "name"> | undefined {
    return (this.s.byUrl!.get(url) as Pick<MediaRow, "device" | "dir" | "name"> | null) ?? undefined;
  }

  entry(device: string, dir: string, name: string): MediaRow | undefined {
    return (this.s.byPath!.get(device, dir, name) as MediaRow | null) ?? undefined;
  }

  /** The identity and change markers of one entry (the scanner's comparison). */
  knownRow(device: string, dir: string, name: string) {
    return (this.s.knownRow!.get(device, dir, name) as Pick<MediaRow, "id" | "name" | "kind" | "size" | "mtime"> | null) ?? undefined;
  }

  /** Entries of one kind after a seq, in index order: of one device, or of every available device. */
  list(kind: number, after: number, limit: number, device?: string): MediaRow[] {
    if (device !== undefined) return this.s.listDevice!.all(device, kind, after, limit) as MediaRow[];
    return this.s.listAvailable!.all(kind, after, limit) as MediaRow[];
  }

  /** As list(), without the entries of the directories named in hidden ("<device>/<dir>"). */
  listExcept(kind: number, after: number, limit: number, device: string | undefined, hidden: string[]): MediaRow[] {
    if (!hidden.length) return this.list(kind, after, limit, device);
    const h = JSON.stringify(hidden);
    if (device !== undefined) return this.s.listDeviceExcept!.all(device, kind, after, h, limit) as MediaRow[];
    return this.s.listAvailableExcept!.all(kind, after, h, limit) as MediaRow[];
  }

  /** Per device, entries of each kind. */
  counts(): Map<string, number[]> {
    const out = new Map<string, number[]>();
    for (const r of this.s.counts!.all() as { device: string; kind: number; n: number }[]) {
      let c = out.get(r.device);
      if (!c) out.set(r.device, (c = [0, 0, 0]));
      c[r.kind] = r.n;
    }
    return out;
  }

  get lastSeq() {
    return this.seq;
  }

  putPermission(service: string, uid: number) {
    this.s.putPermission!.run(service, uid, Date.now());
  }

  permissions(): { service: string; uid: number; granted: number }[] {
    return this.s.permissions!.all() as any;
  }

  /** Records a scan queued (kept until it completes, so one interrupted by a crash is queued again at the next start); its record id. */
  putScan(device: string, key: string): number {
    return (this.s.putScan!.get(device, key) as { id: number }).id;
  }

  /** A scan completed: its record goes; a whole-device scan's takes every record of the device queued before it. */
  scanDone(device: string, id: number, wholeDevice: boolean) {
    if (wholeDevice) this.s.scansDoneUpTo!.run(device, id);
    else this.s.scanDone!.run(id);
  }

  /** Scans queued or running when the last run ended, oldest first. */
  scans(): { id: number; device: string; key: string }[] {
    return this.s.scans!.all() as { id: number; device: string; key: string }[];
  }

  close() {
    this.finalizeStatements();
    this.db.close();
  }
}
