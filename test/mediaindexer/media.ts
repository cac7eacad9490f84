// Test media made at test time: MP3 (ID3v2.3 tags, cover art, MPEG frames) and JPEG
// (EXIF with date and GPS, a frame header) written byte by byte; MP4 and Matroska
// through ffmpeg when it is installed (scripts/setup: ffmpeg).
import { writeFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { spawnSync } from "bun";

const be32 = (n: number) => [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
const syncsafe = (n: number) => [(n >>> 21) & 127, (n >>> 14) & 127, (n >>> 7) & 127, n & 127];
const bytes = (s: string) => [...Buffer.from(s, "latin1")];

function id3Frame(id: string, body: number[]): number[] {
  return [...bytes(id), ...be32(body.length), 0, 0, ...body];
}
const text = (s: string) => [0, ...bytes(s)]; // ISO-8859-1

/** A 1x1 PNG (used as cover art). */
export const PNG_1x1 = Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" + "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082",
  "hex",
);

export interface Mp3Tags {
  title?: string;
  artist?: string;
  album?: string;
  genre?: string;
  track?: string;
  year?: string;
  cover?: Uint8Array;
  /** MPEG frames of 128 kbit/s at 44.1 kHz (26 ms each). */
  frames?: number;
}

/** An MP3: ID3v2.3 tag, then MPEG-1 Layer III frames (silent). */
export function mp3(t: Mp3Tags = {}): Buffer {
  const frames: number[] = [];
  if (t.title) frames.push(...id3Frame("TIT2", text(t.title)));
  if (t.artist) frames.push(...id3Frame("TPE1", text(t.artist)));
  if (t.album) frames.push(...id3Frame("TALB", text(t.album)));
  if (t.genre) frames.push(...id3Frame("TCON", text(t.genre)));
  if (t.track) frames.push(...id3Frame("TRCK", text(t.track)));
  if (t.year) frames.push(...id3Frame("TYER", text(t.year)));
  if (t.cover) frames.push(...id3Frame("APIC", [0, ...bytes("image/png"), 0, 3, 0, ...t.cover]));
  const tag = [...bytes("ID3"), 3, 0, 0, ...syncsafe(frames.length), ...frames];
  // 0xFFFB9000: MPEG-1 Layer III, no CRC, 128 kbit/s, 44.1 kHz, no padding: 417 bytes per frame.
  const frame = Buffer.alloc(417);
  frame.set([0xff, 0xfb, 0x90, 0x00]);
  const n = t.frames ?? 8;
  return Buffer.concat([Buffer.from(tag), ...Array.from({ length: n }, () => frame)]);
}

export interface JpegInfo {
  width: number;
  height: number;
  description?: string;
  /** "YYYY:MM:DD HH:MM:SS" */
  date?: string;
  lat?: number;
  lon?: number;
}

/** A JPEG: SOI, APP1 EXIF (IFD0, Exif IFD, GPS IFD), SOF0, EOI (no scan data: header readers need none). */
export function jpeg(j: JpegInfo): Buffer {
  // TIFF little-endian. Layout: header(8) IFD0 | ExifIFD | GPSIFD | data area.
  type Entry = { tag: number; type: number; count: number; value: number[] | Buffer };
  const entriesIfd0: Entry[] = [];
  const exifIfd: Entry[] = [];
  const gpsIfd: Entry[] = [];
  const ascii = (s: string) => Buffer.from(`${s}\0`, "latin1");
  const rationals = (vals: [number, number][]) => {
    const b = Buffer.alloc(vals.length * 8);
    vals.forEach(([n, d], i) => {
      b.writeUInt32LE(n, i * 8);
      b.writeUInt32LE(d, i * 8 + 4);
    });
    return b;
  };
  const dms = (v: number): [number, number][] => {
    const a = Math.abs(v);
    const d = Math.floor(a);
    const m = Math.floor((a - d) * 60);
    const s = Math.round(((a - d) * 60 - m) * 60 * 10000);
    return [[d, 1], [m, 1], [s, 10000]];
  };
  if (j.description) entriesIfd0.push({ tag: 0x010e, type: 2, count: 0, value: ascii(j.description) });
  entriesIfd0.push({ tag: 0x8769, type: 4, count: 1, value: [0] }); // Exif IFD pointer, patched
  const hasGps = j.lat !== undefined && j.lon !== undefined;
  if (hasGps) entriesIfd0.push({ tag: 0x8825, type: 4, count: 1, value: [0] });
  if (j.date) exifIfd.push({ tag: 0x9003, type: 2, count: 0, value: ascii(j.date) });
  if (hasGps) {
    gpsIfd.push({ tag: 0x0001, type: 2, count: 0, value: ascii(j.lat! < 0 ? "S" : "N") });
    gpsIfd.push({ tag: 0x0002, type: 5, count: 3, value: rationals(dms(j.lat!)) });
    gpsIfd.push({ tag: 0x0003, type: 2, count: 0, value: ascii(j.lon! < 0 ? "W" : "E") });
    gpsIfd.push({ tag: 0x0004, type: 5, count: 3, value: rationals(dms(j.lon!)) });
  }
  const ifdSize = (e: Entry[]) => 2 + e.length * 12 + 4;
  const off0 = 8;
  const offExif = off0 + ifdSize(entriesIfd0);
  const offGps = offExif + ifdSize(exifIfd);
  let dataOff = offGps + (hasGps ? ifdSize(gpsIfd) : 0);
  const tiff = Buffer.alloc(4096);
  tiff.write("II", 0, "latin1");
  tiff.writeUInt16LE(42, 2);
  tiff.writeUInt32LE(off0, 4);
  const writeIfd = (at: number, entries: Entry[]) => {
    tiff.writeUInt16LE(entries.length, at);
    entries.forEach((e, i) => {
      const p = at + 2 + i * 12;
      tiff.writeUInt16LE(e.tag, p);
      tiff.writeUInt16LE(e.type, p + 2);
      if (Buffer.isBuffer(e.value)) {
        const count = e.type === 2 ? e.value.length : e.count;
        tiff.writeUInt32LE(count, p + 4);
        if (e.value.length <= 4) e.value.copy(tiff, p + 8);
        else {
          tiff.writeUInt32LE(dataOff, p + 8);
          e.value.copy(tiff, dataOff);
          dataOff += e.value.length + (e.value.length & 1);
        }
      } else {
        tiff.writeUInt32LE(e.count, p + 4);
        tiff.writeUInt32LE(e.value[0]!, p + 8);
      }
    });
    tiff.writeUInt32LE(0, at + 2 + entries.length * 12);
  };
  for (const e of entriesIfd0) if (e.tag === 0x8769) e.value = [offExif];
  for (const e of entriesIfd0) if (e.tag === 0x8825) e.value = [offGps];
  writeIfd(off0, entriesIfd0);
  writeIfd(offExif, exifIfd);
  if (hasGps) writeIfd(offGps, gpsIfd);
  const tiffData = tiff.subarray(0, dataOff);
  const app1Body = Buffer.concat([Buffer.from("Exif\0\0", "latin1"), tiffData]);
  const app1 = Buffer.concat([Buffer.from([0xff, 0xe1, (app1Body.length + 2) >> 8, (app1Body.length + 2) & 255]), app1Body]);
  const sof = Buffer.from([0xff, 0xc0, 0, 17, 8, j.height >> 8, j.height & 255, j.width >> 8, j.width & 255, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
  return Buffer.concat([Buffer.from([0xff, 0xd8]), app1, sof, Buffer.from([0xff, 0xd9])]);
}

export function put(path: string, data: Uint8Array) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, data);
}

export const hasFfmpeg = spawnSync(["sh", "-c", "command -v ffmpeg"]).exitCode === 0;

/** Runs ffmpeg (quiet); throws with its stderr on failure. */
export function ffmpeg(args: string[]) {
  const r = spawnSync(["ffmpeg", "-v", "error", "-y", ...args], { stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`ffmpeg ${args.join(" ")}: ${r.stderr.toString()}`);
}

/** An MP4 (H.264 + AAC) of the given size, rate and length, with a title and creation time. */
export function mp4(path: string, o: { width: number; height: number; rate: string; seconds: number; title?: string; created?: string }) {
  mkdirSync(dirname(path), { recursive: true });
  ffmpeg([
    "-f", "lavfi", "-i", `testsrc=size=${o.width}x${o.height}:rate=${o.rate}:duration=${o.seconds}`,
    "-f", "lavfi", "-i", `sine=duration=${o.seconds}`,
    "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest",
    ...(o.title ? ["-metadata", `title=${o.title}`] : []),
    ...(o.created ? ["-metadata", `creation_time=${o.created}`] : []),
    path,
  ]);
}

/** A Matroska file (H.264 + Opus). */
export function mkv(path: string, o: { width: number; height: number; rate: string; seconds: number; title?: string }) {
  mkdirSync(dirname(path), { recursive: true });
  ffmpeg([
    "-f", "lavfi", "-i", `testsrc=size=${o.width}x${o.height}:rate=${o.rate}:duration=${o.seconds}`,
    "-f", "lavfi", "-i", `sine=duration=${o.seconds}`,
    "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "libopus", "-shortest",
    ...(o.title ? ["-metadata", `title=${o.title}`] : []),
    path,
  ]);
}
