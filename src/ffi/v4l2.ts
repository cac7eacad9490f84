// Video4Linux2 (linux/videodev2.h): capabilities, formats, frame sizes, controls and
// single-planar streaming capture through mmap'ed driver buffers. Devices are opened
// O_NONBLOCK: dequeueBuffer()/MmapCapture.dequeue() return null when no frame is
// ready, and watchFrames() delivers frames on the platform's event source.
import { EINVAL, IOR, IOW, IOWR, O_CLOEXEC, O_NONBLOCK, O_RDWR, closeFd, ioctl, ioctlAgain, openFile } from "./libc.ts";
import type { Watch } from "./loop.ts";
import { watchItems, type ReaderOptions } from "./readers.ts";
import { mmap, type Mapping } from "./shm.ts";
import { Struct, scalar, struct } from "./struct.ts";

/** enum v4l2_buf_type (the single-planar ones used here) */
export const BUF_TYPE_VIDEO_CAPTURE = 1, BUF_TYPE_VIDEO_OUTPUT = 2;
/** enum v4l2_memory */
export const MEMORY_MMAP = 1, MEMORY_USERPTR = 2, MEMORY_DMABUF = 4;
/** enum v4l2_field */
export const FIELD_ANY = 0, FIELD_NONE = 1;
/** enum v4l2_frmsizetypes */
export const FRMSIZE_TYPE_DISCRETE = 1, FRMSIZE_TYPE_CONTINUOUS = 2, FRMSIZE_TYPE_STEPWISE = 3;

/** Capability bits (v4l2_capability.capabilities / device_caps). */
export const Cap = {
  VIDEO_CAPTURE: 0x00000001,
  VIDEO_OUTPUT: 0x00000002,
  VIDEO_CAPTURE_MPLANE: 0x00001000,
  VIDEO_OUTPUT_MPLANE: 0x00002000,
  VIDEO_M2M: 0x00008000,
  META_CAPTURE: 0x00800000,
  READWRITE: 0x01000000,
  STREAMING: 0x04000000,
  DEVICE_CAPS: 0x80000000,
} as const;

/** Buffer flags (v4l2_buffer.flags). */
export const BUF_FLAG_MAPPED = 0x1, BUF_FLAG_QUEUED = 0x2, BUF_FLAG_DONE = 0x4, BUF_FLAG_ERROR = 0x40;

/** Control ids of the user class, and the enumeration flag. */
export const CID_BASE = 0x00980900;
export const CID = { BRIGHTNESS: CID_BASE + 0, CONTRAST: CID_BASE + 1, SATURATION: CID_BASE + 2, HUE: CID_BASE + 3 } as const;
/** The camera controls of the user class and of the camera class (V4L2_CID_CAMERA_CLASS_BASE). */
export const CAMERA_CLASS_BASE = 0x009a0900;
export const CameraCID = {
  AUTO_WHITE_BALANCE: CID_BASE + 12, GAMMA: CID_BASE + 16, EXPOSURE: CID_BASE + 17, AUTOGAIN: CID_BASE + 18, GAIN: CID_BASE + 19,
  POWER_LINE_FREQUENCY: CID_BASE + 24, WHITE_BALANCE_TEMPERATURE: CID_BASE + 26, SHARPNESS: CID_BASE + 27,
  BACKLIGHT_COMPENSATION: CID_BASE + 28,
  EXPOSURE_AUTO: CAMERA_CLASS_BASE + 1, EXPOSURE_ABSOLUTE: CAMERA_CLASS_BASE + 2, PAN_ABSOLUTE: CAMERA_CLASS_BASE + 8,
  TILT_ABSOLUTE: CAMERA_CLASS_BASE + 9, FOCUS_ABSOLUTE: CAMERA_CLASS_BASE + 10, FOCUS_AUTO: CAMERA_CLASS_BASE + 12,
  ZOOM_ABSOLUTE: CAMERA_CLASS_BASE + 13,
} as const;
/** enum v4l2_frmivaltypes, and v4l2_captureparm.capability's frame-interval bit. */
export const FRMIVAL_TYPE_DISCRETE = 1, FRMIVAL_TYPE_CONTINUOUS = 2, FRMIVAL_TYPE_STEPWISE = 3;
export const CAP_TIMEPERFRAME = 0x1000;
export const CTRL_FLAG_DISABLED = 0x0001, CTRL_FLAG_NEXT_CTRL = 0x80000000;
/** enum v4l2_ctrl_type (the common ones) */
export const CTRL_TYPE_INTEGER = 1, CTRL_TYPE_BOOLEAN = 2, CTRL_TYPE_MENU = 3, CTRL_TYPE_BUTTON = 4,
  CTRL_TYPE_INTEGER64 = 5, CTRL_TYPE_CTRL_CLASS = 6;

