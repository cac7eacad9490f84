// Video4Linux2 (linux/videodev2.h): capabilities, formats, frame sizes, controls and
// single-planar streaming capture through mmap'ed driver buffers.
import { toArrayBuffer } from "bun:ffi";
import { IOR, IOW, IOWR, O_CLOEXEC, O_NONBLOCK, O_RDWR, check, closeFd, ioctl, libc, openFile, ptr, type Pointer } from "./libc.ts";

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
export const CTRL_FLAG_DISABLED = 0x0001, CTRL_FLAG_NEXT_CTRL = 0x80000000;
/** enum v4l2_ctrl_type (the common ones) */
export const CTRL_TYPE_INTEGER = 1, CTRL_TYPE_BOOLEAN = 2, CTRL_TYPE_MENU = 3, CTRL_TYPE_BUTTON = 4,
  CTRL_TYPE_INTEGER64 = 5, CTRL_TYPE_CTRL_CLASS = 6;

export const structs = {
  v4l2_capability: {
    c: "struct v4l2_capability", size: 104,
    fields: { driver: 0, card: 16, bus_info: 48, version: 80, capabilities: 84, device_caps: 88, reserved: 92 },
  },
  v4l2_fmtdesc: {
    c: "struct v4l2_fmtdesc", size: 64,
    fields: { index: 0, type: 4, flags: 8, description: 12, pixelformat: 44, mbus_code: 48, reserved: 52 },
  },
  v4l2_pix_format: {
    c: "struct v4l2_pix_format", size: 48,
    fields: {
      width: 0, height: 4, pixelformat: 8, field: 12, bytesperline: 16, sizeimage: 20, colorspace: 24, priv: 28,
      flags: 32, ycbcr_enc: 36, quantization: 40, xfer_func: 44,
    },
  },
  v4l2_format: { c: "struct v4l2_format", size: 208, fields: { type: 0, fmt: 8 } },
  v4l2_requestbuffers: {
    c: "struct v4l2_requestbuffers", size: 20,
    fields: { count: 0, type: 4, memory: 8, capabilities: 12, flags: 16, reserved: 17 },
  },
  v4l2_buffer: {
    c: "struct v4l2_buffer", size: 88,
    fields: {
      index: 0, type: 4, bytesused: 8, flags: 12, field: 16, timestamp: 24, timecode: 40, sequence: 56, memory: 60,
      m: 64, "m.offset": 64, length: 72, reserved2: 76, request_fd: 80,
    },
  },
  v4l2_queryctrl: {
    c: "struct v4l2_queryctrl", size: 68,
    fields: { id: 0, type: 4, name: 8, minimum: 40, maximum: 44, step: 48, default_value: 52, flags: 56, reserved: 60 },
  },
  v4l2_control: { c: "struct v4l2_control", size: 8, fields: { id: 0, value: 4 } },
  v4l2_frmsizeenum: {
    c: "struct v4l2_frmsizeenum", size: 44,
    fields: {
      index: 0, pixel_format: 4, type: 8, discrete: 12, "stepwise.min_width": 12, "stepwise.max_width": 16,
      "stepwise.step_width": 20, "stepwise.min_height": 24, "stepwise.max_height": 28, "stepwise.step_height": 32, reserved: 36,
    },
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
  VIDIOC_STREAMON: IOW("V", 18, 4),
  VIDIOC_STREAMOFF: IOW("V", 19, 4),
  VIDIOC_G_CTRL: IOWR("V", 27, S.v4l2_control.size),
  VIDIOC_S_CTRL: IOWR("V", 28, S.v4l2_control.size),
  VIDIOC_QUERYCTRL: IOWR("V", 36, S.v4l2_queryctrl.size),
  VIDIOC_TRY_FMT: IOWR("V", 64, S.v4l2_format.size),
  VIDIOC_ENUM_FRAMESIZES: IOWR("V", 74, S.v4l2_frmsizeenum.size),
} as const;

/** v4l2_fourcc('Y','U','Y','V') and back. */
export function fourcc(code: string): number {
  if (code.length !== 4) throw new RangeError(`fourcc needs 4 characters: ${code}`);
  return (code.charCodeAt(0) | (code.charCodeAt(1) << 8) | (code.charCodeAt(2) << 16) | (code.charCodeAt(3) << 24)) >>> 0;
}
export function fourccString(v: number): string {
  return String.fromCharCode(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff);
}

function cString(b: Buffer, off: number, len: number): string {
  const s = b.subarray(off, off + len);
  const nul = s.indexOf(0);
  return s.subarray(0, nul < 0 ? len : nul).toString("utf8");
}

/** Opens /dev/videoN (a path or a number). Non-blocking, so DQBUF never hangs; use waitFrame(). */
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
  const b = Buffer.alloc(S.v4l2_capability.size);
  ioctl(fd, ioctls.VIDIOC_QUERYCAP, b, "VIDIOC_QUERYCAP");
  const capabilities = b.readUInt32LE(84);
  return {
    driver: cString(b, 0, 16), card: cString(b, 16, 32), busInfo: cString(b, 48, 32), version: b.readUInt32LE(80),
    capabilities, deviceCaps: capabilities & Cap.DEVICE_CAPS ? b.readUInt32LE(88) : capabilities,
  };
}

