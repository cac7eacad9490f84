// Failures of the indexer's own storage (the database, the thumbnails, the state
// directory), told apart from a media file's own problems: a full file system, a
// quota, an I/O error or a read-only file system stops a scan and is answered as
// such, with the errno, the path and the free space statvfs(2) reports for it.
import { statfs } from "node:fs/promises";
import { dirname } from "node:path";

/** errno names that mean "the indexer cannot write its state", not "this media file is bad". */
export const STORAGE_ERRNOS = new Set(["ENOSPC", "EDQUOT", "EIO", "EROFS", "EACCES", "EPERM", "ENOTDIR", "ENOENT"]);
/** Of those, the ones a write in the middle of a scan meets (the scan stops, its batch rolled back). */
export const WRITE_ERRNOS = new Set(["ENOSPC", "EDQUOT", "EIO", "EROFS"]);

/** The indexer's storage failed: errno name (`code`), the path written, and what failed. */
export class StorageFailure extends Error {
  constructor(
    readonly code: string,
    readonly path: string,
    readonly what: string,
    cause?: unknown,
  ) {
    super(`${what}: ${code} (${path})`, { cause });
    this.name = "StorageFailure";
  }
}

/**
 * The errno name of a failed database call: SQLite reports a full file system as
 * SQLITE_FULL (ENOSPC, and whatever it cannot tell from it), a failed write or read
 * as SQLITE_IOERR_* (EIO; a quota's EDQUOT is among them, told apart by statvfs
 * below), a read-only file as SQLITE_READONLY.
 */
export function sqliteErrno(e: unknown): string | undefined {
  const code = (e as { code?: unknown })?.code;
  if (typeof code !== "string") return undefined;
  if (code === "SQLITE_FULL") return "ENOSPC";
  if (code.startsWith("SQLITE_IOERR")) return "EIO";
  if (code.startsWith("SQLITE_READONLY")) return "EROFS";
  if (code.startsWith("SQLITE_CANTOPEN")) return "EACCES";
  return undefined;
}

/** A StorageFailure for an error of a database or file write to `path`, or undefined when it is none of the storage errnos. */
export function storageFailure(e: unknown, path: string, what: string): StorageFailure | undefined {
  if (e instanceof StorageFailure) return e;
  const errno = (e as NodeJS.ErrnoException)?.code;
  const code = typeof errno === "string" && WRITE_ERRNOS.has(errno) ? errno : sqliteErrno(e);
  if (!code || !WRITE_ERRNOS.has(code)) return undefined;
  return new StorageFailure(code, (e as NodeJS.ErrnoException)?.path ?? path, what, e);
}

/** Free space of the file system holding path (statvfs: blocks available to the service's user), or undefined when it cannot be read. */
export async function freeSpace(path: string): Promise<{ freeBytes: number; totalBytes: number } | undefined> {
  for (let p = path; ; p = dirname(p)) {
    try {
      const s = await statfs(p);
      // Block counts are in fragment units (f_frsize), which Linux file systems make equal to f_bsize.
      const unit = (s as { frsize?: number }).frsize || s.bsize;
      return { freeBytes: s.bavail * unit, totalBytes: s.blocks * unit };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT" || p === dirname(p)) return undefined;
    }
  }
}