export const structs = {
  v4l2_capability: {
    c: "struct v4l2_capability", size: 104,
    fields: { driver: 0, card: 16, bus_info: 48, version: 80, capabilities: 84, device_caps: 88, reserved: 92 },
    lengths: { driver: 16, card: 32, bus_info: 32 },
  },
  v4l2_fmtdesc: {
    c: "struct v4l2_fmtdesc", size: 64,
    fields: { index: 0, type: 4, flags: 8, description: 12, pixelformat: 44, mbus_code: 48, reserved: 52 },
    lengths: { description: 32 },
  },
  v4l2_pix_format: {
    c: "struct v4l2_pix_format", size: 48,
    fields: {
      width: 0, height: 4, pixelformat: 8, field: 12, bytesperline: 16, sizeimage: 20, colorspace: 24, priv: 28,
      flags: 32, ycbcr_enc: 36, quantization: 40, xfer_func: 44,
    },
  },
  v4l2_format: { c: "struct v4l2_format", size: 208, fields: { type: 0, fmt: 8, "fmt.pix": 8 }, lengths: { fmt: 200, "fmt.pix": 48 } },
  v4l2_requestbuffers: {
    c: "struct v4l2_requestbuffers", size: 20,
    fields: { count: 0, type: 4, memory: 8, capabilities: 12, flags: 16, reserved: 17 },
  },
  v4l2_buffer: {
    c: "struct v4l2_buffer", size: 88,
    fields: {
      index: 0, type: 4, bytesused: 8, flags: 12, field: 16, timestamp: 24, "timestamp.tv_sec": 24, "timestamp.tv_usec": 32,
      timecode: 40, sequence: 56, memory: 60, m: 64, "m.offset": 64, length: 72, reserved2: 76, request_fd: 80,
    },
  },
  v4l2_queryctrl: {
    c: "struct v4l2_queryctrl", size: 68,
    fields: { id: 0, type: 4, name: 8, minimum: 40, maximum: 44, step: 48, default_value: 52, flags: 56, reserved: 60 },
    lengths: { name: 32 },
  },
  v4l2_control: { c: "struct v4l2_control", size: 8, fields: { id: 0, value: 4 } },
  v4l2_frmsizeenum: {
    c: "struct v4l2_frmsizeenum", size: 44,
    fields: {
      index: 0, pixel_format: 4, type: 8, discrete: 12, "discrete.width": 12, "discrete.height": 16,
      "stepwise.min_width": 12, "stepwise.max_width": 16, "stepwise.step_width": 20, "stepwise.min_height": 24,
      "stepwise.max_height": 28, "stepwise.step_height": 32, reserved: 36,
    },
  },
  v4l2_frmivalenum: {
    c: "struct v4l2_frmivalenum", size: 52,
    fields: {
      index: 0, pixel_format: 4, width: 8, height: 12, type: 16, "discrete.numerator": 20, "discrete.denominator": 24,
      "stepwise.min.numerator": 20, "stepwise.min.denominator": 24, "stepwise.max.numerator": 28, "stepwise.max.denominator": 32,
      reserved: 44,
    },
  },
  v4l2_streamparm: {
    c: "struct v4l2_streamparm", size: 204,
    fields: {
      type: 0, parm: 4, "parm.capture.capability": 4, "parm.capture.capturemode": 8, "parm.capture.timeperframe.numerator": 12,
      "parm.capture.timeperframe.denominator": 16, "parm.capture.readbuffers": 24,
    },
    lengths: { parm: 200 },
  },
} as const;
const S = structs;

