// Cameras through V4L2: capture nodes under /dev found by VIDIOC_QUERYCAP, hotplug
// through an inotify watch of /dev (on the event source), formats from
// ENUM_FMT/ENUM_FRAMESIZES/ENUM_FRAMEINTERVALS, S_FMT and S_PARM, controls through
// QUERYCTRL/G_CTRL/S_CTRL, and MMAP streaming whose buffers are dequeued on the
// event source (O_NONBLOCK DQBUF when the node is readable). A frame is handed out
// as a view over the driver's buffer and queued again after the callback: the
// service's copy into shared memory is the only copy.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import * as v4l2 from "../../../ffi/v4l2";
import { mmap, type Mapping } from "../../../ffi/shm";
import { watch, type Watch } from "../../../ffi/loop";
import type { Logger } from "../../../core/log";
import * as ino from "../../../ffi/inotify";
import { watchDirectory } from "./dirwatch";
import {
  FOURCC, UnsupportedFormat, type CameraBackend, type CameraFormat, type Capability, type CapturedFrame, type DeviceDesc,
  type FormatName, type FrameSize, type OpenDevice,
} from "./types";

const C = { ...v4l2.CID, ...v4l2.CameraCID };
/** Each spec property and the V4L2 controls that carry it, first found wins. */
export const PROPERTY_CONTROLS: Record<string, number[]> = {
  sharpness: [C.SHARPNESS],
  autoExposure: [C.EXPOSURE_AUTO],
  autoFocus: [C.FOCUS_AUTO],
  autoWhiteBalance: [C.AUTO_WHITE_BALANCE],
  backlightCompensation: [C.BACKLIGHT_COMPENSATION],
  brightness: [C.BRIGHTNESS],
  contrast: [C.CONTRAST],
  exposure: [C.EXPOSURE_ABSOLUTE, C.EXPOSURE],
  focusAbsolute: [C.FOCUS_ABSOLUTE],
  frequency: [C.POWER_LINE_FREQUENCY],
  gain: [C.GAIN],
  gamma: [C.GAMMA],
  hue: [C.HUE],
  pan: [C.PAN_ABSOLUTE],
  saturation: [C.SATURATION],
  tilt: [C.TILT_ABSOLUTE],
  whiteBalanceTemperature: [C.WHITE_BALANCE_TEMPERATURE],
  zoomAbsolute: [C.ZOOM_ABSOLUTE],
};

/** Sizes offered from a stepwise or continuous range. */
const COMMON_SIZES = [[320, 240], [640, 480], [800, 600], [1280, 720], [1920, 1080]] as const;
const NAME_OF: Record<string, FormatName> = { YUYV: "YUV", MJPG: "JPEG" };
const BUFFERS = 4;

export interface LinuxOptions {
  devDir: string;
  log: Logger;
}

function withDevice<T>(path: string, fn: (fd: number) => T): T {
  const fd = v4l2.openDevice(path);
  try {
    return fn(fd);
  } finally {
    v4l2.close(fd);
  }
}

function isCamera(cap: v4l2.Capability): boolean {
  const need = v4l2.Cap.VIDEO_CAPTURE | v4l2.Cap.STREAMING;
  return (cap.deviceCaps & need) === need;
}

function fpsList(fd: number, pixelformat: number, width: number, height: number): number[] {
  try {
    const iv = v4l2.enumFrameIntervals(fd, pixelformat, width, height);
    const list = iv.type === v4l2.FRMIVAL_TYPE_DISCRETE ? iv.fps : [...new Set([iv.maxFps, Math.min(30, iv.maxFps), iv.minFps])];
    return [...new Set(list.filter((f) => f > 0))].sort((a, b) => b - a);
  } catch {
    return [];
  }
}