export interface FormatDesc { index: number; flags: number; description: string; pixelformat: number; fourcc: string }

/** VIDIOC_ENUM_FMT until EINVAL. */
export function enumFormats(fd: number, type = BUF_TYPE_VIDEO_CAPTURE): FormatDesc[] {
  const out: FormatDesc[] = [];
  for (let index = 0; ; index++) {
    const b = Buffer.alloc(S.v4l2_fmtdesc.size);
    b.writeUInt32LE(index, 0);
    b.writeUInt32LE(type, 4);
    if (!tryIoctl(fd, ioctls.VIDIOC_ENUM_FMT, b, "VIDIOC_ENUM_FMT")) return out;
    const pixelformat = b.readUInt32LE(44);
    out.push({ index, flags: b.readUInt32LE(8), description: cString(b, 12, 32), pixelformat, fourcc: fourccString(pixelformat) });
  }
}

const EINVAL = 22;
/** ioctl that reports EINVAL (the end of an enumeration) as false. */
function tryIoctl(fd: number, req: number, b: Buffer, name: string): boolean {
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

function decodePix(b: Buffer): PixFormat {
  const p = 8;
  return {
    width: b.readUInt32LE(p), height: b.readUInt32LE(p + 4), pixelformat: b.readUInt32LE(p + 8), field: b.readUInt32LE(p + 12),
    bytesperline: b.readUInt32LE(p + 16), sizeimage: b.readUInt32LE(p + 20), colorspace: b.readUInt32LE(p + 24),
  };
}

export function getFormat(fd: number, type = BUF_TYPE_VIDEO_CAPTURE): PixFormat {
  const b = Buffer.alloc(S.v4l2_format.size);
  b.writeUInt32LE(type, 0);
  ioctl(fd, ioctls.VIDIOC_G_FMT, b, "VIDIOC_G_FMT");
  return decodePix(b);
}

export interface FormatRequest { width: number; height: number; pixelformat: number; field?: number }

/** VIDIOC_S_FMT (or VIDIOC_TRY_FMT with tryOnly): returns the format the driver chose. */
export function setFormat(fd: number, f: FormatRequest, type = BUF_TYPE_VIDEO_CAPTURE, tryOnly = false): PixFormat {
  const b = Buffer.alloc(S.v4l2_format.size);
  b.writeUInt32LE(type, 0);
  b.writeUInt32LE(f.width, 8);
  b.writeUInt32LE(f.height, 12);
  b.writeUInt32LE(f.pixelformat, 16);
  b.writeUInt32LE(f.field ?? FIELD_NONE, 20);
  const req = tryOnly ? ioctls.VIDIOC_TRY_FMT : ioctls.VIDIOC_S_FMT;
  ioctl(fd, req, b, tryOnly ? "VIDIOC_TRY_FMT" : "VIDIOC_S_FMT");
  return decodePix(b);
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
    const b = Buffer.alloc(S.v4l2_frmsizeenum.size);
    b.writeUInt32LE(index, 0);
    b.writeUInt32LE(pixelformat, 4);
    if (!tryIoctl(fd, ioctls.VIDIOC_ENUM_FRAMESIZES, b, "VIDIOC_ENUM_FRAMESIZES")) break;
    const type = b.readUInt32LE(8);
    if (type !== FRMSIZE_TYPE_DISCRETE) {
      return {
        type: type as typeof FRMSIZE_TYPE_STEPWISE, minWidth: b.readUInt32LE(12), maxWidth: b.readUInt32LE(16),
        stepWidth: b.readUInt32LE(20), minHeight: b.readUInt32LE(24), maxHeight: b.readUInt32LE(28), stepHeight: b.readUInt32LE(32),
      };
    }
    sizes.push({ width: b.readUInt32LE(12), height: b.readUInt32LE(16) });
  }
  return { type: FRMSIZE_TYPE_DISCRETE, sizes };
}

