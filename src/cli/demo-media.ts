// The demo's sample media, made in code at demo start (no binary fixtures): two WAV
// tones with RIFF INFO tags, an MP3 with ID3v2.3 tags, and two JPEG pictures of one
// colour each. Small (about 60 KB in all), and each one is a file players open: the
// WAVs and the MP3 play (a tone, silence), the JPEGs are baseline pictures any
// decoder shows. The media indexer reads their tags and dimensions.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const latin1 = (s: string) => Buffer.from(s, "latin1");

/** A RIFF chunk: id, little-endian size, data, a pad byte for an odd size. */
function chunk(id: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.write(id, 0, "latin1");
  head.writeUInt32LE(data.length, 4);
  return Buffer.concat([head, data, data.length & 1 ? Buffer.alloc(1) : Buffer.alloc(0)]);
}

export interface Tags {
  title: string;
  artist: string;
  album: string;
  genre: string;
}

/** A mono 16-bit PCM WAV of a sine tone, tagged in a LIST INFO chunk (INAM, IART, IPRD, IGNR). */
export function wav(tags: Tags, hz: number, seconds: number, rate = 8000): Buffer {
  const n = Math.round(rate * seconds);
  const pcm = Buffer.alloc(n * 2);
  for (let i = 0; i < n; i++) {
    // A short fade in and out: no click at either end.
    const fade = Math.min(1, i / 400, (n - 1 - i) / 400);
    pcm.writeInt16LE(Math.round(Math.sin((2 * Math.PI * hz * i) / rate) * 9000 * fade), i * 2);
  }
  const fmt = Buffer.alloc(16);
  fmt.writeUInt16LE(1, 0); // PCM
  fmt.writeUInt16LE(1, 2); // mono
  fmt.writeUInt32LE(rate, 4);
  fmt.writeUInt32LE(rate * 2, 8); // bytes per second
  fmt.writeUInt16LE(2, 12); // block align
  fmt.writeUInt16LE(16, 14); // bits per sample
  const info = (id: string, s: string) => chunk(id, Buffer.concat([latin1(s), Buffer.alloc(1)]));
  const list = chunk("LIST", Buffer.concat([latin1("INFO"), info("INAM", tags.title), info("IART", tags.artist), info("IPRD", tags.album), info("IGNR", tags.genre)]));
  return chunk("RIFF", Buffer.concat([latin1("WAVE"), chunk("fmt ", fmt), list, chunk("data", pcm)]));
}

/** An MP3: an ID3v2.3 tag (TIT2, TPE1, TALB, TCON), then silent MPEG-1 Layer III frames (128 kbit/s, 44.1 kHz, 26 ms each). */
export function mp3(tags: Tags, frames: number): Buffer {
  const frame = (id: string, s: string) => {
    const body = Buffer.concat([Buffer.from([0]), latin1(s)]); // ISO-8859-1
    const head = Buffer.alloc(10);
    head.write(id, 0, "latin1");
    head.writeUInt32BE(body.length, 4);
    return Buffer.concat([head, body]);
  };
  const body = Buffer.concat([frame("TIT2", tags.title), frame("TPE1", tags.artist), frame("TALB", tags.album), frame("TCON", tags.genre)]);
  const n = body.length;
  const header = Buffer.concat([latin1("ID3"), Buffer.from([3, 0, 0, (n >>> 21) & 127, (n >>> 14) & 127, (n >>> 7) & 127, n & 127])]);
  // 0xFFFB9000: MPEG-1 Layer III, no CRC, 128 kbit/s, 44.1 kHz, no padding: 417 bytes a frame; zero side information and data decode to silence.
  const audio = Buffer.alloc(417);
  audio.set([0xff, 0xfb, 0x90, 0x00]);
  return Buffer.concat([header, body, ...Array.from({ length: frames }, () => audio)]);
}

/**
 * A baseline JPEG of one colour, width x height (multiples of 8): three components
 * without subsampling, every 8x8 block its DC term alone. The DC quantizer is 8, so a
 * block's quantized DC is the component's level less 128; only the first block of
 * each component has a difference to code. Huffman tables: DC categories 0..11 as
 * 4-bit codes, AC end-of-block alone as a 1-bit code.
 */
