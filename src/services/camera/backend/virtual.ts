// The virtual board's cameras: a generated test pattern (eight colour bars, a bar
// that moves one step a frame, and the frame counter as 32 black-or-white blocks
// along the top, most significant first) in YUYV, and in MJPEG when libturbojpeg
// is there to encode it, at 640x480 and 1280x720, 30 or 15 fps. Brightness,
// contrast, saturation and hue act on the pattern.
//
// Cameras are the configured ones plus, when a plug directory is configured, one
// per file in it (its name the file's first line): creating or removing a file is
// plugging or unplugging, noticed through an inotify watch on the event source like
// /dev on a board.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as tj from "../../../ffi/turbojpeg";
import type { Logger } from "../../../core/log";
import { watchDirectory } from "./dirwatch";
import {
  UnsupportedFormat, type CameraBackend, type CameraFormat, type Capability, type CapturedFrame, type DeviceDesc,
  type FormatName, type FrameSize, type OpenDevice,
} from "./types";

export interface VirtualOptions {
  /** Names of the cameras always present. */
  cameras: string[];
  /** A directory whose files are plugged cameras (optional). */
  plugDir?: string;
  log: Logger;
}

const SIZES: FrameSize[] = [
  { width: 640, height: 480, fps: [30, 15] },
  { width: 1280, height: 720, fps: [30, 15] },
];

/** Block size of the frame counter's bits. */
export const COUNTER_BLOCK = 16;
export const COUNTER_BITS = 32;

/** Decodes the frame counter from a frame's luma (the top row of blocks). */
export function readCounter(luma: (x: number, y: number) => number): number {
  let n = 0;
  for (let b = 0; b < COUNTER_BITS; b++) n = (n * 2) + (luma(b * COUNTER_BLOCK + COUNTER_BLOCK / 2, COUNTER_BLOCK / 2) > 128 ? 1 : 0);
  return n >>> 0;
}

// 75% colour bars in BT.601 YCbCr: white, yellow, cyan, green, magenta, red, blue, black.
const BARS: [number, number, number][] = [
  [180, 128, 128], [162, 44, 142], [131, 156, 44], [112, 72, 58], [84, 184, 198], [65, 100, 212], [35, 212, 114], [16, 128, 128],
];

const clamp = (v: number) => (v < 0 ? 0 : v > 255 ? 255 : v | 0);

const PROPS = ["brightness", "contrast", "saturation", "hue", "sharpness"] as const;

export class VirtualBackend implements CameraBackend {
  readonly kind = "virtual" as const;
  private unwatch?: () => void;

  constructor(private readonly o: VirtualOptions) {}

  list(): DeviceDesc[] {
    const out: DeviceDesc[] = this.o.cameras.map((name, i) => ({ key: `virtual:${i}`, name, builtin: true }));
    if (this.o.plugDir) {
      let files: string[] = [];
      try {
        files = readdirSync(this.o.plugDir).filter((f) => !f.startsWith(".")).sort();
      } catch {}
      for (const f of files) {
        let name = f;
        try {
          name = readFileSync(join(this.o.plugDir, f), "utf8").split("\n")[0]!.trim() || f;
        } catch {}
        out.push({ key: `virtual:plug:${f}`, name, builtin: false });
      }
    }
    return out;
  }

  watch(onChange: () => void): () => void {
    if (!this.o.plugDir) return () => {};
    this.unwatch = watchDirectory(this.o.plugDir, 50, onChange, this.o.log);
    return this.unwatch;
  }

  formats(): Partial<Record<FormatName, FrameSize[]>> {
    const out: Partial<Record<FormatName, FrameSize[]>> = { YUV: SIZES };
    if (tj.available()) out.JPEG = SIZES;
    return out;
  }

  open(key: string): OpenDevice {
    if (!this.list().some((d) => d.key === key)) throw new Error(`no virtual camera ${key}`);
    return new VirtualDevice(this.formats());
  }

  close(): void {
    this.unwatch?.();
  }
}

class VirtualDevice implements OpenDevice {
  private format: CameraFormat = { width: 640, height: 480, format: "YUV", fps: 30 };
  private props: Record<string, Capability> = Object.fromEntries(
    PROPS.map((p) => [p, { min: 0, max: 255, step: 1, default: p === "sharpness" ? 0 : 128, value: p === "sharpness" ? 0 : 128 }]),
  );
  private timer?: ReturnType<typeof setTimeout>;
  private base?: { y: Uint8Array; u: Uint8Array; v: Uint8Array };
  private work?: tj.YuvPlanes;
  private yuyv?: Buffer;
  streaming = false;

  constructor(private readonly offered: Partial<Record<FormatName, FrameSize[]>>) {}

  formats() {
    return this.offered;
  }

  getFormat(): CameraFormat {
    return { ...this.format };
  }

  setFormat(f: CameraFormat): CameraFormat {
    const size = this.offered[f.format]?.find((s) => s.width === f.width && s.height === f.height);
    if (!size || !size.fps.includes(f.fps)) throw new UnsupportedFormat(`${f.format} ${f.width}x${f.height} at ${f.fps} fps is not offered`);
    this.format = { ...f };
    this.base = undefined;
    return this.getFormat();
  }

  frameSize(): number {
    const { width, height } = this.format;
    return this.format.format === "YUV" ? width * height * 2 : Number(width * height * 2);
  }

  properties(): Record<string, Capability> {
    return structuredClone(this.props);
  }

