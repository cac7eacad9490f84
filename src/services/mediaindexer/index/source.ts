// Random access to a file's bytes for the container parsers: a small file is read
// whole in one call; a large one through positioned reads of the parts a parser
// asks for (an MP4's moov may sit after gigabytes of mdat).
import { open, readFile, type FileHandle } from "node:fs/promises";

export interface Source {
  readonly size: number;
  /** Up to length bytes at offset (fewer at the end of the file). */
  read(offset: number, length: number): Promise<Uint8Array>;
  close(): Promise<void>;
}

/** Files up to this size are read whole. */
export const WHOLE_FILE_BYTES = 1 << 20;

export function bufferSource(buf: Uint8Array): Source {
  return {
    size: buf.length,
    read: async (offset, length) => buf.subarray(Math.min(offset, buf.length), Math.min(offset + length, buf.length)),
    close: async () => {},
  };
}

export async function fileSource(path: string, size: number): Promise<Source & { whole?: Uint8Array }> {
  if (size <= WHOLE_FILE_BYTES) {
    const buf = await readFile(path);
    return { ...bufferSource(buf), whole: buf };
  }
  const fh: FileHandle = await open(path, "r");
  return {
    size,
    async read(offset, length) {
      const n = Math.max(0, Math.min(length, size - offset));
      const buf = Buffer.allocUnsafe(n);
      const { bytesRead } = await fh.read(buf, 0, n, offset);
      return buf.subarray(0, bytesRead);
    },
    close: () => fh.close(),
  };
}

export class Corrupt extends Error {}

export const u16be = (b: Uint8Array, o: number) => (b[o]! << 8) | b[o + 1]!;
export const u32be = (b: Uint8Array, o: number) => ((b[o]! << 24) >>> 0) + ((b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!);
export const u16le = (b: Uint8Array, o: number) => b[o]! | (b[o + 1]! << 8);
export const u32le = (b: Uint8Array, o: number) => (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16)) + b[o + 3]! * 0x1000000;
export const ascii = (b: Uint8Array, o: number, n: number) => String.fromCharCode(...b.subarray(o, o + n));

export function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** "num/den" in lowest terms. */
export function fraction(num: number, den: number): string {
  const g = gcd(Math.round(num), Math.round(den)) || 1;
  return `${Math.round(num) / g}/${Math.round(den) / g}`;
}
