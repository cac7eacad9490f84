// Metadata extraction, one file at a time and asynchronous: file reads are async and
// the parsing of one file's headers is a short slice of main-thread time (tags, a
// moov box, a JPEG's APP1), so a scan interleaves with the bus (docs/decisions/mediaindexer.md).
// Audio: music-metadata (tags, stream parameters, cover art). Images: the header's
// dimensions (image.ts) and EXIF/GPS through exifr. Video: the container's headers (video.ts).
import { basename } from "node:path";
import { existsSync } from "node:fs";
import { writeFile, rename, unlink } from "node:fs/promises";
import { parseBuffer, parseFile, type IAudioMetadata } from "music-metadata";
import exifr from "exifr";
import { fileSource, Corrupt, type Source } from "./source";
import { imageDimensions } from "./image";
import { videoInfo } from "./video";
import type { Kind } from "./kinds";
import { WRITE_ERRNOS } from "./failure";

/** A thumbnail could not be written for a reason of the thumbnail directory's file system (full, quota, I/O, read-only): the scan stops rather than index the file without it. */
export class ThumbnailWriteFailed extends Error {
  constructor(readonly code: string, readonly path: string) {
    super(`writing a thumbnail: ${code} (${path})`);
  }
}

/** What a scan stores of a file: the list columns and the rest of the spec's metadata fields. */
export interface Extracted {
  kind: Kind;
  title: string;
  duration?: number;
  thumbnail?: string;
  genre?: string;
  album?: string;
  artist?: string;
  width?: number;
  height?: number;
  /** Further fields of getAudioMetadata/getImageMetadata/getVideoMetadata, by their spec names. */
  meta: Record<string, string | number>;
}

export interface ExtractOptions {
  thumbnailDir: string;
  /** The file's name when path does not end with it (a file opened for a caller, read through /proc/self/fd/N): titles and extensions come from it. */
  name?: string;
}

const titleOf = (path: string) => basename(path).replace(/\.[^.]*$/, "");
const PICTURE_EXT: Record<string, string> = { "image/jpeg": "jpg", "image/jpg": "jpg", "image/png": "png", "image/gif": "gif", "image/bmp": "bmp", "image/webp": "webp" };
/** Thumbnails known to exist (a picture shared by an album's tracks is written once). */
const written = new Set<string>();

export async function extract(path: string, kind: Kind, mime: string, size: number, o: ExtractOptions): Promise<Extracted> {
  const label = o.name ?? path;
  if (kind === "audio") return audio(path, label, mime, size, o);
  const src = await fileSource(path, size);
  try {
    return kind === "image" ? await image(label, mime, src) : await video(label, mime, src);
  } finally {
    await src.close();
  }
}

function set(meta: Record<string, string | number>, key: string, v: unknown) {
  if (typeof v === "string" && v !== "") meta[key] = v;
  else if (typeof v === "number" && Number.isFinite(v)) meta[key] = v;
}

async function audio(path: string, label: string, mime: string, size: number, o: ExtractOptions): Promise<Extracted> {
  let m: IAudioMetadata;
  try {
    if (size <= 4 << 20) {
      const src = await fileSource(path, size);
      const buf = (src as { whole?: Uint8Array }).whole ?? (await src.read(0, size));
      await src.close();
      m = await parseBuffer(buf, { mimeType: mime, size, path: label }, { duration: false });
    } else m = await parseFile(path, { duration: false });
  } catch (e) {
    throw new Corrupt(`audio: ${(e as Error).message}`);
  }
  const f = m.format;
  if (!f.codec && !f.container && !f.duration && !f.sampleRate) throw new Corrupt("audio: no stream found");
  const c = m.common;
  const meta: Record<string, string | number> = {};
  set(meta, "mime", mime);
  set(meta, "album_artist", c.albumartist);
  if (c.track?.no) {
    meta.track = c.track.of ? `${c.track.no}/${c.track.of}` : String(c.track.no);
    if (c.track.of) meta.total_track = meta.total_tracks = String(c.track.of);
  }
  set(meta, "date_of_creation", c.date ?? (c.year ? String(c.year) : undefined));
  set(meta, "sample_rate", f.sampleRate);
  set(meta, "bit_rate", f.bitrate !== undefined ? Math.round(f.bitrate) : undefined);
  set(meta, "channels", f.numberOfChannels);
  if (f.bitsPerSample) meta.bit_per_sample = String(f.bitsPerSample);
  const lyric = c.lyrics?.[0];
  set(meta, "lyric", typeof lyric === "string" ? lyric : lyric?.text);
  let thumbnail = "";
  const pic = c.picture?.[0];
  if (pic?.data?.length)
    // A picture that cannot be written leaves the field empty and the file is still indexed;
    // a thumbnail directory that is full or failing stops the scan (ThumbnailWriteFailed).
    thumbnail = await writeThumbnail(pic.data, pic.format, o.thumbnailDir).catch((e: NodeJS.ErrnoException) => {
      if (e?.code && WRITE_ERRNOS.has(e.code)) throw new ThumbnailWriteFailed(e.code, o.thumbnailDir);
      return "";
    });
  return {
    kind: "audio",
    title: c.title || titleOf(label),
    duration: f.duration,
    thumbnail,
    genre: c.genre?.length ? c.genre.join(", ") : undefined,
    album: c.album,
    artist: c.artist ?? c.artists?.join(", "),
    meta,
  };
}

