// Video container metadata read from the container's headers: the ISO base media
// file format (MP4, MOV, M4V, 3GP: the moov box wherever it is) and Matroska/WebM
// (EBML: Segment Info and Tracks). Duration, dimensions, codecs, the frame rate as
// a fraction, title and creation date.
import { Corrupt, u16be, u32be, ascii, fraction, type Source } from "./source";

export interface VideoInfo {
  container: string;
  duration?: number;
  width?: number;
  height?: number;
  videoCodec?: string;
  audioCodec?: string;
  /** "num/den", e.g. "25/1", "30000/1001". */
  frameRate?: string;
  title?: string;
  /** ISO 8601. */
  created?: string;
}

/** Largest header part read into memory (moov, Info, Tracks). */
const MAX_HEADER = 64 << 20;

export async function videoInfo(src: Source): Promise<VideoInfo> {
  const head = await src.read(0, 16);
  if (head.length >= 4 && u32be(head, 0) === 0x1a45dfa3) return matroska(src);
  if (head.length >= 8 && ["ftyp", "moov", "mdat", "free", "wide", "skip"].includes(ascii(head, 4, 4))) return mp4(src);
  throw new Corrupt("not an MP4 or Matroska file");
}

// ---------------------------------------------------------------- MP4 / QuickTime

interface Box {
  type: string;
  /** Payload start and end (absolute in its buffer). */
  start: number;
  end: number;
}

function* boxes(b: Uint8Array, from: number, to: number): Generator<Box> {
  let p = from;
  while (p + 8 <= to) {
    let size = u32be(b, p);
    const type = ascii(b, p + 4, 4);
    let hdr = 8;
    if (size === 1) {
      if (p + 16 > to) return;
      size = u32be(b, p + 8) * 2 ** 32 + u32be(b, p + 12);
      hdr = 16;
    } else if (size === 0) size = to - p;
    if (size < hdr || p + size > to) throw new Corrupt(`MP4: box ${JSON.stringify(type)} runs past its parent`);
    yield { type, start: p + hdr, end: p + size };
    p += size;
  }
}

const child = (b: Uint8Array, parent: Box, type: string, skip = 0) => {
  for (const x of boxes(b, parent.start + skip, parent.end)) if (x.type === type) return x;
  return undefined;
};

const MP4_CODECS: Record<string, string> = {
  avc1: "h264", avc3: "h264", hvc1: "hevc", hev1: "hevc", mp4v: "mpeg4", av01: "av1", vp09: "vp9", vp08: "vp8",
  "s263": "h263", jpeg: "mjpeg", mjpa: "mjpeg", apcn: "prores", apch: "prores",
  mp4a: "aac", ".mp3": "mp3", "ac-3": "ac3", "ec-3": "eac3", Opus: "opus", fLaC: "flac", alac: "alac", samr: "amr_nb", sowt: "pcm_s16le", twos: "pcm_s16be", lpcm: "pcm",
};
/** MPEG-4 objectTypeIndication of an mp4a's esds: which audio codec it really is. */
const OTI: Record<number, string> = { 0x40: "aac", 0x66: "aac", 0x67: "aac", 0x68: "aac", 0x69: "mp3", 0x6b: "mp3", 0xa5: "ac3", 0xa6: "eac3", 0xad: "opus" };

