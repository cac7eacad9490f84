// The scanner of local devices: walks a directory tree with asynchronous fs calls,
// reading each directory as a stream and taking its files a batch at a time
// (batchFiles: what bounds a scan's memory, whatever the size of a directory or a
// tree), compares them with their rows (size and mtime: an unchanged file is not
// read again), extracts the metadata of new and changed files a few at a time, and
// writes them in small transactions. Entries of files and directories that are gone
// are deleted. A failure of the indexer's own storage (a full file system, a quota,
// an I/O error) stops the scan with that error; the transaction in flight is rolled
// back whole. Between batches of synchronous work it yields to the
// event loop (setImmediate), so the bus keeps answering during a scan.
import { opendir } from "node:fs/promises";
import type { Dir } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../../../core/log";
import { PathRefused, type Caller, type CallerFiles } from "../../../core/service";
import { identityOf } from "../../../core/access";
import { closeFd } from "../../../ffi/libc";
import { Extractor, GONE, UNCHANGED, READ, NOT_READ, STORE_FAILED, DENIED, type ChunkResult } from "./extractor";
import { StorageFailure, storageFailure } from "./failure";
import { mediaType, KIND_CODE, BAD, type Kind } from "./kinds";
import type { MediaStore, NewMedia } from "./store";

/** Yields to the event loop once this much time went by without a pause. */
const SLICE_MS = 4;

export class Slicer {
  private last = performance.now();
  /** Yields (setImmediate) when the current slice is used up. */
  async tick(): Promise<void> {
    if (performance.now() - this.last < SLICE_MS) return;
    await new Promise<void>((r) => setImmediate(r));
    this.last = performance.now();
  }
  async yieldNow(): Promise<void> {
    await new Promise<void>((r) => setImmediate(r));
    this.last = performance.now();
  }
}

export interface ScanTarget {
  device: string;
  root: string;
  /** Subtree relative to the root ("" for the whole device). */
  sub: string;
  /** false: that directory's files only (a watch event); true: the whole subtree. */
  recursive: boolean;
  /** Directories not to enter (other devices' roots). */
  skip?: (absDir: string) => boolean;
  /** Directories whose files are compared (default all): a rescan of what inotify does not watch walks the tree but compares the unwatched directories only. */
  only?: (relDir: string) => boolean;
  /** Checked before entries are removed: false when the device is no longer there (the scan stops, entries kept). */
  guard?: () => Promise<boolean>;
  /**
   * Whose rights the walk has (a scan a client asked for, or of a device a client's
   * request made): every directory is opened as this caller (ctx.files: its uid and
   * groups, no symlink on the path), and read through that open directory; a directory
   * it may not read is skipped (its entries kept), and a file is read only when it is
   * not a symlink and its mode lets the caller read it. Without it, the service's own.
   */
  as?: Caller;
}

export interface ScanResult {
  /** Media files found. */
  files: number;
  /** Files read (new or changed). */
  indexed: number;
  unchanged: number;
  removed: number;
  /** Files that could not be read (logged, kept as unreadable so a rescan skips them; those recorded so before and unchanged count too). */
  failed: number;
  /** Subdirectories found (for a non-recursive scan: those the caller may want to scan). */
  subdirs: string[];
  /** Directories below the scanned one that could not be read (their entries kept). */
  unreadableDirs: number;
  /** The most media files of directory listings the scan held in memory at once: at most (BATCHES_IN_FLIGHT + 1) x batchFiles. */
  peakEntries: number;
  ms: number;
  aborted: boolean;
  /**
   * Why the scan stopped before its end: the indexer's storage failed (ENOSPC, EDQUOT,
   * EIO, EROFS on the database or the thumbnails; the batch in flight rolled back), or
   * the scanned directory itself could not be read.
   */
  error?: StorageFailure;
}

export interface ScannerHooks {
  /** Entries were written or deleted: per kind (audio, video, image), how the device's counts changed. */
  changed(device: string, delta: number[], wrote: boolean): void;
}

export interface ScannerOptions {
  store: MediaStore;
  log: Logger;
  thumbnailDir: string;
  concurrency: number;
  /** Files of one directory taken at a time (read from the directory as a stream): what bounds a scan's memory. */
  batchFiles: number;
  hooks: ScannerHooks;
  /** Opens directories with a caller's rights (scans with `as`); without it such scans read nothing. */
  files?: CallerFiles;
}