/** Writes a cover picture under its content hash (once per distinct picture); returns its path. */
function writeThumbnail(data: Uint8Array, format: string, dir: string): Promise<string> {
  const ext = PICTURE_EXT[format.toLowerCase()] ?? "img";
  const file = `${dir}/${Bun.hash(data).toString(16).padStart(16, "0")}.${ext}`;
  if (written.has(file)) return Promise.resolve(file);
  // Tracks of one album read at the same time share one write.
  let w = writing.get(file);
  if (!w) {
    w = (async () => {
      try {
        if (!existsSync(file)) {
          const tmp = `${file}.tmp${process.pid}.${++tmpSeq}`;
          try {
            await writeFile(tmp, data);
            await rename(tmp, file);
          } catch (e) {
            // Nothing half-written stays (a full file system leaves a truncated temporary file).
            await unlink(tmp).catch(() => {});
            throw e;
          }
        }
        written.add(file);
        return file;
      } finally {
        writing.delete(file);
      }
    })();
    writing.set(file, w);
  }
  return w;
}
const writing = new Map<string, Promise<string>>();
let tmpSeq = 0;

/**
 * One options object for every parse: exifr keeps the Options it builds from an options
 * object in a map keyed by that object, never emptied, so a new literal per call kept
 * about 4.5 KB per image for the life of the thread (80 MB over /usr's 5,000 PNGs).
 */
const EXIF_OPTIONS = Object.freeze({
  tiff: true, exif: true, gps: true, ifd1: false, interop: false, xmp: false, icc: false, iptc: false, jfif: false,
  reviveValues: false, translateValues: false, mergeOutput: true,
});

async function image(path: string, mime: string, src: Source): Promise<Extracted> {
  const dims = await imageDimensions(src);
  const meta: Record<string, string | number> = { mime };
  let title = titleOf(path);
  if (dims.format === "jpeg" || dims.format === "webp" || dims.format === "png") {
    let exif: Record<string, any> | undefined;
    try {
      const head = await src.read(0, 256 * 1024);
      exif = await exifr.parse(head, EXIF_OPTIONS);
    } catch {
      exif = undefined; // no or broken EXIF: the image is still an image
    }
    if (exif) {
      const d = exif.DateTimeOriginal ?? exif.CreateDate ?? exif.DateTime;
      if (typeof d === "string") set(meta, "date_of_creation", exifDate(d));
      const lat = gpsDegrees(exif.GPSLatitude, exif.GPSLatitudeRef, "S");
      const lon = gpsDegrees(exif.GPSLongitude, exif.GPSLongitudeRef, "W");
      if (lat !== undefined && lon !== undefined) {
        meta.geo_location_latitude = lat;
        meta.geo_location_longitude = lon;
      }
      if (typeof exif.ImageDescription === "string" && exif.ImageDescription.trim()) title = exif.ImageDescription.trim();
    }
  }
  return { kind: "image", title, width: dims.width, height: dims.height, meta };
}

/** "2019:01:02 03:04:05" -> "2019-01-02T03:04:05" (EXIF dates carry no time zone). */
function exifDate(s: string): string {
  const m = /^(\d{4}):(\d\d):(\d\d)[ T](\d\d:\d\d:\d\d)/.exec(s.trim());
  return m ? `${m[1]}-${m[2]}-${m[3]}T${m[4]}` : s.trim();
}

function gpsDegrees(v: unknown, ref: unknown, negative: string): number | undefined {
  let deg: number | undefined;
  if (Array.isArray(v) && v.length >= 1) deg = Number(v[0]) + Number(v[1] ?? 0) / 60 + Number(v[2] ?? 0) / 3600;
  else if (typeof v === "number") deg = v;
  if (deg === undefined || !Number.isFinite(deg)) return undefined;
  if (typeof ref === "string" && ref.toUpperCase().startsWith(negative)) deg = -deg;
  return Math.round(deg * 1e7) / 1e7;
}

async function video(path: string, mime: string, src: Source): Promise<Extracted> {
  const meta: Record<string, string | number> = { mime };
  const ext = path.slice(path.lastIndexOf(".") + 1).toLowerCase();
  const parsed = ["mp4", "m4v", "mov", "3gp", "mkv", "webm"].includes(ext);
  if (!parsed) return { kind: "video", title: titleOf(path), thumbnail: "", meta }; // other containers: file facts only
  const v = await videoInfo(src);
  set(meta, "video_codec", v.videoCodec);
  set(meta, "audio_codec", v.audioCodec);
  set(meta, "frame_rate", v.frameRate);
  set(meta, "date_of_creation", v.created);
  return { kind: "video", title: v.title || titleOf(path), duration: v.duration, width: v.width, height: v.height, thumbnail: "", meta };
}