export const ioctls = {
  VIDIOC_QUERYCAP: IOR("V", 0, S.v4l2_capability.size),
  VIDIOC_ENUM_FMT: IOWR("V", 2, S.v4l2_fmtdesc.size),
  VIDIOC_G_FMT: IOWR("V", 4, S.v4l2_format.size),
  VIDIOC_S_FMT: IOWR("V", 5, S.v4l2_format.size),
  VIDIOC_REQBUFS: IOWR("V", 8, S.v4l2_requestbuffers.size),
  VIDIOC_QUERYBUF: IOWR("V", 9, S.v4l2_buffer.size),
  VIDIOC_QBUF: IOWR("V", 15, S.v4l2_buffer.size),
  VIDIOC_DQBUF: IOWR("V", 17, S.v4l2_buffer.size),
  VIDIOC_STREAMON: IOW("V", 18, 4), // int buffer type
  VIDIOC_STREAMOFF: IOW("V", 19, 4),
  VIDIOC_G_CTRL: IOWR("V", 27, S.v4l2_control.size),
  VIDIOC_S_CTRL: IOWR("V", 28, S.v4l2_control.size),
  VIDIOC_QUERYCTRL: IOWR("V", 36, S.v4l2_queryctrl.size),
  VIDIOC_TRY_FMT: IOWR("V", 64, S.v4l2_format.size),
  VIDIOC_ENUM_FRAMESIZES: IOWR("V", 74, S.v4l2_frmsizeenum.size),
  VIDIOC_ENUM_FRAMEINTERVALS: IOWR("V", 75, S.v4l2_frmivalenum.size),
  VIDIOC_G_PARM: IOWR("V", 21, S.v4l2_streamparm.size),
  VIDIOC_S_PARM: IOWR("V", 22, S.v4l2_streamparm.size),
} as const;

/** v4l2_fourcc('Y','U','Y','V') and back. */
export function fourcc(code: string): number {
  if (code.length !== 4) throw new RangeError(`fourcc needs 4 characters: ${code}`);
  return (code.charCodeAt(0) | (code.charCodeAt(1) << 8) | (code.charCodeAt(2) << 16) | (code.charCodeAt(3) << 24)) >>> 0;
}
export function fourccString(v: number): string {
  return String.fromCharCode(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff);
}

/** Opens /dev/videoN (a path or a number), non-blocking: DQBUF answers at once. */
export function openDevice(dev: string | number): number {
  return openFile(typeof dev === "number" ? `/dev/video${dev}` : dev, O_RDWR | O_NONBLOCK | O_CLOEXEC);
}

export const close = closeFd;

export interface Capability {
  driver: string; card: string; busInfo: string;
  /** KERNEL_VERSION-encoded */
  version: number;
  capabilities: number;
  /** The opened node's capabilities (capabilities when the driver sets no DEVICE_CAPS). */
  deviceCaps: number;
}

export function querycap(fd: number): Capability {
  const c = struct(S.v4l2_capability);
  ioctl(fd, ioctls.VIDIOC_QUERYCAP, c.buf, "VIDIOC_QUERYCAP");
  const capabilities = c.u32("capabilities");
  return {
    driver: c.str("driver"), card: c.str("card"), busInfo: c.str("bus_info"), version: c.u32("version"),
    capabilities, deviceCaps: capabilities & Cap.DEVICE_CAPS ? c.u32("device_caps") : capabilities,
  };
}

export interface FormatDesc { index: number; flags: number; description: string; pixelformat: number; fourcc: string }