export interface ControlInfo {
  id: number; type: number; name: string; minimum: number; maximum: number; step: number; defaultValue: number; flags: number;
}

function decodeQueryctrl(b: Buffer): ControlInfo {
  return {
    id: b.readUInt32LE(0), type: b.readUInt32LE(4), name: cString(b, 8, 32), minimum: b.readInt32LE(40),
    maximum: b.readInt32LE(44), step: b.readInt32LE(48), defaultValue: b.readInt32LE(52), flags: b.readUInt32LE(56),
  };
}

/** VIDIOC_QUERYCTRL for one control id. */
export function queryCtrl(fd: number, id: number): ControlInfo {
  const b = Buffer.alloc(S.v4l2_queryctrl.size);
  b.writeUInt32LE(id >>> 0, 0);
  ioctl(fd, ioctls.VIDIOC_QUERYCTRL, b, "VIDIOC_QUERYCTRL");
  return decodeQueryctrl(b);
}

/** Every control, through V4L2_CTRL_FLAG_NEXT_CTRL (class headings included, type CTRL_TYPE_CTRL_CLASS). */
export function enumCtrls(fd: number): ControlInfo[] {
  const out: ControlInfo[] = [];
  let id = 0;
  for (;;) {
    const b = Buffer.alloc(S.v4l2_queryctrl.size);
    b.writeUInt32LE((id | CTRL_FLAG_NEXT_CTRL) >>> 0, 0);
    if (!tryIoctl(fd, ioctls.VIDIOC_QUERYCTRL, b, "VIDIOC_QUERYCTRL")) return out;
    const info = decodeQueryctrl(b);
    out.push(info);
    id = info.id;
  }
}

export function getCtrl(fd: number, id: number): number {
  const b = Buffer.alloc(S.v4l2_control.size);
  b.writeUInt32LE(id >>> 0, 0);
  ioctl(fd, ioctls.VIDIOC_G_CTRL, b, "VIDIOC_G_CTRL");
  return b.readInt32LE(4);
}

/** VIDIOC_S_CTRL: returns the value the driver kept. */
export function setCtrl(fd: number, id: number, value: number): number {
  const b = Buffer.alloc(S.v4l2_control.size);
  b.writeUInt32LE(id >>> 0, 0);
  b.writeInt32LE(value, 4);
  ioctl(fd, ioctls.VIDIOC_S_CTRL, b, "VIDIOC_S_CTRL");
  return b.readInt32LE(4);
}

