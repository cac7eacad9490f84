// Image dimensions from the file's header (JPEG SOFn, PNG IHDR, GIF, BMP, WebP),
// reading no more than the header needs.
import { Corrupt, u16be, u32be, u16le, u32le, ascii, type Source } from "./source";

const SOF = new Set([0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]);

export interface Dimensions {
  width: number;
  height: number;
  format: string;
}

export async function imageDimensions(src: Source): Promise<Dimensions> {
  const head = await src.read(0, 64);
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8) return jpeg(src);
  if (head.length >= 24 && u32be(head, 0) === 0x89504e47 && ascii(head, 12, 4) === "IHDR")
    return { width: u32be(head, 16), height: u32be(head, 20), format: "png" };
  if (head.length >= 10 && ascii(head, 0, 4) === "GIF8") return { width: u16le(head, 6), height: u16le(head, 8), format: "gif" };
  if (head.length >= 26 && ascii(head, 0, 2) === "BM")
    return { width: Math.abs(u32le(head, 18) | 0), height: Math.abs(u32le(head, 22) | 0), format: "bmp" };
  if (head.length >= 30 && ascii(head, 0, 4) === "RIFF" && ascii(head, 8, 4) === "WEBP") return webp(head);
  throw new Corrupt("not a known image format");
}

async function jpeg(src: Source): Promise<Dimensions> {
  let pos = 2;
  // Markers up to the first SOF; each read is one segment header.
  for (let guard = 0; guard < 1000; guard++) {
    const h = await src.read(pos, 9);
    if (h.length < 4) break;
    if (h[0] !== 0xff) throw new Corrupt(`JPEG: no marker at ${pos}`);
    const marker = h[1]!;
    if (marker === 0xff) {
      pos += 1; // fill byte
      continue;
    }
    if (marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      pos += 2;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) break; // end of image or start of scan before any frame header
    if (SOF.has(marker)) {
      if (h.length < 9) break;
      const height = u16be(h, 5);
      const width = u16be(h, 7);
      if (!width || !height) throw new Corrupt("JPEG: empty frame header");
      return { width, height, format: "jpeg" };
    }
    pos += 2 + u16be(h, 2);
  }
  throw new Corrupt("JPEG: no frame header");
}

function webp(h: Uint8Array): Dimensions {
  const chunk = ascii(h, 12, 4);
  if (chunk === "VP8 ") return { width: u16le(h, 26) & 0x3fff, height: u16le(h, 28) & 0x3fff, format: "webp" };
  if (chunk === "VP8L") {
    const b = u32le(h, 21);
    return { width: (b & 0x3fff) + 1, height: ((b >>> 14) & 0x3fff) + 1, format: "webp" };
  }
  if (chunk === "VP8X") {
    const w = 1 + (h[24]! | (h[25]! << 8) | (h[26]! << 16));
    const ht = 1 + (h[27]! | (h[28]! << 8) | (h[29]! << 16));
    return { width: w, height: ht, format: "webp" };
  }
  throw new Corrupt("WebP: unknown chunk");
}