/** VIDIOC_ENUM_FMT until EINVAL. */
export function enumFormats(fd: number, type = BUF_TYPE_VIDEO_CAPTURE): FormatDesc[] {
  const out: FormatDesc[] = [];
  for (let index = 0; ; index++) {
    const d = struct(S.v4l2_fmtdesc).setU32("index", index).setU32("type", type);
    if (!enumIoctl(fd, ioctls.VIDIOC_ENUM_FMT, d.buf, "VIDIOC_ENUM_FMT")) return out;
    const pixelformat = d.u32("pixelformat");
    out.push({ index, flags: d.u32("flags"), description: d.str("description"), pixelformat, fourcc: fourccString(pixelformat) });
  }
}

/** ioctl that reports EINVAL (the end of an enumeration) as false. */
function enumIoctl(fd: number, req: number, b: Buffer, name: string): boolean {
  try {
    ioctl(fd, req, b, name);
    return true;
  } catch (e) {
    if ((e as { errno?: number }).errno === EINVAL) return false;
    throw e;
  }
}

export interface PixFormat {
  width: number; height: number; pixelformat: number; field: number;
  bytesperline: number; sizeimage: number; colorspace: number;
}

const pixOf = (f: Struct<typeof S.v4l2_format>) => f.nested("fmt.pix", S.v4l2_pix_format);

function decodePix(f: Struct<typeof S.v4l2_format>): PixFormat {
  const p = pixOf(f);
  return {
    width: p.u32("width"), height: p.u32("height"), pixelformat: p.u32("pixelformat"), field: p.u32("field"),
    bytesperline: p.u32("bytesperline"), sizeimage: p.u32("sizeimage"), colorspace: p.u32("colorspace"),
  };
}

export function getFormat(fd: number, type = BUF_TYPE_VIDEO_CAPTURE): PixFormat {
  const f = struct(S.v4l2_format).setU32("type", type);
  ioctl(fd, ioctls.VIDIOC_G_FMT, f.buf, "VIDIOC_G_FMT");
  return decodePix(f);
}

export interface FormatRequest { width: number; height: number; pixelformat: number; field?: number }

/** VIDIOC_S_FMT (or VIDIOC_TRY_FMT with tryOnly): returns the format the driver chose. */
export function setFormat(fd: number, req: FormatRequest, type = BUF_TYPE_VIDEO_CAPTURE, tryOnly = false): PixFormat {
  const f = struct(S.v4l2_format).setU32("type", type);
  pixOf(f).setU32("width", req.width).setU32("height", req.height).setU32("pixelformat", req.pixelformat)
    .setU32("field", req.field ?? FIELD_NONE);
  ioctl(fd, tryOnly ? ioctls.VIDIOC_TRY_FMT : ioctls.VIDIOC_S_FMT, f.buf, tryOnly ? "VIDIOC_TRY_FMT" : "VIDIOC_S_FMT");
  return decodePix(f);
}

export type FrameSizes =
  | { type: typeof FRMSIZE_TYPE_DISCRETE; sizes: { width: number; height: number }[] }
  | {
    type: typeof FRMSIZE_TYPE_STEPWISE | typeof FRMSIZE_TYPE_CONTINUOUS;
    minWidth: number; maxWidth: number; stepWidth: number; minHeight: number; maxHeight: number; stepHeight: number;
  };

/** VIDIOC_ENUM_FRAMESIZES for one pixel format. */
export function enumFrameSizes(fd: number, pixelformat: number): FrameSizes {
  const sizes: { width: number; height: number }[] = [];
  for (let index = 0; ; index++) {
    const e = struct(S.v4l2_frmsizeenum).setU32("index", index).setU32("pixel_format", pixelformat);
    if (!enumIoctl(fd, ioctls.VIDIOC_ENUM_FRAMESIZES, e.buf, "VIDIOC_ENUM_FRAMESIZES")) break;
    const type = e.u32("type");
    if (type !== FRMSIZE_TYPE_DISCRETE) {
      return {
        type: type as typeof FRMSIZE_TYPE_STEPWISE, minWidth: e.u32("stepwise.min_width"), maxWidth: e.u32("stepwise.max_width"),
        stepWidth: e.u32("stepwise.step_width"), minHeight: e.u32("stepwise.min_height"), maxHeight: e.u32("stepwise.max_height"),
        stepHeight: e.u32("stepwise.step_height"),
      };
    }
    sizes.push({ width: e.u32("discrete.width"), height: e.u32("discrete.height") });
  }
  return { type: FRMSIZE_TYPE_DISCRETE, sizes };
}

