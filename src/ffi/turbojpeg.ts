// libjpeg-turbo's TurboJPEG API (turbojpeg.h, libturbojpeg.so.0) through bun:ffi:
// JPEG encoding of planar YUV (4:2:2 from YUYV frames) and decoding of a JPEG's
// header and pixels (to check what was written). The library is optional: it is
// opened on first use and available() says whether this system has it.
//
// tjCompressFromYUVPlanes writes into a buffer sized by tjBufSize with
// TJFLAG_NOREALLOC, so no memory the library allocates crosses into JavaScript.
// Encoding is synchronous: a 640x480 frame takes a few milliseconds, a 1080p one
// a few tens; callers encode one frame per event-loop turn.
import { dlopen, FFIType, ptr, type Pointer } from "bun:ffi";

const { i32, u64, ptr: P, cstring } = FFIType;

/** enum TJSAMP */
export const TJSAMP_444 = 0, TJSAMP_422 = 1, TJSAMP_420 = 2, TJSAMP_GRAY = 3;
/** enum TJPF */
export const TJPF_RGB = 0, TJPF_BGRX = 3, TJPF_GRAY = 6;
export const TJFLAG_NOREALLOC = 1024;

const SYMBOLS = {
  tjInitCompress: { args: [], returns: P },
  tjInitDecompress: { args: [], returns: P },
  tjDestroy: { args: [P], returns: i32 },
  tjBufSize: { args: [i32, i32, i32], returns: u64 },
  tjGetErrorStr2: { args: [P], returns: cstring },
  tjCompressFromYUVPlanes: { args: [P, P, i32, P, i32, i32, P, P, i32, i32], returns: i32 },
  tjDecompressHeader3: { args: [P, P, u64, P, P, P, P], returns: i32 },
  tjDecompress2: { args: [P, P, u64, P, i32, i32, i32, i32, i32], returns: i32 },
} as const;

type Lib = ReturnType<typeof dlopen<typeof SYMBOLS>>["symbols"];
let lib: Lib | null | undefined;
let compressor: Pointer | null = null;
let decompressor: Pointer | null = null;

function open(): Lib | null {
  if (lib !== undefined) return lib;
  for (const name of ["libturbojpeg.so.0", "libturbojpeg.so"]) {
    try {
      lib = dlopen(name, SYMBOLS).symbols;
      return lib;
    } catch {}
  }
  lib = null;
  return lib;
}

/** Whether libturbojpeg can be loaded on this system. */
export function available(): boolean {
  return open() !== null;
}

function need(): Lib {
  const l = open();
  if (!l) throw new Error("libturbojpeg.so.0 is not installed");
  return l;
}

function failed(l: Lib, h: Pointer, call: string): never {
  throw new Error(`${call}: ${String(l.tjGetErrorStr2(h))}`);
}

/** Planar YUV of one frame: Y full size, U and V halved horizontally (4:2:2) or in both directions (4:2:0). */
export interface YuvPlanes {
  width: number;
  height: number;
  y: Uint8Array;
  u: Uint8Array;
  v: Uint8Array;
  subsamp: typeof TJSAMP_422 | typeof TJSAMP_420;
}

/** Encodes planar YUV as a baseline JPEG of the given quality (1-100). */
export function encodeYuvPlanes(p: YuvPlanes, quality = 85): Buffer {
  const l = need();
  if (!compressor) compressor = (l.tjInitCompress() as Pointer | null) ?? failed(l, null as unknown as Pointer, "tjInitCompress");
  const cw = p.width >> 1;
  const planes = new BigUint64Array([BigInt(ptr(p.y)), BigInt(ptr(p.u)), BigInt(ptr(p.v))]);
  const strides = new Int32Array([p.width, cw, cw]);
  const size = Number(l.tjBufSize(p.width, p.height, p.subsamp));
  const out = Buffer.alloc(size);
  const outPtr = new BigUint64Array([BigInt(ptr(out))]);
  const outSize = new BigUint64Array([BigInt(size)]);
  const rc = l.tjCompressFromYUVPlanes(
    compressor, ptr(planes), p.width, ptr(strides), p.height, p.subsamp, ptr(outPtr), ptr(outSize), quality, TJFLAG_NOREALLOC,
  );
  if (rc !== 0) failed(l, compressor, "tjCompressFromYUVPlanes");
  return out.subarray(0, Number(outSize[0]));
}