/** A directory opened with a caller's rights, held open while batches of its files are read through it. */
interface DirLease {
  fd: number;
  refs: number;
}

const PATH_ERRNO: Record<string, string> = { missing: "ENOENT", notdir: "ENOTDIR", denied: "EACCES", symlink: "ELOOP", isdir: "EISDIR", nospace: "ENOSPC" };

const BATCH = 64;
/** Rows written between two WAL checkpoints. */
const CHECKPOINT_ROWS = 2000;
const BATCH_MS = 100;
/** A long scan logs its progress (files found, files/s) this often. */
const PROGRESS_MS = 5000;
/** Files per request to the background thread (stat, compare, read). */
const CHUNK = 32;
/** Chunks sent to the background thread and not answered yet. */
const CHUNKS_IN_FLIGHT = 3;
/** Batches of files (of one or several directories) whose chunks may be in progress at once. */
const BATCHES_IN_FLIGHT = 4;
/** Directory entries read from the kernel per call (opendir's buffer). */
const DIR_BUFFER = 128;

const rel = (dir: string, name: string) => (dir ? `${dir}/${name}` : name);

export class Scanner {
  /** The background thread (metadata, WAL checkpoints, libmtp detection). */
  readonly extractor: Extractor;
  constructor(private o: ScannerOptions) {
    this.extractor = new Extractor(o.thumbnailDir);
  }

  private unchecked = 0;
  /** Asks the metadata thread to checkpoint the WAL. */
  checkpoint() {
    this.unchecked = 0;
    this.extractor.checkpoint(this.o.store.file);
  }

  close() {
    this.extractor.close();
  }

  /** Opens a directory with the caller's rights (no symlink on the path) and reads it through that open directory. */
  private async openDirAs(as: Caller, abs: string): Promise<{ handle: Dir; lease: DirLease }> {
    const files = this.o.files;
    if (!files) throw Object.assign(new Error(`${abs}: no way to open it with the caller's rights`), { code: "EACCES" });
    let fd: number;
    try {
      fd = await files.open(as, abs, { read: true, directory: true });
    } catch (e) {
      const code = e instanceof PathRefused ? PATH_ERRNO[e.reason] ?? "EACCES" : "EACCES";
      throw Object.assign(new Error((e as Error).message), { code });
    }
    try {
      return { handle: await opendir(`/proc/self/fd/${fd}`, { bufferSize: DIR_BUFFER }), lease: { fd, refs: 1 } };
    } catch (e) {
      closeFd(fd);
      throw e;
    }
  }