async function mp4(src: Source): Promise<VideoInfo> {
  let pos = 0;
  let moov: Uint8Array | undefined;
  let brand = "";
  while (pos + 8 <= src.size) {
    const h = await src.read(pos, 16);
    if (h.length < 8) break;
    let size = u32be(h, 0);
    const type = ascii(h, 4, 4);
    let hdr = 8;
    if (size === 1) {
      size = u32be(h, 8) * 2 ** 32 + u32be(h, 12);
      hdr = 16;
    } else if (size === 0) size = src.size - pos;
    if (size < hdr) throw new Corrupt(`MP4: bad size of box ${JSON.stringify(type)}`);
    if (type === "ftyp") brand = ascii(await src.read(pos + hdr, 4), 0, 4).trim();
    if (type === "moov") {
      if (size > MAX_HEADER) throw new Corrupt("MP4: moov too large");
      if (pos + size > src.size) throw new Corrupt("MP4: moov truncated");
      moov = await src.read(pos, size);
      break;
    }
    pos += size;
  }
  if (!moov) throw new Corrupt("MP4: no moov box (truncated?)");
  const root: Box = { type: "moov", start: 8, end: moov.length };
  if (u32be(moov, 0) === 1) root.start = 16;
  const info: VideoInfo = { container: brand === "qt" ? "mov" : "mp4" };
  const b = moov;

  const mvhd = child(b, root, "mvhd");
  if (mvhd) {
    const v = b[mvhd.start]!;
    const p = mvhd.start + 4;
    const created = v === 1 ? u32be(b, p) * 2 ** 32 + u32be(b, p + 4) : u32be(b, p);
    const ts = v === 1 ? u32be(b, p + 16) : u32be(b, p + 8);
    const dur = v === 1 ? u32be(b, p + 20) * 2 ** 32 + u32be(b, p + 24) : u32be(b, p + 12);
    if (ts) info.duration = dur / ts;
    if (created) info.created = new Date((created - 2082844800) * 1000).toISOString();
  }

  for (const trak of boxes(b, root.start, root.end)) {
    if (trak.type !== "trak") continue;
    const mdia = child(b, trak, "mdia");
    const hdlr = mdia && child(b, mdia, "hdlr");
    const handler = hdlr ? ascii(b, hdlr.start + 8, 4) : "";
    const mdhd = mdia && child(b, mdia, "mdhd");
    const stbl = mdia && child(b, mdia, "minf") && child(b, child(b, mdia, "minf")!, "stbl");
    const stsd = stbl && child(b, stbl, "stsd");
    let fourcc = "";
    let entry: Box | undefined;
    if (stsd && stsd.start + 16 <= stsd.end) {
      for (const e of boxes(b, stsd.start + 8, stsd.end)) {
        entry = e;
        fourcc = e.type;
        break;
      }
    }
    if (handler === "vide" && !info.videoCodec) {
      info.videoCodec = MP4_CODECS[fourcc] ?? fourcc.trim();
      const tkhd = child(b, trak, "tkhd");
      if (tkhd) {
        const v = b[tkhd.start]!;
        const wOff = tkhd.start + (v === 1 ? 88 : 76);
        if (wOff + 8 <= tkhd.end) {
          info.width = Math.round(u32be(b, wOff) / 65536);
          info.height = Math.round(u32be(b, wOff + 4) / 65536);
        }
      }
      if ((!info.width || !info.height) && entry && entry.start + 28 <= entry.end) {
        info.width = u16be(b, entry.start + 24);
        info.height = u16be(b, entry.start + 26);
      }
      const timescale = mdhd ? (b[mdhd.start] === 1 ? u32be(b, mdhd.start + 20) : u32be(b, mdhd.start + 12)) : 0;
      const stts = stbl && child(b, stbl, "stts");
      if (stts && timescale) {
        const n = u32be(b, stts.start + 4);
        let samples = 0;
        let ticks = 0;
        const deltas = new Set<number>();
        for (let i = 0; i < n && stts.start + 16 + i * 8 <= stts.end; i++) {
          const c = u32be(b, stts.start + 8 + i * 8);
          const d = u32be(b, stts.start + 12 + i * 8);
          samples += c;
          ticks += c * d;
          deltas.add(d);
        }
        // Constant rate: timescale/delta exactly; otherwise the average over the track.
        if (deltas.size === 1 && ticks) info.frameRate = fraction(timescale, [...deltas][0]!);
        else if (ticks) info.frameRate = fraction(timescale * samples, ticks);
      }
    } else if (handler === "soun" && !info.audioCodec) {
      let codec = MP4_CODECS[fourcc] ?? fourcc.trim();
      if (fourcc === "mp4a" && entry) {
        const oti = esdsObjectType(b, entry);
        if (oti !== undefined && OTI[oti]) codec = OTI[oti]!;
      }
      info.audioCodec = codec;
    }
  }

  const udta = child(b, root, "udta");
  const meta = udta && child(b, udta, "meta");
  if (meta) {
    // ISO meta is a full box (4 bytes of version and flags); QuickTime's is not.
    const skip = ascii(b, meta.start + 4, 4) === "hdlr" ? 0 : 4;
    const ilst = child(b, meta, "ilst", skip);
    const nam = ilst && child(b, ilst, "\u00a9nam");
    const data = nam && child(b, nam, "data");
    if (data && data.end > data.start + 8) info.title = new TextDecoder().decode(b.subarray(data.start + 8, data.end));
  }
  return info;
}

