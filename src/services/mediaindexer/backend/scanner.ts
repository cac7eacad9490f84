// The scanner of local devices: walks a directory tree with asynchronous fs calls,
// compares each directory with its rows (size and mtime: an unchanged file is not
// read again), extracts the metadata of new and changed files a few at a time, and
// writes them in batches (one transaction each). Entries of files and directories
// that are gone are deleted. Between batches of synchronous work it yields to the
// event loop (setImmediate), so the bus keeps answering during a scan.
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../../../core/log";
import { Extractor, GONE, UNCHANGED, READ, type ChunkResult } from "./extractor";
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
  /** Checked before entries are removed: false when the device is no longer there (the scan stops, entries kept). */
  guard?: () => Promise<boolean>;
}

export interface ScanResult {
  /** Media files found. */
  files: number;
  /** Files read (new or changed). */
  indexed: number;
  unchanged: number;
  removed: number;
  /** Files that could not be read (logged, kept as unreadable so a rescan skips them). */
  failed: number;
  /** Subdirectories found (for a non-recursive scan: those the caller may want to scan). */
  subdirs: string[];
  ms: number;
  aborted: boolean;
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
  hooks: ScannerHooks;
}

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
/** Directories whose chunks may be in progress at once. */
const DIRS_IN_FLIGHT = 4;
const PAGE = 2000;

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

  async scan(t: ScanTarget, abort: { aborted: boolean } = { aborted: false }): Promise<ScanResult> {
    const { store, log } = this.o;
    const t0 = performance.now();
    const slicer = new Slicer();
    const r: ScanResult = { files: 0, indexed: 0, unchanged: 0, removed: 0, failed: 0, subdirs: [], ms: 0, aborted: false };
    const pending: NewMedia[] = [];
    const delta = [0, 0, 0];
    let lastFlush = performance.now();
    let lastProgress = t0;

    const flush = () => {
      if (!pending.length && !delta.some((d) => d)) return;
      const rows = pending.splice(0);
      store.upsertMany(rows);
      this.unchecked += rows.length;
      if (this.unchecked >= CHECKPOINT_ROWS) this.checkpoint();
      const d = delta.splice(0, 3, 0, 0, 0);
      this.o.hooks.changed(t.device, d, rows.length > 0);
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
    /** One directory: its media files compared and read in chunks on the background thread, then the rows of files gone removed. */
    const processDir = async (dir: string, candidates: { name: string; kind: Kind; mime: string }[], known: Map<string, Known>) => {
      const seen = new Set<string>();
      const chunks: (typeof candidates)[] = [];
      for (let c = 0; c < candidates.length; c += CHUNK) chunks.push(candidates.slice(c, c + CHUNK));
      await Promise.all(
        chunks.map(async (chunk) => {
          await acquire();
          try {
            if (abort.aborted) return;
            let res: ChunkResult[];
            try {
              res = await this.extractor.scanChunk({
                root: t.root, dir, concurrency: this.o.concurrency,
                files: chunk.map((f) => ({ name: f.name, kind: f.kind, mime: f.mime, size: known.get(f.name)?.size, mtime: known.get(f.name)?.mtime })),
              });
            } catch (e) {
              // The thread failed or stopped: not the files' fault. Their rows stay and the next scan reads them.
              for (const f of chunk) seen.add(f.name);
              if (!abort.aborted) {
                r.failed += chunk.length;
                log.warn({ dir: join(t.root, dir), files: chunk.length, err: (e as Error).message }, "media files not read; left for the next scan");
              }
              return;
            }
            for (let k = 0; k < chunk.length; k++) {
              const f = chunk[k]!;
              const x = res[k]!;
              if (x.s === GONE) continue;
              seen.add(f.name);
              r.files++;
              if (x.s === UNCHANGED) {
                r.unchanged++;
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
      if (abort.aborted) return;
      // Rows of files no longer there.
      const gone: number[] = [];
      for (const [name, row] of known) if (!seen.has(name)) gone.push(row.id);
      if (gone.length) {
        if (t.guard && !(await t.guard())) {
          abort.aborted = true;
          return;
        }
        for (const k of store.deleteIds(gone)) if (k !== BAD) delta[k]!--;
        r.removed += gone.length;
        flush();
      }
    };

    const dirs = new Set<Promise<void>>();
    const visited = new Set<string>();
    const unreadable: string[] = [];
    const stack = [t.sub];
    while (stack.length) {
      if (abort.aborted) break;
      const dir = stack.pop()!;
      visited.add(dir);
      const abs = join(t.root, dir);
      let ents: import("node:fs").Dirent[];
      try {
        ents = await readdir(abs, { withFileTypes: true });
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== "ENOENT" && code !== "ENOTDIR") {
          log.warn({ dir: abs, err: (e as Error).message }, "directory unreadable; its entries are kept");
          unreadable.push(dir);
          continue;
        }
        ents = [];
      }
      const candidates: { name: string; kind: Kind; mime: string }[] = [];
      let i = 0;
      for (const ent of ents) {
        if ((++i & 255) === 0) await slicer.tick();
        const name = ent.name;
        if (name.startsWith(".")) continue;
        if (ent.isDirectory()) {
          const child = rel(dir, name);
          if (t.skip?.(join(t.root, child))) continue;
          if (t.recursive) stack.push(child);
          else r.subdirs.push(child);
          continue;
        }
        if (!ent.isFile() && !ent.isSymbolicLink()) continue;
        const type = mediaType(name);
        if (type) candidates.push({ name, ...type });
      }
      // The directory's rows, a page at a time.
      const known = new Map<string, Known>();
      for (let after = ""; ; ) {
        const page = store.dirPage(t.device, dir, after, PAGE);
        for (const row of page) known.set(row.name, row);
        if (page.length < PAGE) break;
        after = page.at(-1)!.name;
        await slicer.tick();
      }
      const task: Promise<void> = processDir(dir, candidates, known).finally(() => dirs.delete(task));
      dirs.add(task);
      // A few directories in progress keep the background thread busy without holding the whole tree in memory.
      while (dirs.size >= DIRS_IN_FLIGHT) await Promise.race(dirs);
      await slicer.tick();
    }
    await Promise.all(dirs);
    if (!abort.aborted && t.recursive) {
      // Directories below the subtree that the walk did not meet: gone.
      const under = (d: string) => t.sub === "" || d === t.sub || d.startsWith(`${t.sub}/`);
      const kept = (d: string) => unreadable.some((u) => d.startsWith(`${u}/`));
      const goneDirs = store.dirsOf(t.device).filter((d) => under(d) && !visited.has(d) && !kept(d));
      if (goneDirs.length && (!t.guard || (await t.guard()))) {
        const kinds = store.deleteDirs(t.device, goneDirs);
        for (const k of kinds) if (k !== BAD) delta[k]!--;
        r.removed += kinds.length;
      }
    }
    flush();
    if (this.unchecked) this.checkpoint();
    r.aborted = abort.aborted;
    r.ms = performance.now() - t0;
    return r;
  }
}