export function enumerate(fd: number): Partial<Record<FormatName, FrameSize[]>> {
  const out: Partial<Record<FormatName, FrameSize[]>> = {};
  for (const f of v4l2.enumFormats(fd)) {
    const name = NAME_OF[f.fourcc];
    if (!name || out[name]) continue;
    const fs = v4l2.enumFrameSizes(fd, f.pixelformat);
    const sizes = fs.type === v4l2.FRMSIZE_TYPE_DISCRETE
      ? fs.sizes
      : COMMON_SIZES.filter(([w, h]) => w >= fs.minWidth && w <= fs.maxWidth && h >= fs.minHeight && h <= fs.maxHeight)
        .map(([width, height]) => ({ width, height }));
    out[name] = sizes.map(({ width, height }) => ({ width, height, fps: fpsList(fd, f.pixelformat, width, height) }));
  }
  return out;
}

export class LinuxBackend implements CameraBackend {
  readonly kind = "linux" as const;
  private unwatch?: () => void;

  constructor(private readonly o: LinuxOptions) {}

  list(): DeviceDesc[] {
    let nodes: string[];
    try {
      nodes = readdirSync(this.o.devDir).filter((n) => /^video\d+$/.test(n));
    } catch {
      return [];
    }
    nodes.sort((a, b) => Number(a.slice(5)) - Number(b.slice(5)));
    const out: DeviceDesc[] = [];
    for (const n of nodes) {
      const path = join(this.o.devDir, n);
      try {
        const desc = withDevice(path, (fd) => {
          const cap = v4l2.querycap(fd);
          if (!isCamera(cap)) return undefined;
          const formats = v4l2.enumFormats(fd).map((f) => f.fourcc);
          if (!formats.some((f) => f in NAME_OF)) return undefined;
          return { key: path, name: cap.card, builtin: !cap.busInfo.startsWith("usb-") };
        });
        if (desc) out.push(desc);
      } catch (e) {
        // A node going away while we look, or one we may not open.
        this.o.log.debug({ node: path, err: e }, "not a usable camera node");
      }
    }
    return out;
  }

  watch(onChange: () => void): () => void {
    // udev may still be setting a new node's permissions: look 150 ms after the last change.
    // IN_ATTRIB too: a node becomes usable when udev has set its group and mode.
    this.unwatch = watchDirectory(this.o.devDir, 150, onChange, this.o.log, { match: (n) => /^video\d+$/.test(n), mask: ino.DIR_CHANGES | ino.IN_ATTRIB });
    return this.unwatch;
  }

  formats(key: string) {
    return withDevice(key, enumerate);
  }

  open(key: string): OpenDevice {
    return new LinuxDevice(key, this.o.log);
  }

  close(): void {
    this.unwatch?.();
  }
}

class LinuxDevice implements OpenDevice {
  private fd: number;
  private maps: Mapping[] = [];
  private w?: Watch;
  private cachedFormats?: Partial<Record<FormatName, FrameSize[]>>;
  streaming = false;

  constructor(readonly path: string, private readonly log: Logger) {
    this.fd = v4l2.openDevice(path);
  }

  formats() {
    return (this.cachedFormats ??= enumerate(this.fd));
  }

  getFormat(): CameraFormat {
    const f = v4l2.getFormat(this.fd);
    let fps = 0;
    try {
      fps = v4l2.getFrameRate(this.fd);
    } catch {}
    return { width: f.width, height: f.height, format: NAME_OF[v4l2.fourccString(f.pixelformat)] ?? "YUV", fps };
  }

  setFormat(want: CameraFormat): CameraFormat {
    const pixelformat = v4l2.fourcc(FOURCC[want.format]);
    const sizes = this.formats()[want.format];
    const size = sizes?.find((s) => s.width === want.width && s.height === want.height);
    if (!size) throw new UnsupportedFormat(`${want.format} ${want.width}x${want.height} is not offered`);
    if (size.fps.length && !size.fps.some((f) => Math.abs(f - want.fps) < 0.5))
      throw new UnsupportedFormat(`${want.format} ${want.width}x${want.height} is offered at ${size.fps.join(", ")} fps`);
    const tried = v4l2.setFormat(this.fd, { width: want.width, height: want.height, pixelformat }, v4l2.BUF_TYPE_VIDEO_CAPTURE, true);
    if (tried.width !== want.width || tried.height !== want.height || tried.pixelformat !== pixelformat)
      throw new UnsupportedFormat(`the driver offers ${tried.width}x${tried.height} ${v4l2.fourccString(tried.pixelformat)}`);
    v4l2.setFormat(this.fd, { width: want.width, height: want.height, pixelformat });
    try {
      v4l2.setFrameRate(this.fd, want.fps);
    } catch (e) {
      this.log.debug({ err: e }, "VIDIOC_S_PARM refused; the driver keeps its rate");
    }
    return this.getFormat();
  }