  async scan(t: ScanTarget, abort: { aborted: boolean } = { aborted: false }): Promise<ScanResult> {
    const { store, log } = this.o;
    const t0 = performance.now();
    const slicer = new Slicer();
    const r: ScanResult = { files: 0, indexed: 0, unchanged: 0, removed: 0, failed: 0, subdirs: [], unreadableDirs: 0, peakEntries: 0, ms: 0, aborted: false };
    const pending: NewMedia[] = [];
    const delta = [0, 0, 0];
    let lastFlush = performance.now();
    let lastProgress = t0;
    const batchFiles = Math.max(1, this.o.batchFiles);
    const who = t.as ? identityOf(t.as) : undefined;
    const unlease = (l: DirLease | undefined) => {
      if (l && --l.refs === 0) closeFd(l.fd);
    };
    /** Where the files of a directory are read: through the directory the caller opened, or by path. */
    const srcOf = (dir: string, l: DirLease | undefined) => (l ? { root: `/proc/self/fd/${l.fd}`, dir: "" } : { root: t.root, dir });
    /** Stops the walk: the device went away, or the storage failed (r.error). */
    const stopped = () => abort.aborted || r.error !== undefined;
    /** The indexer's storage failed: the scan stops; what it wrote before stays (whole entries), the batch in flight was rolled back. */
    const storageFailed = (e: unknown, path: string, what: string) => {
      const f = storageFailure(e, path, what);
      if (!f) throw e;
      if (!r.error) {
        r.error = f;
        log.error({ device: t.device, errno: f.code, path: f.path, err: (e as Error)?.message }, `scan stopped: ${what} failed`);
      }
    };
    /** Writes rows and deletions in one transaction; a storage failure rolls it back whole and stops the scan. */
    const write = (fn: () => void) => {
      if (r.error) return;
      try {
        fn();
      } catch (e) {
        pending.length = 0;
        delta.fill(0);
        storageFailed(e, store.file, "writing the media database");
      }
    };

    const flush = () => {
      if (!pending.length && !delta.some((d) => d)) return;
      write(() => {
        const rows = pending.slice();
        store.upsertMany(rows);
        pending.length = 0;
        this.unchecked += rows.length;
        if (this.unchecked >= CHECKPOINT_ROWS) this.checkpoint();
        const d = delta.splice(0, 3, 0, 0, 0);
        this.o.hooks.changed(t.device, d, rows.length > 0);
      });
      lastFlush = performance.now();
    };

    // Chunks handed to the background thread, a few at a time (it reads `concurrency` files of them at once).
    let inflight = 0;
    const waiting: (() => void)[] = [];
    const acquire = async () => {
      while (inflight >= CHUNKS_IN_FLIGHT) await new Promise<void>((res) => waiting.push(res));
      inflight++;
    };
    const release = () => {
      inflight--;
      waiting.shift()?.();
    };

    type Known = { id: number; kind: number; size: number; mtime: number };
    type Candidate = { name: string; kind: Kind; mime: string };
    let held = 0;
    const hold = (n: number) => {
      held += n;
      if (held > r.peakEntries) r.peakEntries = held;
    };

    /** One batch of a directory's media files: compared and read in chunks on the background thread; `seen` collects the names still there. */
    const processBatch = async (dir: string, candidates: Candidate[], known: Map<string, Known>, seen: Set<string> | undefined, src: { root: string; dir: string }) => {
      const chunks: Candidate[][] = [];
      for (let c = 0; c < candidates.length; c += CHUNK) chunks.push(candidates.slice(c, c + CHUNK));
      await Promise.all(
        chunks.map(async (chunk) => {
          await acquire();
          try {
            if (stopped()) return;
            let res: ChunkResult[];
            try {
              res = await this.extractor.scanChunk({
                ...src, as: who, concurrency: this.o.concurrency,
                files: chunk.map((f) => ({ name: f.name, kind: f.kind, mime: f.mime, size: known.get(f.name)?.size, mtime: known.get(f.name)?.mtime })),
              });
            } catch (e) {
              // The thread failed or stopped: not the files' fault. Their rows stay and the next scan reads them.
              for (const f of chunk) seen?.add(f.name);
              if (!stopped()) {
                r.failed += chunk.length;
                log.warn({ dir: join(t.root, dir), files: chunk.length, err: (e as Error).message }, "media files not read; left for the next scan");
              }
              return;
            }
            for (let k = 0; k < chunk.length; k++) {
              const f = chunk[k]!;
              const x = res[k]!;
              if (x.s === GONE) continue;
              seen?.add(f.name);
              // Not for this caller (a symlink, or a file its mode does not let it read): its row is kept, nothing read or counted.
              if (x.s === DENIED) continue;
              r.files++;
              if (x.s === UNCHANGED) {
                // A file recorded as unreadable and unchanged since is still unreadable.
                if (known.get(f.name)?.kind === BAD) r.failed++;
                else r.unchanged++;
                continue;
              }
              if (x.s === STORE_FAILED) {
                const e = Object.assign(new Error(x.err ?? x.code), { code: x.code, path: x.path });
                storageFailed(e, x.path ?? this.o.thumbnailDir, "writing a thumbnail");
                return;
              }
              if (x.s === NOT_READ) {
                r.failed++;
                log.warn({ path: join(t.root, dir, f.name), err: x.err }, "media file not read (I/O error); left for the next scan");
                continue;
              }
              const base = { device: t.device, dir, name: f.name, size: x.size!, mtime: x.mtime!, url: null };
              let row: NewMedia;
              if (x.s === READ) {
                const m = x.x!;
                row = {
                  ...base, kind: KIND_CODE[m.kind], title: m.title, duration: m.duration ?? null, thumbnail: m.thumbnail ?? null, genre: m.genre ?? null,
                  album: m.album ?? null, artist: m.artist ?? null, width: m.width ?? null, height: m.height ?? null, meta: JSON.stringify(m.meta),
                };
                r.indexed++;
              } else {
                r.failed++;
                log.warn({ path: join(t.root, dir, f.name), err: x.err }, "media file unreadable; skipped");
                row = { ...base, kind: BAD, title: null, duration: null, thumbnail: null, genre: null, album: null, artist: null, width: null, height: null, meta: null };
              }
              const oldKind = known.get(f.name)?.kind;
              if (oldKind !== undefined && oldKind !== BAD) delta[oldKind]!--;
              if (row.kind !== BAD) delta[row.kind]!++;
              pending.push(row);
              if (pending.length >= BATCH || performance.now() - lastFlush > BATCH_MS) {
                flush();
                if (r.error) return;
                await slicer.tick();
              }
            }
            const now = performance.now();
            if (now - lastProgress >= PROGRESS_MS) {
              lastProgress = now;
              log.info({ device: t.device, files: r.files, indexed: r.indexed, failed: r.failed, filesPerSecond: Math.round((r.files * 1000) / (now - t0)) }, "scan progress");
            }
          } finally {
            release();
          }
        }),
      );
    };

    /** Deletes rows of files gone; false when the device is no longer there (guard). */
    const removeRows = async (ids: number[]) => {
      if (!ids.length || stopped()) return true;
      if (t.guard && !(await t.guard())) {
        abort.aborted = true;
        return false;
      }
      write(() => {
        for (const k of store.deleteIds(ids)) if (k !== BAD) delta[k]!--;
        r.removed += ids.length;
      });
      flush();
      return true;
    };

    /**
     * Rows of a directory whose files are gone. A directory read in one batch: its rows
     * not seen. A larger one (its names are not all held): its rows, a page at a time,
     * asked of the background thread (a stat each).
     */
    const removeGone = async (dir: string, seen: Set<string> | undefined, src: { root: string; dir: string }) => {
      for (let after = ""; !stopped(); ) {
        const page = store.dirPage(t.device, dir, after, batchFiles);
        {
          let gone: number[] = [];
          if (seen) gone = page.filter((row) => !seen.has(row.name)).map((row) => row.id);
          else {
            for (let c = 0; c < page.length && !stopped(); c += CHUNK) {
              const part = page.slice(c, c + CHUNK);
              let res: ChunkResult[];
              try {
                // Known size and mtime: an existing file answers UNCHANGED (or READ when it changed since; it is left to the next scan).
                res = await this.extractor.scanChunk({
                  ...src, as: who, concurrency: this.o.concurrency,
                  files: part.map((row) => ({ name: row.name, kind: "audio" as Kind, mime: "", size: row.size, mtime: row.mtime, statOnly: true })),
                });
              } catch {
                return;
              }
              part.forEach((row, k) => res[k]!.s === GONE && gone.push(row.id));
            }
          }
          if (!(await removeRows(gone))) return;
        }
        if (page.length < batchFiles) return;
        after = page.at(-1)!.name;
        await slicer.tick();
      }
    };

    const batches = new Set<Promise<void>>();
    /** An unexpected error of a batch (not a storage failure): thrown by the scan once the batches in flight are done. */
    let unexpected: unknown;
    /** Starts a batch; waits while BATCHES_IN_FLIGHT are in progress (what bounds the entries held). */
    const launch = async (work: () => Promise<void>, size: number, lease: DirLease | undefined) => {
      if (lease) lease.refs++;
      const task: Promise<void> = work().catch((e) => {
        unexpected ??= e;
        abort.aborted = true;
      }).finally(() => {
        batches.delete(task);
        hold(-size);
        unlease(lease);
      });
      batches.add(task);
      while (batches.size >= BATCHES_IN_FLIGHT) await Promise.race(batches);
    };

    /** A directory's rows by name, for a batch of its files (a directory larger than one batch). */
    const knownOf = (dir: string, names: Candidate[]) => {
      const known = new Map<string, Known>();
      for (const f of names) {
        const row = store.knownRow(t.device, dir, f.name);
        if (row) known.set(f.name, row);
      }
      return known;
    };

    const visited = new Set<string>();
    const unreadable: string[] = [];
    const stack = [t.sub];
    while (stack.length) {
      if (stopped()) break;
      const dir = stack.pop()!;
      visited.add(dir);
      const abs = join(t.root, dir);
      const compare = !t.only || t.only(dir);
      let handle: Dir | undefined;
      let lease: DirLease | undefined;
      try {
        if (t.as) ({ handle, lease } = await this.openDirAs(t.as, abs));
        else handle = await opendir(abs, { bufferSize: DIR_BUFFER });
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== "ENOENT" && code !== "ENOTDIR") {
          log.warn({ dir: abs, err: (e as Error).message }, "directory unreadable; its entries are kept");
          unreadable.push(dir);
          if (dir === t.sub) r.error = new StorageFailure(code ?? "EIO", abs, "reading the directory", e);
          else r.unreadableDirs++;
          continue;
        }
      }
      try {
        const src = srcOf(dir, lease);
        // The directory's files, a batch at a time as the directory is read.
        let batch: Candidate[] = [];
        let batchesOfDir = 0;
        const dirBatches: Promise<void>[] = [];
        const startBatch = async (last: boolean) => {
          const files = batch;
          batch = [];
          batchesOfDir++;
          if (last && batchesOfDir === 1) {
            // The whole directory in one batch: its rows at once (when they fit in a batch too), and the names seen decide what is gone.
            const page = store.dirPage(t.device, dir, "", batchFiles + 1);
            if (page.length <= batchFiles) {
              const known = new Map<string, Known>();
              for (const row of page) known.set(row.name, row);
              const seen = new Set<string>();
              await launch(async () => {
                await processBatch(dir, files, known, seen, src);
                await removeGone(dir, seen, src);
              }, files.length, lease);
              return;
            }
            await launch(async () => {
              await processBatch(dir, files, knownOf(dir, files), undefined, src);
              await removeGone(dir, undefined, src);
            }, files.length, lease);
            return;
          }
          const known = knownOf(dir, files);
          let done!: () => void;
          dirBatches.push(new Promise<void>((res) => (done = res)));
          await launch(() => processBatch(dir, files, known, undefined, src).finally(done), files.length, lease);
        };
        let i = 0;
        try {
          if (handle)
            for await (const ent of handle) {
              if ((++i & 255) === 0) await slicer.tick();
              if (stopped()) break;
              const name = ent.name;
              if (name.startsWith(".")) continue;
              if (ent.isDirectory()) {
                const child = rel(dir, name);
                if (t.skip?.(join(t.root, child))) continue;
                if (t.recursive) stack.push(child);
                else r.subdirs.push(child);
                continue;
              }
              if (!compare || (!ent.isFile() && !ent.isSymbolicLink())) continue;
              const type = mediaType(name);
              if (!type) continue;
              batch.push({ name, ...type });
              hold(1);
              if (batch.length >= batchFiles) await startBatch(false);
            }
        } catch (e) {
          // The directory failed while being read (an I/O error of the medium): what was read is kept, nothing is removed.
          log.warn({ dir: abs, err: (e as Error).message }, "directory read failed; its entries are kept");
          unreadable.push(dir);
          if (dir === t.sub) r.error ??= new StorageFailure((e as NodeJS.ErrnoException).code ?? "EIO", abs, "reading the directory", e);
          else r.unreadableDirs++;
          hold(-batch.length);
          batch = [];
          continue;
        }
        if (stopped()) {
          hold(-batch.length);
          break;
        }
        if (!compare) continue;
        if (batchesOfDir === 0) await startBatch(true);
        else {
          if (batch.length) await startBatch(false);
          // A directory of several batches: when they are done, its rows of files gone, a page at a time.
          const all = dirBatches.splice(0);
          await launch(async () => {
            await Promise.all(all);
            await removeGone(dir, undefined, src);
          }, 0, lease);
        }
        await slicer.tick();
      } finally {
        unlease(lease);
      }
    }
    await Promise.all(batches);
    if (unexpected) throw unexpected;
    if (!stopped() && t.recursive) {
      // Directories below the subtree that the walk did not meet: gone.
      const under = (d: string) => t.sub === "" || d === t.sub || d.startsWith(`${t.sub}/`);
      const kept = (d: string) => unreadable.some((u) => d === u || d.startsWith(`${u}/`));
      const goneDirs = store.dirsOf(t.device).filter((d) => under(d) && !visited.has(d) && !kept(d));
      if (goneDirs.length && (!t.guard || (await t.guard())))
        write(() => {
          const kinds = store.deleteDirs(t.device, goneDirs);
          for (const k of kinds) if (k !== BAD) delta[k]!--;
          r.removed += kinds.length;
        });
    }
    flush();
    if (this.unchecked) this.checkpoint();
    r.aborted = abort.aborted;
    r.ms = performance.now() - t0;
    return r;
  }
}