export type FrameIntervals =
  | { type: typeof FRMIVAL_TYPE_DISCRETE; fps: number[] }
  | { type: typeof FRMIVAL_TYPE_STEPWISE | typeof FRMIVAL_TYPE_CONTINUOUS; minFps: number; maxFps: number };

/** VIDIOC_ENUM_FRAMEINTERVALS for one format and size, as frames per second (interval inverted). */
export function enumFrameIntervals(fd: number, pixelformat: number, width: number, height: number): FrameIntervals {
  const fps: number[] = [];
  const rate = (num: number, den: number) => (num > 0 ? Math.round((den / num) * 100) / 100 : 0);
  for (let index = 0; ; index++) {
    const e = struct(S.v4l2_frmivalenum).setU32("index", index).setU32("pixel_format", pixelformat)
      .setU32("width", width).setU32("height", height);
    if (!enumIoctl(fd, ioctls.VIDIOC_ENUM_FRAMEINTERVALS, e.buf, "VIDIOC_ENUM_FRAMEINTERVALS")) break;
    const type = e.u32("type");
    if (type !== FRMIVAL_TYPE_DISCRETE) {
      // The longest interval is the lowest rate.
      return {
        type: type as typeof FRMIVAL_TYPE_STEPWISE,
        minFps: rate(e.u32("stepwise.max.numerator"), e.u32("stepwise.max.denominator")),
        maxFps: rate(e.u32("stepwise.min.numerator"), e.u32("stepwise.min.denominator")),
      };
    }
    fps.push(rate(e.u32("discrete.numerator"), e.u32("discrete.denominator")));
  }
  return { type: FRMIVAL_TYPE_DISCRETE, fps };
}

/** VIDIOC_G_PARM: the capture frame rate (0 when the driver does not report it). */
export function getFrameRate(fd: number, type = BUF_TYPE_VIDEO_CAPTURE): number {
  const p = struct(S.v4l2_streamparm).setU32("type", type);
  ioctl(fd, ioctls.VIDIOC_G_PARM, p.buf, "VIDIOC_G_PARM");
  const num = p.u32("parm.capture.timeperframe.numerator"), den = p.u32("parm.capture.timeperframe.denominator");
  return num > 0 ? Math.round((den / num) * 100) / 100 : 0;
}

/** VIDIOC_S_PARM with timeperframe 1/fps: returns the rate the driver chose. */
export function setFrameRate(fd: number, fps: number, type = BUF_TYPE_VIDEO_CAPTURE): number {
  const p = struct(S.v4l2_streamparm).setU32("type", type);
  // fps may be fractional (29.97): 1000/(fps*1000).
  p.setU32("parm.capture.timeperframe.numerator", 1000).setU32("parm.capture.timeperframe.denominator", Math.round(fps * 1000));
  ioctl(fd, ioctls.VIDIOC_S_PARM, p.buf, "VIDIOC_S_PARM");
  const num = p.u32("parm.capture.timeperframe.numerator"), den = p.u32("parm.capture.timeperframe.denominator");
  return num > 0 ? Math.round((den / num) * 100) / 100 : 0;
}

export interface ControlInfo {
  id: number; type: number; name: string; minimum: number; maximum: number; step: number; defaultValue: number; flags: number;
}

function decodeQueryctrl(q: Struct<typeof S.v4l2_queryctrl>): ControlInfo {
  return {
    id: q.u32("id"), type: q.u32("type"), name: q.str("name"), minimum: q.i32("minimum"), maximum: q.i32("maximum"),
    step: q.i32("step"), defaultValue: q.i32("default_value"), flags: q.u32("flags"),
  };
}