  setProperty(name: string, value: number): number {
    const p = this.props[name];
    if (!p) throw new RangeError(`no property ${name}`);
    p.value = Math.min(p.max, Math.max(p.min, Math.round(value)));
    this.base = undefined;
    return p.value;
  }

  /** The pattern's planes (4:2:2) with the properties applied; the counter and bar are drawn per frame. */
  private pattern() {
    if (this.base) return this.base;
    const { width: w, height: h } = this.format;
    const cw = w >> 1;
    const val = (n: string) => this.props[n]!.value!;
    const bright = val("brightness") - 128, contrast = val("contrast") / 128, sat = val("saturation") / 128;
    const hue = ((val("hue") - 128) / 128) * Math.PI;
    const cos = Math.cos(hue), sin = Math.sin(hue);
    const y = new Uint8Array(w * h), u = new Uint8Array(cw * h), v = new Uint8Array(cw * h);
    for (let x = 0; x < w; x++) {
      const [by, bu, bv] = BARS[Math.min(7, Math.floor((x * 8) / w))]!;
      const Y = clamp((by - 16) * contrast + 16 + bright);
      for (let r = 0; r < h; r++) y[r * w + x] = Y;
    }
    for (let x = 0; x < cw; x++) {
      const [, bu, bv] = BARS[Math.min(7, Math.floor((x * 16) / w))]!;
      const du = (bu - 128) * sat, dv = (bv - 128) * sat;
      const U = clamp(128 + du * cos - dv * sin), V = clamp(128 + du * sin + dv * cos);
      for (let r = 0; r < h; r++) {
        u[r * cw + x] = U;
        v[r * cw + x] = V;
      }
    }
    this.base = { y, u, v };
    return this.base;
  }

  /** Draws frame n into planar working buffers. */
  private drawPlanes(n: number): tj.YuvPlanes {
    const { width: w, height: h } = this.format;
    const base = this.pattern();
    const work = this.work && this.work.width === w && this.work.height === h
      ? this.work
      : (this.work = { width: w, height: h, y: new Uint8Array(w * h), u: new Uint8Array((w >> 1) * h), v: new Uint8Array((w >> 1) * h), subsamp: tj.TJSAMP_422 });
    work.y.set(base.y);
    work.u.set(base.u);
    work.v.set(base.v);
    this.stamp(n, (x, yy, val) => (work.y[yy * w + x] = val), (cx, yy) => {
      work.u[yy * (w >> 1) + cx] = 128;
      work.v[yy * (w >> 1) + cx] = 128;
    });
    return work;
  }

  /** Counter blocks and the moving bar, through pixel setters. */
  private stamp(n: number, setY: (x: number, y: number, v: number) => void, grayC: (cx: number, y: number) => void): void {
    const { width: w, height: h } = this.format;
    for (let b = 0; b < COUNTER_BITS; b++) {
      const on = (n >>> (COUNTER_BITS - 1 - b)) & 1;
      for (let yy = 0; yy < COUNTER_BLOCK; yy++) {
        for (let x = b * COUNTER_BLOCK; x < (b + 1) * COUNTER_BLOCK && x < w; x++) setY(x, yy, on ? 235 : 16);
        for (let cx = (b * COUNTER_BLOCK) >> 1; cx < ((b + 1) * COUNTER_BLOCK) >> 1 && cx < w >> 1; cx++) grayC(cx, yy);
      }
    }
    const bx = (n * 4) % w;
    for (let yy = COUNTER_BLOCK; yy < h; yy++) for (let x = bx; x < bx + 4 && x < w; x++) setY(x, yy, 235);
  }

  private frame(n: number): Buffer {
    const { width: w, height: h, format } = this.format;
    if (format === "JPEG") return tj.encodeYuvPlanes(this.drawPlanes(n), 85);
    const size = w * h * 2;
    if (!this.yuyv || this.yuyv.length !== size) this.yuyv = Buffer.alloc(size);
    const out = this.yuyv;
    const base = this.pattern();
    const cw = w >> 1;
    const total = cw * h;
    const { y, u, v } = base;
    for (let i = 0, o = 0; i < total; i++, o += 4) {
      out[o] = y[2 * i]!;
      out[o + 1] = u[i]!;
      out[o + 2] = y[2 * i + 1]!;
      out[o + 3] = v[i]!;
    }
    this.stamp(n, (x, yy, val) => (out[(yy * w + x) * 2] = val), (cx, yy) => {
      out[(yy * cw + cx) * 4 + 1] = 128;
      out[(yy * cw + cx) * 4 + 3] = 128;
    });
    return out;
  }

  start(onFrame: (f: CapturedFrame) => void, onError: (e: Error) => void): void {
    if (this.streaming) return;
    this.streaming = true;
    const interval = 1000 / this.format.fps;
    const t0 = performance.now();
    let n = 0;
    const tick = () => {
      if (!this.streaming) return;
      try {
        const data = this.frame(n);
        onFrame({ data, deviceSequence: n, timestampUs: process.hrtime.bigint() / 1000n });
      } catch (e) {
        this.stop();
        onError(e as Error);
        return;
      }
      n++;
      // Frame n is due at t0 + n * interval; a late frame is not made up for twice.
      const due = t0 + n * interval;
      this.timer = setTimeout(tick, Math.max(0, due - performance.now()));
    };
    this.timer = setTimeout(tick, 0);
  }

  stop(): void {
    this.streaming = false;
    clearTimeout(this.timer);
  }

  close(): void {
    this.stop();
  }
}
