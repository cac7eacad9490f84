// Identifiers a service hands out (intentId, teCommandId) that stay unique across
// restarts of the service, so that a peer holding an ID from before a crash can never
// name a new, unrelated thing with it.
//
// IDs are handed out from blocks reserved in a small file of the state directory: the
// end of a block is written (temporary file, fsync, rename, fsync of the directory)
// before the first ID of the block is given out, and a new start begins after the
// last block reserved. A crash therefore skips at most the unused rest of one block;
// IDs are never reused. The next block is reserved when half of the current one is
// used, so a write that fails for a while (a full disk) costs nothing until the
// current block runs out; then take() throws IdsUnavailable rather than hand out an
// ID that a restart could hand out again.
//
// The file's format (docs/updates.md): format 1 is one decimal number and a newline,
// with no version field, as the product wrote it before stores were versioned, so a
// binary rolled back to that product still reads it. A later format adds a line
// `version=N` after the number; a binary that finds a version newer than IDS_FORMAT
// throws StoreTooNew and writes nothing (its service does not start), so an ID is
// never handed out from a file it does not understand.
import { mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { StoreTooNew, writeDurably } from "./store";

/** The format of the reservation files this binary reads and writes. */
export const IDS_FORMAT = 1;

/** The reserved end and the format of a reservation file's text (format 1 when no version line). */
export function parseIds(text: string): { end: number; version: number } {
  const [first = "", ...rest] = text.split("\n").map((l) => l.trim());
  let version = 1;
  for (const line of rest) {
    const m = /^version\s*=\s*(\d+)$/.exec(line);
    if (m) version = Number(m[1]);
  }
  return { end: Number(first), version };
}

export interface IdSourceOptions {
  /** IDs reserved per write of the file (default 1000). */
  block?: number;
  /** The first ID ever handed out (default 1). */
  first?: number;
  /** A block that could not be reserved (the write failed): told here, once per try. */
  onError?: (e: unknown) => void;
}

/** No ID is reserved and the state directory cannot take a new reservation. */
export class IdsUnavailable extends Error {
  constructor(readonly file: string, readonly cause: unknown) {
    super(`no identifier can be reserved in ${file}: ${(cause as Error)?.message ?? String(cause)}`);
  }
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
    let text: string | undefined;
    try {
      text = readFileSync(file, "utf8");
    } catch {}
    if (text !== undefined) {
      const { end: n, version } = parseIds(text);
      if (version > IDS_FORMAT) throw new StoreTooNew("the identifier reservations", file, version, IDS_FORMAT);
      if (Number.isSafeInteger(n) && n > end) end = n;
    }
    this.next = end + 1;
    this.reservedEnd = end;
  }

  /** The next ID: unique for this file, across restarts. Throws IdsUnavailable when none can be reserved. */
  take(): number {
    if (this.next > this.reservedEnd) {
      const e = this.reserve(this.next + this.block - 1);
      if (e) throw new IdsUnavailable(this.file, e);
    } else if (this.reservedEnd - this.next < this.block / 2) {
      // Ahead of need: a failure here leaves the rest of the current block to use.
      this.reserve(this.reservedEnd + this.block);
    }
    return this.next++;
  }

  /** Writes `end` as the reserved end; returns the error when it could not be saved. */
  private reserve(end: number): unknown {
    try {
      mkdirSync(dirname(this.file), { recursive: true });
      // Format 1: the number alone (temporary file, fsync, rename, fsync of the directory).
      writeDurably(this.file, `${end}\n`);
      this.reservedEnd = end;
      return undefined;
    } catch (e) {
      this.onError?.(e);
      return e;
    }
  }
}
