// Metadata extraction on its own thread (extract-worker.ts): the scanner hands it
// one file at a time (a few in flight) and gets the extracted fields back. The
// thread starts with the first request and is ended by close().
import type { Extracted } from "./metadata";
import type { Kind } from "./kinds";
import type { RawDevice } from "../../../ffi/libmtp";

interface Pending {
  resolve(x: unknown): void;
  reject(e: Error): void;
}

/**
 * The worker's entry point. The compiled binary carries it as an entry point of its
 * own (scripts/build.ts), addressed relative to src/; from source it sits beside this file.
 */
function workerUrl(): string {
  if (Bun.main.startsWith("/$bunfs/") || Bun.main.startsWith("B:/~BUN/")) return "./services/mediaindexer/backend/extract-worker.ts";
  return new URL("./extract-worker.ts", import.meta.url).href;
}

export class Extractor {
  private worker?: Worker;
  private next = 0;
  private pending = new Map<number, Pending>();

  constructor(private thumbnailDir: string) {}

  extract(path: string, kind: Kind, mime: string, size: number): Promise<Extracted> {
    return this.request({ op: "extract", path, kind, mime, size, thumbnailDir: this.thumbnailDir });
  }

  /** libmtp's raw device detection (loads the library on first use). */
  mtpDetect(library: string): Promise<RawDevice[]> {
    return this.request({ op: "mtpDetect", library });
  }

  private request<T>(msg: Record<string, unknown>): Promise<T> {
    const w = this.start();
    const id = ++this.next;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (x: unknown) => void, reject });
      if (this.pending.size === 1) w.ref();
      w.postMessage({ ...msg, id });
    });
  }

  /** Copies the database's WAL into it on the metadata thread (the main connection never checkpoints). */
  checkpoint(database: string) {
    this.start().postMessage({ op: "checkpoint", database });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(workerUrl());
    w.onmessage = (ev: MessageEvent) => {
      const { id, x, err } = ev.data as { id: number; x?: unknown; err?: string };
      const p = this.pending.get(id);
      if (!p) return;
      this.pending.delete(id);
      if (!this.pending.size) w.unref();
      if (err !== undefined) p.reject(new Error(err));
      else p.resolve(x!);
    };
    w.onerror = (ev: ErrorEvent) => {
      // The thread died: fail what it held; the next request starts a new one.
      const e = new Error(`metadata thread failed: ${ev.message}`);
      for (const p of this.pending.values()) p.reject(e);
      this.pending.clear();
      if (this.worker === w) this.worker = undefined;
      w.terminate();
    };
    w.unref();
    return (this.worker = w);
  }

  close() {
    const e = new Error("indexer stopped");
    for (const p of this.pending.values()) p.reject(e);
    this.pending.clear();
    this.worker?.terminate();
    this.worker = undefined;
  }
}