/** VIDIOC_REQBUFS: returns the number of buffers the driver allocated (0 frees them). */
export function requestBuffers(fd: number, count: number, type = BUF_TYPE_VIDEO_CAPTURE, memory = MEMORY_MMAP): number {
  const b = Buffer.alloc(S.v4l2_requestbuffers.size);
  b.writeUInt32LE(count, 0);
  b.writeUInt32LE(type, 4);
  b.writeUInt32LE(memory, 8);
  ioctl(fd, ioctls.VIDIOC_REQBUFS, b, "VIDIOC_REQBUFS");
  return b.readUInt32LE(0);
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

function bufferArg(type: number, index: number, memory: number): Buffer {
  const b = Buffer.alloc(S.v4l2_buffer.size);
  b.writeUInt32LE(index, 0);
  b.writeUInt32LE(type, 4);
  b.writeUInt32LE(memory, 60);
  return b;
}

function decodeBuffer(b: Buffer): BufferInfo {
  return {
    index: b.readUInt32LE(0), bytesused: b.readUInt32LE(8), flags: b.readUInt32LE(12), field: b.readUInt32LE(16),
    timestampUs: b.readBigInt64LE(24) * 1_000_000n + b.readBigInt64LE(32), sequence: b.readUInt32LE(56),
    offset: b.readUInt32LE(64), length: b.readUInt32LE(72),
  };
}

export function queryBuffer(fd: number, index: number, type = BUF_TYPE_VIDEO_CAPTURE, memory = MEMORY_MMAP): BufferInfo {
  const b = bufferArg(type, index, memory);
  ioctl(fd, ioctls.VIDIOC_QUERYBUF, b, "VIDIOC_QUERYBUF");
  return decodeBuffer(b);
}

export function queueBuffer(fd: number, index: number, type = BUF_TYPE_VIDEO_CAPTURE, memory = MEMORY_MMAP): void {
  ioctl(fd, ioctls.VIDIOC_QBUF, bufferArg(type, index, memory), "VIDIOC_QBUF");
}

/** VIDIOC_DQBUF: a filled buffer, or null when none is ready on a non-blocking fd. */
export function dequeueBuffer(fd: number, type = BUF_TYPE_VIDEO_CAPTURE, memory = MEMORY_MMAP): BufferInfo | null {
  const b = bufferArg(type, 0, memory);
  try {
    ioctl(fd, ioctls.VIDIOC_DQBUF, b, "VIDIOC_DQBUF");
  } catch (e) {
    if ((e as { errno?: number }).errno === 11) return null; // EAGAIN
    throw e;
  }
  return decodeBuffer(b);
}

function streamArg(type: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(type, 0);
  return b;
}
export function streamOn(fd: number, type = BUF_TYPE_VIDEO_CAPTURE): void {
  ioctl(fd, ioctls.VIDIOC_STREAMON, streamArg(type), "VIDIOC_STREAMON");
}
export function streamOff(fd: number, type = BUF_TYPE_VIDEO_CAPTURE): void {
  ioctl(fd, ioctls.VIDIOC_STREAMOFF, streamArg(type), "VIDIOC_STREAMOFF");
}

const POLLIN = 1;
/** Waits up to timeoutMs for a filled buffer; false on timeout. */
export function waitFrame(fd: number, timeoutMs: number): boolean {
  const pfd = Buffer.alloc(8);
  pfd.writeInt32LE(fd, 0);
  pfd.writeInt16LE(POLLIN, 4);
  return check("poll", () => libc.poll(ptr(pfd), 1, timeoutMs)) > 0;
}

const PROT_READ = 1, PROT_WRITE = 2, MAP_SHARED = 1;

export interface Frame { data: Buffer; sequence: number; timestampUs: bigint; bytesused: number }

/**
 * Streaming capture with mmap'ed driver buffers. Create after setFormat(); stop()
 * releases the mappings and the buffers.
 */
export class MmapCapture {
  private maps: { addr: Pointer; length: number }[] = [];
  private streaming = false;

  constructor(private readonly fd: number, count = 4, private readonly type = BUF_TYPE_VIDEO_CAPTURE) {
    const n = requestBuffers(fd, count, type, MEMORY_MMAP);
    if (n < 1) throw new Error("VIDIOC_REQBUFS: no buffers");
    try {
      for (let i = 0; i < n; i++) {
        const info = queryBuffer(fd, i, type);
        const addr = libc.mmap(null, info.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, info.offset);
        if (addr === null || Number(addr) === -1 || Number(addr) >= 2 ** 63) // MAP_FAILED
          throw new Error(`mmap of buffer ${i} failed`);
        this.maps.push({ addr: addr as Pointer, length: info.length });
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

  /** The next frame, copied out of its buffer, which is queued again; null on timeout. */
  nextFrame(timeoutMs = 5000): Frame | null {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const info = dequeueBuffer(this.fd, this.type);
      if (info) {
        const m = this.maps[info.index]!;
        const data = Buffer.from(toArrayBuffer(m.addr, 0, info.bytesused).slice(0));
        queueBuffer(this.fd, info.index, this.type);
        return { data, sequence: info.sequence, timestampUs: info.timestampUs, bytesused: info.bytesused };
      }
      const left = deadline - Date.now();
      if (left <= 0 || !waitFrame(this.fd, left)) return null;
    }
  }

  stop(): void {
    if (this.streaming) streamOff(this.fd, this.type);
    this.streaming = false;
    for (const m of this.maps) libc.munmap(m.addr, m.length);
    this.maps = [];
    try {
      requestBuffers(this.fd, 0, this.type);
    } catch {}
  }
}
