// Identifiers a service hands out (intentId, teCommandId) that stay unique across
// restarts of the service, so that a peer holding an ID from before a crash can never
// name a new, unrelated thing with it.
//
// IDs are handed out from blocks reserved in a small file of the state directory: the
// end of the current block is written (temporary file, fsync, rename) before the
// first ID of the block is given out, and a new start begins after the last block
// reserved. A crash therefore skips at most the unused rest of one block; IDs are
// never reused. The file holds one decimal number.
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { dirname } from "node:path";

export interface IdSourceOptions {
  /** IDs reserved per write of the file (default 1000). */
  block?: number;
  /** The first ID ever handed out (default 1). */
  first?: number;
  /** A block that cannot be saved is still used (IDs keep coming; only their uniqueness across a restart is lost): told here. */
  onError?: (e: unknown) => void;
}

export class IdSource {
  private next: number;
  private reservedEnd: number;
  private readonly block: number;
  private readonly onError?: (e: unknown) => void;

  constructor(private readonly file: string, opts: IdSourceOptions = {}) {
    this.block = opts.block ?? 1000;
    this.onError = opts.onError;
    let end = (opts.first ?? 1) - 1;
    try {
      const n = Number(readFileSync(file, "utf8").trim());
      if (Number.isSafeInteger(n) && n > end) end = n;
    } catch {}
    this.next = end + 1;
    this.reservedEnd = end;
  }

  /** The next ID: unique for this file, across restarts. */
  take(): number {
    if (this.next > this.reservedEnd) this.reserve(this.next + this.block - 1);
    return this.next++;
  }

  private reserve(end: number) {
    this.reservedEnd = end;
    try {
      mkdirSync(dirname(this.file), { recursive: true });
      const tmp = `${this.file}.tmp`;
      const fd = openSync(tmp, "w", 0o644);
      try {
        writeSync(fd, `${end}\n`);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, this.file);
    } catch (e) {
      this.onError?.(e);
    }
  }
}