/** The objectTypeIndication in an mp4a sample entry's esds descriptor. */
function esdsObjectType(b: Uint8Array, entry: Box): number | undefined {
  // Audio sample entry: 8 (reserved, data reference) + 20 (version ... sample rate) before its boxes.
  let esds: Box | undefined;
  try {
    esds = child(b, entry, "esds", 28);
  } catch {
    return undefined;
  }
  if (!esds) return undefined;
  let p = esds.start + 4;
  const len = () => {
    let n = 0;
    for (let i = 0; i < 4 && p < esds!.end; i++) {
      const c = b[p++]!;
      n = (n << 7) | (c & 0x7f);
      if (!(c & 0x80)) break;
    }
    return n;
  };
  while (p < esds.end) {
    const tag = b[p++]!;
    len();
    if (tag === 0x03) {
      p += 2; // ES_ID
      const flags = b[p++]!;
      if (flags & 0x80) p += 2;
      if (flags & 0x40) p += 1 + b[p]!;
      if (flags & 0x20) p += 2;
    } else if (tag === 0x04) return b[p];
    else return undefined;
  }
  return undefined;
}

// ---------------------------------------------------------------- Matroska / WebM

const ID = {
  Segment: 0x18538067, Info: 0x1549a966, Tracks: 0x1654ae6b, Cluster: 0x1f43b675, DocType: 0x4282,
  TimestampScale: 0x2ad7b1, Duration: 0x4489, DateUTC: 0x4461, Title: 0x7ba9,
  TrackEntry: 0xae, TrackType: 0x83, CodecID: 0x86, DefaultDuration: 0x23e383, Video: 0xe0, PixelWidth: 0xb0, PixelHeight: 0xba,
};

const MKV_CODECS: Record<string, string> = {
  "V_MPEG4/ISO/AVC": "h264", "V_MPEGH/ISO/HEVC": "hevc", V_VP8: "vp8", V_VP9: "vp9", V_AV1: "av1", "V_MPEG4/ISO/ASP": "mpeg4",
  V_MPEG2: "mpeg2video", V_THEORA: "theora", V_MJPEG: "mjpeg",
  A_AAC: "aac", A_OPUS: "opus", A_VORBIS: "vorbis", "A_MPEG/L3": "mp3", "A_MPEG/L2": "mp2", A_FLAC: "flac", A_AC3: "ac3", A_EAC3: "eac3", A_DTS: "dts",
  "A_PCM/INT/LIT": "pcm_s16le",
};

interface El {
  id: number;
  /** Data start and size (-1: unknown). */
  data: number;
  size: number;
}

function vint(b: Uint8Array, p: number, keepMarker: boolean): { value: number; len: number; unknown: boolean } | undefined {
  const first = b[p];
  if (first === undefined || first === 0) return undefined;
  let len = 1;
  while (len <= 8 && !(first & (0x80 >> (len - 1)))) len++;
  if (len > 8 || p + len > b.length) return undefined;
  let value = keepMarker ? first : first & (0xff >> len);
  let allOnes = value === (0xff >> len);
  for (let i = 1; i < len; i++) {
    value = value * 256 + b[p + i]!;
    if (b[p + i] !== 0xff) allOnes = false;
  }
  return { value, len, unknown: !keepMarker && allOnes };
}

function header(b: Uint8Array, p: number): (El & { next: number }) | undefined {
  const id = vint(b, p, true);
  if (!id) return undefined;
  const size = vint(b, p + id.len, false);
  if (!size) return undefined;
  const data = p + id.len + size.len;
  return { id: id.value, data, size: size.unknown ? -1 : size.value, next: size.unknown ? -1 : data + size.value };
}

function* elements(b: Uint8Array, from: number, to: number): Generator<El> {
  let p = from;
  while (p < to) {
    const h = header(b, p);
    if (!h || h.size < 0 || h.next > to) throw new Corrupt("Matroska: element runs past its parent");
    yield h;
    p = h.next;
  }
}

const uint = (b: Uint8Array, e: El) => {
  let v = 0;
  for (let i = 0; i < e.size; i++) v = v * 256 + b[e.data + i]!;
  return v;
};
const float = (b: Uint8Array, e: El) => {
  const dv = new DataView(b.buffer, b.byteOffset + e.data, e.size);
  return e.size === 4 ? dv.getFloat32(0) : e.size === 8 ? dv.getFloat64(0) : NaN;
};
const str = (b: Uint8Array, e: El) => new TextDecoder().decode(b.subarray(e.data, e.data + e.size)).replace(/\0+$/, "");

