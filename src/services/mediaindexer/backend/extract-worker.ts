// The media indexer's background thread: parses media files (tags, EXIF, container
// headers) and writes cover art thumbnails off the main thread, so a scan never
// holds the event loop that answers the bus; it also checkpoints the database's WAL
// and runs libmtp's USB device detection (both can take milliseconds). Requests and
// answers are plain objects (extractor.ts).
import { Database } from "bun:sqlite";
import { extract } from "./metadata";
import { niceThread } from "../../../ffi/sched";
import { loadLibmtp, detectRawDevices } from "../../../ffi/libmtp";

declare const self: Worker;

// Background work: the thread gives way to the main thread whenever both want a core.
try {
  niceThread(10);
} catch {}

let db: Database | undefined;

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
    if (m.op === "extract") self.postMessage({ id: m.id, x: await extract(m.path, m.kind, m.mime, m.size, { thumbnailDir: m.thumbnailDir }) });
    else if (m.op === "mtpDetect") {
      loadLibmtp(m.library);
      self.postMessage({ id: m.id, x: detectRawDevices() });
    } else throw new Error(`unknown request ${m.op}`);
  } catch (e) {
    self.postMessage({ id: m.id, err: (e as Error)?.message ?? String(e) });
  }
};