/** VIDIOC_QUERYCTRL for one control id. */
export function queryCtrl(fd: number, id: number): ControlInfo {
  const q = struct(S.v4l2_queryctrl).setU32("id", id);
  ioctl(fd, ioctls.VIDIOC_QUERYCTRL, q.buf, "VIDIOC_QUERYCTRL");
  return decodeQueryctrl(q);
}

/** Every control, through V4L2_CTRL_FLAG_NEXT_CTRL (class headings included, type CTRL_TYPE_CTRL_CLASS). */
export function enumCtrls(fd: number): ControlInfo[] {
  const out: ControlInfo[] = [];
  let id = 0;
  for (;;) {
    const q = struct(S.v4l2_queryctrl).setU32("id", id | CTRL_FLAG_NEXT_CTRL);
    if (!enumIoctl(fd, ioctls.VIDIOC_QUERYCTRL, q.buf, "VIDIOC_QUERYCTRL")) return out;
    const info = decodeQueryctrl(q);
    out.push(info);
    id = info.id;
  }
}

export function getCtrl(fd: number, id: number): number {
  const c = struct(S.v4l2_control).setU32("id", id);
  ioctl(fd, ioctls.VIDIOC_G_CTRL, c.buf, "VIDIOC_G_CTRL");
  return c.i32("value");
}

/** VIDIOC_S_CTRL: returns the value the driver kept. */
export function setCtrl(fd: number, id: number, value: number): number {
  const c = struct(S.v4l2_control).setU32("id", id).setI32("value", value);
  ioctl(fd, ioctls.VIDIOC_S_CTRL, c.buf, "VIDIOC_S_CTRL");
  return c.i32("value");
}

/** VIDIOC_REQBUFS: returns the number of buffers the driver allocated (0 frees them). */
export function requestBuffers(fd: number, count: number, type = BUF_TYPE_VIDEO_CAPTURE, memory = MEMORY_MMAP): number {
  const r = struct(S.v4l2_requestbuffers).setU32("count", count).setU32("type", type).setU32("memory", memory);
  ioctl(fd, ioctls.VIDIOC_REQBUFS, r.buf, "VIDIOC_REQBUFS");
  return r.u32("count");
}

export interface BufferInfo {
  index: number; bytesused: number; flags: number; field: number;
  /** Capture time, struct timeval in microseconds. */
  timestampUs: bigint;
  sequence: number;
  /** mmap offset (MEMORY_MMAP). */
  offset: number;
  length: number;
}

const bufferArg = (type: number, index: number, memory: number) =>
  struct(S.v4l2_buffer).setU32("index", index).setU32("type", type).setU32("memory", memory);

function decodeBuffer(b: Struct<typeof S.v4l2_buffer>): BufferInfo {
  return {
    index: b.u32("index"), bytesused: b.u32("bytesused"), flags: b.u32("flags"), field: b.u32("field"),
    timestampUs: b.i64("timestamp.tv_sec") * 1_000_000n + b.i64("timestamp.tv_usec"), sequence: b.u32("sequence"),
    offset: b.u32("m.offset"), length: b.u32("length"),
  };
}

export function queryBuffer(fd: number, index: number, type = BUF_TYPE_VIDEO_CAPTURE, memory = MEMORY_MMAP): BufferInfo {
  const b = bufferArg(type, index, memory);
  ioctl(fd, ioctls.VIDIOC_QUERYBUF, b.buf, "VIDIOC_QUERYBUF");
  return decodeBuffer(b);
}

export function queueBuffer(fd: number, index: number, type = BUF_TYPE_VIDEO_CAPTURE, memory = MEMORY_MMAP): void {
  ioctl(fd, ioctls.VIDIOC_QBUF, bufferArg(type, index, memory).buf, "VIDIOC_QBUF");
}

