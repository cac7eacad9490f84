// The background thread (extract-worker.ts) seen from the main thread: the scanner
// hands it one file at a time (a few in flight) and gets the extracted fields back;
// WAL checkpoints and libmtp detection go the same way. The thread starts with the
// first request and ends once no request has been in flight for idleMs (its JS heap,
// its database connection and what extraction loaded are freed; the next request
// starts a new thread), or by close(). A watchdog ends a thread that stops
// answering (a parser caught in a loop on a malformed file): the oldest request is
// failed as the culprit, the others as ThreadFailed (to be read again later), and the
// next request starts a new thread.
import type { Extracted } from "./metadata";
import type { Kind } from "./kinds";
import type { RawDevice } from "../../../ffi/libmtp";
import { workerUrl } from "../../../ffi/worker";

export interface ChunkRequest {
  root: string;
  dir: string;
  /**
   * A scan made with a caller's rights: root is the directory the caller opened
   * (/proc/self/fd/N, so a directory swapped for a symlink since is not followed), each
   * file is opened without following a symlink and read only when its owner, group and
   * mode let this identity read it; the others are DENIED (their rows kept, nothing read).
   */
  as?: { uid: number; gid: number; groups: number[] };
  /** Files read at once. */
  concurrency: number;
  /** size and mtime: the file's row, when it has one. */
  /** statOnly: whether the file is still there, nothing read. */
  /** path: where to read the file instead of root/dir/name (a file a scan opened with a caller's rights: /proc/self/fd/N). */
  files: { name: string; kind: Kind; mime: string; size?: number; mtime?: number; statOnly?: boolean; path?: string }[];
}

/**
 * Per file of a chunk: gone (no longer a file), unchanged, read (x), unreadable (err:
 * the file's own fault, recorded so a rescan skips it), not read (an I/O error of the
 * medium: left for the next scan), or the indexer's storage failed (code, path: the
 * thumbnail directory is full or failing; the scan stops).
 */
export const GONE = 0, UNCHANGED = 1, READ = 2, UNREADABLE = 3, NOT_READ = 4, STORE_FAILED = 5, DENIED = 6;
export interface ChunkResult {
  s: number;
  /** STORE_FAILED: errno name and path. */
  code?: string;
  path?: string;
  size?: number;
  /** Modification time, ms. */
  mtime?: number;
  x?: Extracted;
  err?: string;
}

/** The thread died or was ended with the request in flight: not the file's fault. */
export class ThreadFailed extends Error {}

interface Pending {
  resolve(x: unknown): void;
  reject(e: Error): void;
  since: number;
}

/** A request unanswered this long ends the thread. */
export const STALL_MS = 30_000;
/** The thread ends once no request has been in flight this long (docs/performance.md). */
export const IDLE_MS = 30_000;


export class Extractor {
  private worker?: Worker;
  private next = 0;
  private pending = new Map<number, Pending>();
  private watchdog?: ReturnType<typeof setInterval>;
  private idle?: ReturnType<typeof setTimeout>;

  constructor(private thumbnailDir: string, private stallMs = STALL_MS, private idleMs = IDLE_MS) {}

  /** One file's metadata. */
  extract(path: string, kind: Kind, mime: string, size: number): Promise<Extracted> {
    return this.request({ op: "extract", path, kind, mime, size, thumbnailDir: this.thumbnailDir });
  }

  /** Files of one directory: each stat'ed, compared with its row's size and mtime, and read when new or changed. */
  scanChunk(c: ChunkRequest): Promise<ChunkResult[]> {
    return this.request({ op: "scanChunk", ...c, thumbnailDir: this.thumbnailDir });
  }

  /** libmtp's raw device detection (loads the library on first use). */
  mtpDetect(library: string): Promise<RawDevice[]> {
    return this.request({ op: "mtpDetect", library });
  }

  /** Copies the database's WAL into it on the background thread (the main connection never checkpoints). */
  checkpoint(database: string) {
    // In flight like any request, so that the thread does not end under it; its outcome is not awaited.
    this.request({ op: "checkpoint", database }).catch(() => {});
  }

  private request<T>(msg: Record<string, unknown>): Promise<T> {
    const w = this.start();
    if (this.idle) clearTimeout(this.idle);
    this.idle = undefined;
    const id = ++this.next;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (x: unknown) => void, reject, since: performance.now() });
      if (this.pending.size === 1) {
        w.ref();
        this.watchdog ??= setInterval(() => this.check(), Math.min(1000, this.stallMs));
      }
      w.postMessage({ ...msg, id });
    });
  }

  private settled() {
    if (this.pending.size) return;
    this.worker?.unref();
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = undefined;
    if (this.worker && !this.idle) {
      this.idle = setTimeout(() => {
        this.idle = undefined;
        if (this.pending.size || !this.worker) return;
        const w = this.worker;
        this.worker = undefined;
        w.terminate();
      }, this.idleMs);
      this.idle.unref();
    }
  }

  private check() {
    const oldest = this.pending.entries().next().value as [number, Pending] | undefined;
    if (!oldest || performance.now() - oldest[1].since < this.stallMs) return;
    this.pending.delete(oldest[0]);
    oldest[1].reject(new Error(`no answer within ${Math.round(this.stallMs / 1000)} s`));
    this.fail(new ThreadFailed("the background thread was restarted"));
  }

  /** Ends the thread, failing what it held; the next request starts a new one. */
  private fail(e: Error) {
    if (this.idle) clearTimeout(this.idle);
    this.idle = undefined;
    const w = this.worker;
    this.worker = undefined;
    w?.terminate();
    for (const p of this.pending.values()) p.reject(e);
    this.pending.clear();
    this.settled();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(workerUrl("services/mediaindexer/index/extract-worker.ts"));
    w.onmessage = (ev: MessageEvent) => {
      if (this.worker !== w) return;
      const { id, x, err } = ev.data as { id: number; x?: unknown; err?: string };
      const p = this.pending.get(id);
      if (!p) return;
      this.pending.delete(id);
      this.settled();
      if (err !== undefined) p.reject(new Error(err));
      else p.resolve(x!);
    };
    w.onerror = (ev: ErrorEvent) => {
      if (this.worker === w) this.fail(new ThreadFailed(`background thread failed: ${ev.message}`));
    };
    w.unref();
    return (this.worker = w);
  }

  close() {
    this.fail(new ThreadFailed("indexer stopped"));
  }
}
