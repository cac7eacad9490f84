// The media indexer's background thread: compares files with their rows (stat),
// parses the new and changed ones (tags, EXIF, container headers) and writes cover
// art thumbnails, off the main thread, so a scan never holds the event loop that
// answers the bus; it also checkpoints the database's WAL and runs libmtp's USB
// device detection (both can take milliseconds). Requests and answers are plain
// objects (extractor.ts).
import { Database } from "bun:sqlite";
import { stat, open, constants, type FileHandle } from "node:fs/promises";
import type { Stats } from "node:fs";
import { join } from "node:path";
import { extract, ThumbnailWriteFailed } from "./metadata";
import { GONE, UNCHANGED, READ, UNREADABLE, NOT_READ, STORE_FAILED, DENIED, type ChunkRequest, type ChunkResult } from "./extractor";
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
      let path = f.path ?? join(m.root, m.dir, f.name);
      let size = 0, mtime = 0;
      let fh: FileHandle | undefined;
      try {
        if (m.as) {
          // A caller's scan: the name itself, never a symlink, and never blocking (a FIFO put in its place).
          try {
            fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
          } catch (e) {
            const code = (e as NodeJS.ErrnoException).code;
            out[k] = { s: code === "ENOENT" || code === "ENOTDIR" || code === "ENXIO" ? GONE : DENIED };
            continue;
          }
        }
        try {
          const st = fh ? await fh.stat() : await stat(path);
          if (!st.isFile()) {
            out[k] = { s: GONE };
            continue;
          }
          if (m.as && !readableBy(st, m.as)) {
            out[k] = { s: DENIED };
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
        // The file opened above is the one read (its fd's link in /proc), whatever happens to the name meanwhile.
        if (fh) path = `/proc/self/fd/${fh.fd}`;
        out[k] = { s: READ, size, mtime, x: await extract(path, f.kind, f.mime, size, { thumbnailDir: m.thumbnailDir, name: fh || f.path ? f.name : undefined }) };
      } catch (e) {
        const err = (e as Error)?.message ?? String(e);
        if (e instanceof ThumbnailWriteFailed) out[k] = { s: STORE_FAILED, size, mtime, err, code: e.code, path: e.path };
        // An I/O error reading the file is the medium's, not the file's: not recorded as unreadable, read again next scan.
        else if ((e as NodeJS.ErrnoException)?.code === "EIO") out[k] = { s: NOT_READ, size, mtime, err };
        else out[k] = { s: UNREADABLE, size, mtime, err };
      } finally {
        await fh?.close().catch(() => {});
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(m.concurrency, m.files.length)) }, lane));
  return out;
}

/** Whether the owner, group and mode bits let this identity read the file (the file actually opened: no race with a rename). */
function readableBy(st: Stats, who: { uid: number; gid: number; groups: number[] }): boolean {
  if (who.uid === 0) return true;
  if (st.uid === who.uid) return (st.mode & 0o400) !== 0;
  if (st.gid === who.gid || who.groups.includes(st.gid)) return (st.mode & 0o040) !== 0;
  return (st.mode & 0o004) !== 0;
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
    // Answered (nothing to report) so that the main thread knows the thread is free.
    self.postMessage({ id: m.id, x: null });
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