/** VIDIOC_DQBUF on a non-blocking fd: a filled buffer, or null when none is ready (EAGAIN). */
export function dequeueBuffer(fd: number, type = BUF_TYPE_VIDEO_CAPTURE, memory = MEMORY_MMAP): BufferInfo | null {
  const b = bufferArg(type, 0, memory);
  return ioctlAgain(fd, ioctls.VIDIOC_DQBUF, b.buf, "VIDIOC_DQBUF") === null ? null : decodeBuffer(b);
}

export function streamOn(fd: number, type = BUF_TYPE_VIDEO_CAPTURE): void {
  ioctl(fd, ioctls.VIDIOC_STREAMON, scalar.u32(type), "VIDIOC_STREAMON");
}
export function streamOff(fd: number, type = BUF_TYPE_VIDEO_CAPTURE): void {
  ioctl(fd, ioctls.VIDIOC_STREAMOFF, scalar.u32(type), "VIDIOC_STREAMOFF");
}

export interface Frame { data: Buffer; sequence: number; timestampUs: bigint; bytesused: number; flags: number }

/**
 * Streaming capture with mmap'ed driver buffers. Create after setFormat(); take
 * frames with dequeue() or watchFrames(); stop() releases the mappings and buffers.
 */
export class MmapCapture {
  private maps: Mapping[] = [];
  private streaming = false;
  /** Watches on this capture (watchFrames), closed by stop(). */
  readonly watches = new Set<Watch>();

  constructor(readonly fd: number, count = 4, readonly type = BUF_TYPE_VIDEO_CAPTURE) {
    const n = requestBuffers(fd, count, type, MEMORY_MMAP);
    if (n < 1) throw new Error("VIDIOC_REQBUFS: no buffers");
    try {
      for (let i = 0; i < n; i++) {
        const info = queryBuffer(fd, i, type);
        this.maps.push(mmap(fd, info.length, { offset: info.offset }));
        queueBuffer(fd, i, type);
      }
      streamOn(fd, type);
      this.streaming = true;
    } catch (e) {
      this.stop();
      throw e;
    }
  }

  get buffers(): number {
    return this.maps.length;
  }

  /** The next filled frame, copied out of its buffer (which is queued again); null when none is ready. */
  dequeue(): Frame | null {
    const info = dequeueBuffer(this.fd, this.type);
    if (!info) return null;
    const data = Buffer.from(this.maps[info.index]!.buffer.subarray(0, info.bytesused));
    queueBuffer(this.fd, info.index, this.type);
    return { data, sequence: info.sequence, timestampUs: info.timestampUs, bytesused: info.bytesused, flags: info.flags };
  }

  /** The next frame, waited for on the event source; null after timeoutMs. */
  nextFrame(timeoutMs = 5000): Promise<Frame | null> {
    const ready = this.dequeue();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve) => {
      const w = watchFrames(this, (f) => {
        clearTimeout(timer);
        w.close();
        resolve(f);
      });
      const timer = setTimeout(() => {
        w.close();
        resolve(null);
      }, timeoutMs);
    });
  }

  /** Closes its watches, stops streaming, unmaps and frees the buffers. */
  stop(): void {
    for (const w of this.watches) w.close();
    this.watches.clear();
    if (this.streaming) streamOff(this.fd, this.type);
    this.streaming = false;
    for (const m of this.maps) m.unmap();
    this.maps = [];
    try {
      requestBuffers(this.fd, 0, this.type);
    } catch {}
  }
}

/**
 * Delivers every frame of a capture on the event source (the device fd becomes
 * readable when a buffer is filled). capture.stop() closes the watch; a failed
 * DQBUF (the queue in error: EIO) closes it and goes to opts.onError.
 */
export function watchFrames(capture: MmapCapture, onFrame: (frame: Frame) => void, opts?: ReaderOptions): Watch {
  const w = watchItems(capture.fd, () => {
    const f = capture.dequeue();
    return f ? [f] : [];
  }, onFrame, opts);
  for (const old of capture.watches) if (old.closed) capture.watches.delete(old);
  capture.watches.add(w);
  return w;
}