  frameSize(): number {
    return v4l2.getFormat(this.fd).sizeimage;
  }

  private control(name: string): v4l2.ControlInfo | undefined {
    for (const id of PROPERTY_CONTROLS[name] ?? []) {
      try {
        const info = v4l2.queryCtrl(this.fd, id);
        if (!(info.flags & v4l2.CTRL_FLAG_DISABLED) && info.type !== v4l2.CTRL_TYPE_CTRL_CLASS && info.type !== v4l2.CTRL_TYPE_BUTTON) return info;
      } catch {}
    }
    return undefined;
  }

  properties(): Record<string, Capability> {
    const out: Record<string, Capability> = {};
    for (const name of Object.keys(PROPERTY_CONTROLS)) {
      const info = this.control(name);
      if (!info) continue;
      const cap: Capability = { min: info.minimum, max: info.maximum, step: info.step, default: info.defaultValue };
      try {
        cap.value = v4l2.getCtrl(this.fd, info.id);
      } catch {}
      out[name] = cap;
    }
    return out;
  }

  setProperty(name: string, value: number): number {
    const info = this.control(name);
    if (!info) throw new RangeError(`no control for ${name}`);
    // The spec has no automatic-gain property: a gain set by hand turns automatic gain
    // off, or the driver would keep overriding it (V4L2_CID_AUTOGAIN makes gain volatile).
    if (name === "gain") {
      try {
        if (v4l2.getCtrl(this.fd, C.AUTOGAIN) !== 0) v4l2.setCtrl(this.fd, C.AUTOGAIN, 0);
      } catch {}
    }
    v4l2.setCtrl(this.fd, info.id, value);
    return v4l2.getCtrl(this.fd, info.id);
  }

  start(onFrame: (f: CapturedFrame) => void, onError: (e: Error) => void): void {
    if (this.streaming) return;
    const n = v4l2.requestBuffers(this.fd, BUFFERS);
    try {
      for (let i = 0; i < n; i++) {
        const info = v4l2.queryBuffer(this.fd, i);
        this.maps.push(mmap(this.fd, info.length, { offset: info.offset }));
        v4l2.queueBuffer(this.fd, i);
      }
      v4l2.streamOn(this.fd);
    } catch (e) {
      this.release();
      throw e;
    }
    this.streaming = true;
    this.w = watch(this.fd, {
      readable: () => {
        for (;;) {
          let b: v4l2.BufferInfo | null;
          try {
            b = v4l2.dequeueBuffer(this.fd);
          } catch (e) {
            this.stop();
            onError(e as Error);
            return;
          }
          if (!b) return;
          try {
            if (!(b.flags & v4l2.BUF_FLAG_ERROR))
              onFrame({ data: this.maps[b.index]!.buffer.subarray(0, b.bytesused), deviceSequence: b.sequence, timestampUs: b.timestampUs });
          } catch (e) {
            this.log.error({ err: e }, "frame handler failed");
          }
          if (!this.streaming) return;
          try {
            v4l2.queueBuffer(this.fd, b.index);
          } catch (e) {
            this.stop();
            onError(e as Error);
            return;
          }
        }
      },
    });
  }

  private release(): void {
    for (const m of this.maps) m.unmap();
    this.maps = [];
    try {
      v4l2.requestBuffers(this.fd, 0);
    } catch {}
  }

  stop(): void {
    this.w?.close();
    this.w = undefined;
    if (this.streaming) {
      try {
        v4l2.streamOff(this.fd);
      } catch {}
    }
    this.streaming = false;
    this.release();
  }

  close(): void {
    this.stop();
    if (this.fd >= 0) v4l2.close(this.fd);
    this.fd = -1;
  }
}
