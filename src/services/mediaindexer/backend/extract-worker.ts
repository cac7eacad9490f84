// The metadata thread: parses media files (tags, EXIF, container headers) and writes
// cover art thumbnails off the main thread, so a scan never holds the event loop
// that answers the bus. Requests and answers are plain objects (extractor.ts).
import { Database } from "bun:sqlite";
import { extract } from "./metadata";
import { niceThread } from "../../../ffi/sched";

declare const self: Worker;

// Background work: the thread gives way to the main thread whenever both want a core.
try {
  niceThread(10);
} catch {}

let db: Database | undefined;

self.onmessage = async (ev: MessageEvent) => {
  if (ev.data.checkpoint) {
    // The WAL is copied into the database here, not on the main thread (its fsyncs take milliseconds).
    try {
      db ??= new Database(ev.data.checkpoint);
      db.exec("PRAGMA busy_timeout = 2000");
      db.exec("PRAGMA wal_checkpoint(PASSIVE)");
    } catch {}
    return;
  }
  const { id, path, kind, mime, size, thumbnailDir } = ev.data;
  try {
    const x = await extract(path, kind, mime, size, { thumbnailDir });
    self.postMessage({ id, x });
  } catch (e) {
    self.postMessage({ id, err: (e as Error)?.message ?? String(e) });
  }
};