export function jpeg(width: number, height: number, [r, g, b]: [number, number, number]): Buffer {
  const seg = (marker: number, data: number[] | Buffer) => {
    const d = Buffer.from(data);
    return Buffer.concat([Buffer.from([0xff, marker, (d.length + 2) >> 8, (d.length + 2) & 255]), d]);
  };
  const ycc = [
    0.299 * r + 0.587 * g + 0.114 * b,
    128 - 0.168736 * r - 0.331264 * g + 0.5 * b,
    128 + 0.5 * r - 0.418688 * g - 0.081312 * b,
  ].map((v) => Math.max(-127, Math.min(127, Math.round(v) - 128)));
  const jfif = seg(0xe0, [...latin1("JFIF\0"), 1, 1, 0, 0, 1, 0, 1, 0, 0]);
  const dqt = seg(0xdb, [0, 8, ...Array(63).fill(1)]);
  const sof = seg(0xc0, [8, height >> 8, height & 255, width >> 8, width & 255, 3, 1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0]);
  // DC table 0: 12 codes of length 4 (categories 0..11); AC table 0: one code of length 1 (0x00, end of block).
  const dht = seg(0xc4, [0x00, 0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, ...Array.from({ length: 12 }, (_, i) => i), 0x10, 1, ...Array(15).fill(0), 0x00]);
  const sos = seg(0xda, [3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 63, 0]);
  // Entropy-coded data: per block, the DC category's code, its magnitude bits, then end of block (0).
  const bits: number[] = [];
  const put = (value: number, length: number) => {
    for (let i = length - 1; i >= 0; i--) bits.push((value >> i) & 1);
  };
  const blocks = (width / 8) * (height / 8);
  for (let i = 0; i < blocks; i++)
    for (const level of ycc) {
      const diff = i === 0 ? level : 0;
      const cat = diff === 0 ? 0 : Math.floor(Math.log2(Math.abs(diff))) + 1;
      put(cat, 4);
      if (cat) put(diff > 0 ? diff : diff + (1 << cat) - 1, cat);
      put(0, 1);
    }
  while (bits.length % 8) bits.push(1);
  const scan: number[] = [];
  for (let i = 0; i < bits.length; i += 8) {
    const byte = bits.slice(i, i + 8).reduce((a, bit) => (a << 1) | bit, 0);
    scan.push(byte);
    if (byte === 0xff) scan.push(0); // byte stuffing
  }
  return Buffer.concat([Buffer.from([0xff, 0xd8]), jfif, dqt, sof, dht, sos, Buffer.from(scan), Buffer.from([0xff, 0xd9])]);
}

/** What the demo writes below its media directory: path, bytes. */
export function sampleMedia(): [string, Buffer][] {
  const album = "devservices demo";
  return [
    ["music/A4 tone.wav", wav({ title: "A4 tone", artist: "Virtual board", album, genre: "Test tones" }, 440, 1.5)],
    ["music/E5 tone.wav", wav({ title: "E5 tone", artist: "Virtual board", album, genre: "Test tones" }, 659.26, 1)],
    ["music/Silence.mp3", mp3({ title: "Silence", artist: "Virtual board", album, genre: "Ambient" }, 40)],
    ["pictures/red.jpg", jpeg(64, 48, [200, 40, 40])],
    ["pictures/blue.jpg", jpeg(32, 32, [40, 80, 200])],
  ];
}

/** Writes the sample media below dir; a file that already holds its bytes (a kept --state-dir) is left as it is. */
export function writeSampleMedia(dir: string): string[] {
  const paths: string[] = [];
  for (const [rel, data] of sampleMedia()) {
    const path = join(dir, rel);
    paths.push(path);
    try {
      if (readFileSync(path).equals(data)) continue;
    } catch {
      /* not there yet */
    }
    mkdirSync(join(path, ".."), { recursive: true });
    writeFileSync(path, data);
  }
  return paths;
}