async function matroska(src: Source): Promise<VideoInfo> {
  const head = await src.read(0, 4096);
  const ebml = header(head, 0);
  if (!ebml || ebml.size < 0 || ebml.next > head.length) throw new Corrupt("Matroska: bad EBML header");
  let docType = "matroska";
  for (const e of elements(head, ebml.data, ebml.next)) if (e.id === ID.DocType) docType = str(head, e);
  const seg = header(await src.read(ebml.next, 16), 0);
  if (!seg || seg.id !== ID.Segment) throw new Corrupt("Matroska: no Segment");
  const segStart = ebml.next + seg.data;
  const segEnd = seg.size < 0 ? src.size : Math.min(src.size, segStart + seg.size);
  const info: VideoInfo = { container: docType === "webm" ? "webm" : "matroska" };
  let pos = segStart;
  let haveInfo = false;
  let haveTracks = false;
  while (pos < segEnd && !(haveInfo && haveTracks)) {
    const h = header(await src.read(pos, 16), 0);
    if (!h) throw new Corrupt("Matroska: bad element header");
    if (h.size < 0) break; // an unknown-size Cluster: the headers we want come before it
    const dataAt = pos + h.data;
    if (h.id === ID.Info || h.id === ID.Tracks) {
      if (h.size > MAX_HEADER) throw new Corrupt("Matroska: header element too large");
      if (dataAt + h.size > src.size) throw new Corrupt("Matroska: truncated");
      const b = await src.read(dataAt, h.size);
      if (h.id === ID.Info) {
        haveInfo = true;
        parseInfo(b, info);
      } else {
        haveTracks = true;
        parseTracks(b, info);
      }
    }
    pos = dataAt + h.size;
  }
  if (!haveTracks) throw new Corrupt("Matroska: no Tracks (truncated?)");
  return info;
}

function parseInfo(b: Uint8Array, info: VideoInfo) {
  let scale = 1_000_000;
  let duration: number | undefined;
  for (const e of elements(b, 0, b.length)) {
    if (e.id === ID.TimestampScale) scale = uint(b, e);
    else if (e.id === ID.Duration) duration = float(b, e);
    else if (e.id === ID.Title) info.title = str(b, e);
    else if (e.id === ID.DateUTC && e.size === 8) {
      const ns = new DataView(b.buffer, b.byteOffset + e.data, 8).getBigInt64(0);
      info.created = new Date(Date.UTC(2001, 0, 1) + Number(ns / 1_000_000n)).toISOString();
    }
  }
  if (duration !== undefined && Number.isFinite(duration)) info.duration = (duration * scale) / 1e9;
}

function parseTracks(b: Uint8Array, info: VideoInfo) {
  for (const t of elements(b, 0, b.length)) {
    if (t.id !== ID.TrackEntry) continue;
    let type = 0;
    let codec = "";
    let dd = 0;
    let w = 0;
    let h = 0;
    for (const e of elements(b, t.data, t.data + t.size)) {
      if (e.id === ID.TrackType) type = uint(b, e);
      else if (e.id === ID.CodecID) codec = str(b, e);
      else if (e.id === ID.DefaultDuration) dd = uint(b, e);
      else if (e.id === ID.Video)
        for (const v of elements(b, e.data, e.data + e.size)) {
          if (v.id === ID.PixelWidth) w = uint(b, v);
          else if (v.id === ID.PixelHeight) h = uint(b, v);
        }
    }
    if (type === 1 && !info.videoCodec) {
      info.videoCodec = MKV_CODECS[codec] ?? codec;
      if (w && h) [info.width, info.height] = [w, h];
      if (dd) info.frameRate = rateOfFrameDuration(dd);
    } else if (type === 2 && !info.audioCodec) info.audioCodec = MKV_CODECS[codec] ?? codec;
  }
}

/** A frame duration in ns as a fraction: whole rates and the NTSC n*1000/1001 rates exactly. */
export function rateOfFrameDuration(ns: number): string {
  const fps = 1e9 / ns;
  if (Math.abs(fps - Math.round(fps)) < 0.001) return `${Math.round(fps)}/1`;
  const ntsc = (fps * 1001) / 1000;
  if (Math.abs(ntsc - Math.round(ntsc)) < 0.01) return `${Math.round(ntsc) * 1000}/1001`;
  return fraction(1e9, ns);
}