/** YUYV (packed 4:2:2) to planes; `into` reuses the planes of a previous call of the same size. */
export function yuyvToPlanes(src: Uint8Array, width: number, height: number, into?: YuvPlanes): YuvPlanes {
  const cw = width >> 1;
  const p = into && into.width === width && into.height === height && into.subsamp === TJSAMP_422
    ? into
    : { width, height, y: new Uint8Array(width * height), u: new Uint8Array(cw * height), v: new Uint8Array(cw * height), subsamp: 1 as const };
  const { y, u, v } = p;
  const n = cw * height;
  for (let i = 0, s = 0; i < n; i++, s += 4) {
    y[2 * i] = src[s]!;
    u[i] = src[s + 1]!;
    y[2 * i + 1] = src[s + 2]!;
    v[i] = src[s + 3]!;
  }
  return p;
}

/** Encodes a YUYV frame as JPEG. */
export function encodeYuyv(src: Uint8Array, width: number, height: number, quality = 85): Buffer {
  return encodeYuvPlanes(yuyvToPlanes(src, width, height), quality);
}

export interface JpegHeader { width: number; height: number; subsamp: number; colorspace: number }

function decoder(l: Lib): Pointer {
  if (!decompressor) decompressor = (l.tjInitDecompress() as Pointer | null) ?? failed(l, null as unknown as Pointer, "tjInitDecompress");
  return decompressor;
}

/** Reads a JPEG's header (throws when the data is not a JPEG). */
export function readHeader(jpeg: Uint8Array): JpegHeader {
  const l = need();
  const h = decoder(l);
  const v = new Int32Array(4);
  const at = (i: number) => ptr(v, i * 4);
  if (l.tjDecompressHeader3(h, ptr(jpeg), jpeg.length, at(0), at(1), at(2), at(3)) !== 0) failed(l, h, "tjDecompressHeader3");
  return { width: v[0]!, height: v[1]!, subsamp: v[2]!, colorspace: v[3]! };
}

/** Decodes a whole JPEG to 8-bit gray (one byte a pixel): proves the data decodes, and gives its luma. */
export function decodeGray(jpeg: Uint8Array): { width: number; height: number; pixels: Uint8Array } {
  const l = need();
  const h = decoder(l);
  const { width, height } = readHeader(jpeg);
  const pixels = new Uint8Array(width * height);
  if (l.tjDecompress2(h, ptr(jpeg), jpeg.length, ptr(pixels), width, width, height, TJPF_GRAY, 0) !== 0) failed(l, h, "tjDecompress2");
  return { width, height, pixels };
}

/**
 * Decodes a JPEG into dst, `pitch` bytes a row, in pixelFormat (TJPF_BGRX: 4 bytes
 * a pixel, as DRM's XRGB8888). Returns the image's size, or null (nothing written)
 * when it does not fit in maxWidth x maxHeight.
 */
export function decodeInto(jpeg: Uint8Array, dst: Uint8Array, pitch: number, maxWidth: number, maxHeight: number, pixelFormat = TJPF_BGRX): { width: number; height: number } | null {
  const l = need();
  const h = decoder(l);
  const { width, height } = readHeader(jpeg);
  if (width > maxWidth || height > maxHeight || pitch * height > dst.length) return null;
  if (l.tjDecompress2(h, ptr(jpeg), jpeg.length, ptr(dst), width, pitch, height, pixelFormat, 0) !== 0) failed(l, h, "tjDecompress2");
  return { width, height };
}
