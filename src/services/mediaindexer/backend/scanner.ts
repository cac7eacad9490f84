// The scanner of local devices: walks a directory tree with asynchronous fs calls,
// compares each directory with its rows (size and mtime: an unchanged file is not
// read again), extracts the metadata of new and changed files a few at a time, and
// writes them in batches (one transaction each). Entries of files and directories
// that are gone are deleted. Between batches of synchronous work it yields to the
// event loop (setImmediate), so the bus keeps answering during a scan.
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../../../core/log";
import { Extractor, ThreadFailed } from "./extractor";
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
const STAT_CHUNK = 64;
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
    const inflight = new Set<Promise<void>>();

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

    const run = async (dir: string, name: string, kind: Kind, mime: string, size: number, mtime: number, oldKind: number | undefined) => {
      const path = join(t.root, dir, name);
      let row: NewMedia;
      const base = { device: t.device, dir, name, size, mtime, url: null };
      try {
        const x = await this.extractor.extract(path, kind, mime, size);
        row = {
          ...base, kind: KIND_CODE[x.kind], title: x.title, duration: x.duration ?? null, thumbnail: x.thumbnail ?? null, genre: x.genre ?? null,
          album: x.album ?? null, artist: x.artist ?? null, width: x.width ?? null, height: x.height ?? null, meta: JSON.stringify(x.meta),
        };
        r.indexed++;
      } catch (e) {
        if (abort.aborted) return; // stopped: the file is read again next time
        r.failed++;
        if (e instanceof ThreadFailed) {
          // Not the file's fault: no row, so the next scan reads it again.
          log.warn({ path, err: e.message }, "media file not read; left for the next scan");
          return;
        }
        log.warn({ path, err: (e as Error).message }, "media file unreadable; skipped");
        row = { ...base, kind: BAD, title: null, duration: null, thumbnail: null, genre: null, album: null, artist: null, width: null, height: null, meta: null };
      }
      if (oldKind !== undefined && oldKind !== BAD) delta[oldKind]!--;
      if (row.kind !== BAD) delta[row.kind]!++;
      pending.push(row);
      if (pending.length >= BATCH || performance.now() - lastFlush > BATCH_MS) flush();
      const now = performance.now();
      if (now - lastProgress >= PROGRESS_MS) {
        lastProgress = now;
        log.info({ device: t.device, files: r.files, indexed: r.indexed, failed: r.failed, filesPerSecond: Math.round((r.files * 1000) / (now - t0)) }, "scan progress");
      }
    };

    const submit = async (...a: Parameters<typeof run>) => {
      while (inflight.size >= this.o.concurrency) await Promise.race(inflight);
      const p: Promise<void> = run(...a).finally(() => inflight.delete(p));
      inflight.add(p);
    };

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
      const known = new Map<string, { id: number; kind: number; size: number; mtime: number }>();
      for (let after = ""; ; ) {
        const page = store.dirPage(t.device, dir, after, PAGE);
        for (const row of page) known.set(row.name, row);
        if (page.length < PAGE) break;
        after = page.at(-1)!.name;
        await slicer.tick();
      }
      const seen = new Set<string>();
      for (let c = 0; c < candidates.length; c += STAT_CHUNK) {
        if (abort.aborted) break;
        const chunk = candidates.slice(c, c + STAT_CHUNK);
        const stats = await Promise.all(chunk.map((f) => stat(join(abs, f.name)).catch(() => null)));
        for (let k = 0; k < chunk.length; k++) {
          const st = stats[k];
          const f = chunk[k]!;
          if (!st || !st.isFile()) continue;
          seen.add(f.name);
          r.files++;
          const mtime = Math.floor(st.mtimeMs);
          const old = known.get(f.name);
          if (old && old.size === st.size && old.mtime === mtime) {
            r.unchanged++;
            continue;
          }
          await submit(dir, f.name, f.kind, f.mime, st.size, mtime, old?.kind);
        }
        await slicer.tick();
      }
      if (abort.aborted) break;
      // Rows of files no longer there.
      const gone: number[] = [];
      for (const [name, row] of known) if (!seen.has(name)) gone.push(row.id);
      if (gone.length) {
        if (t.guard && !(await t.guard())) {
          abort.aborted = true;
          break;
        }
        for (const k of store.deleteIds(gone)) if (k !== BAD) delta[k]!--;
        r.removed += gone.length;
        flush();
      }
    }
    await Promise.all(inflight);
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
