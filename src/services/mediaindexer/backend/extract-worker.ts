// The media indexer's background thread: compares files with their rows (stat),
// parses the new and changed ones (tags, EXIF, container headers) and writes cover
// art thumbnails, off the main thread, so a scan never holds the event loop that
// answers the bus; it also checkpoints the database's WAL and runs libmtp's USB
// device detection (both can take milliseconds). Requests and answers are plain
// objects (extractor.ts).
import { Database } from "bun:sqlite";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { extract, ThumbnailWriteFailed } from "./metadata";
import { GONE, UNCHANGED, READ, UNREADABLE, NOT_READ, STORE_FAILED, type ChunkRequest, type ChunkResult } from "./extractor";
import { niceThread } from "../../../ffi/sched";
import { loadLibmtp, detectRawDevices } from "../../../ffi/libmtp";

declare const self: Worker;

// Background work: the thread gives way to the main thread whenever both want a core.
try {
  niceThread(10);
} catch {}

let db: Database | undefined;

/** Stats each file of the chunk; reads those that are new or changed (a few at a time). */
async function scanChunk(m: ChunkRequest & { thumbnailDir: string }): Promise<ChunkResult[]> {
  const out: ChunkResult[] = new Array(m.files.length);
  let next = 0;
  const lane = async () => {
    while (next < m.files.length) {
      const k = next++;
      const f = m.files[k]!;
      const path = join(m.root, m.dir, f.name);
      let size: number, mtime: number;
      try {
        const st = await stat(path);
        if (!st.isFile()) {
          out[k] = { s: GONE };
          continue;
        }
        size = st.size;
        mtime = Math.floor(st.mtimeMs);
      } catch {
        out[k] = { s: GONE };
        continue;
      }
      if (f.statOnly || (f.size === size && f.mtime === mtime)) {
        out[k] = { s: UNCHANGED };
        continue;
      }
      try {
        out[k] = { s: READ, size, mtime, x: await extract(path, f.kind, f.mime, size, { thumbnailDir: m.thumbnailDir }) };
      } catch (e) {
        const err = (e as Error)?.message ?? String(e);
        if (e instanceof ThumbnailWriteFailed) out[k] = { s: STORE_FAILED, size, mtime, err, code: e.code, path: e.path };
        // An I/O error reading the file is the medium's, not the file's: not recorded as unreadable, read again next scan.
        else if ((e as NodeJS.ErrnoException)?.code === "EIO") out[k] = { s: NOT_READ, size, mtime, err };
        else out[k] = { s: UNREADABLE, size, mtime, err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(m.concurrency, m.files.length)) }, lane));
  return out;
}

self.onmessage = async (ev: MessageEvent) => {
  const m = ev.data;
  if (m.op === "checkpoint") {
    // The WAL is copied into the database here, not on the main thread (its fsyncs take milliseconds).
    try {
      db ??= new Database(m.database);
      db.exec("PRAGMA busy_timeout = 2000");
      db.exec("PRAGMA wal_checkpoint(PASSIVE)");
    } catch {}
    return;
  }
  try {
    if (m.op === "scanChunk") self.postMessage({ id: m.id, x: await scanChunk(m) });
    else if (m.op === "extract") self.postMessage({ id: m.id, x: await extract(m.path, m.kind, m.mime, m.size, { thumbnailDir: m.thumbnailDir }) });
    else if (m.op === "mtpDetect") {
      loadLibmtp(m.library);
      self.postMessage({ id: m.id, x: detectRawDevices() });
    } else throw new Error(`unknown request ${m.op}`);
  } catch (e) {
    self.postMessage({ id: m.id, err: (e as Error)?.message ?? String(e) });
  }
};
