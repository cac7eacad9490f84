// GPIO character device, uAPI v2 (linux/gpio.h). A chip fd gives chip and line
// info and hands out line requests; a request fd carries values, config and edge events.
// Bit masks on a request index the request's `offsets` array, not chip line offsets.
import { IOR, IOWR, O_CLOEXEC, O_RDWR, closeFd, ioctl, libc, openFile, ptr, readFd, check } from "./libc.ts";

export const GPIO_MAX_NAME_SIZE = 32;
export const GPIO_V2_LINES_MAX = 64;
export const GPIO_V2_LINE_NUM_ATTRS_MAX = 10;

/** enum gpio_v2_line_flag */
export const LineFlag = {
  USED: 1n << 0n,
  ACTIVE_LOW: 1n << 1n,
  INPUT: 1n << 2n,
  OUTPUT: 1n << 3n,
  EDGE_RISING: 1n << 4n,
  EDGE_FALLING: 1n << 5n,
  OPEN_DRAIN: 1n << 6n,
  OPEN_SOURCE: 1n << 7n,
  BIAS_PULL_UP: 1n << 8n,
  BIAS_PULL_DOWN: 1n << 9n,
  BIAS_DISABLED: 1n << 10n,
  EVENT_CLOCK_REALTIME: 1n << 11n,
  EVENT_CLOCK_HTE: 1n << 12n,
} as const;

/** enum gpio_v2_line_attr_id */
export const ATTR_ID_FLAGS = 1, ATTR_ID_OUTPUT_VALUES = 2, ATTR_ID_DEBOUNCE = 3;
/** enum gpio_v2_line_changed_type */
export const LINE_CHANGED_REQUESTED = 1, LINE_CHANGED_RELEASED = 2, LINE_CHANGED_CONFIG = 3;
/** enum gpio_v2_line_event_id */
export const EVENT_RISING_EDGE = 1, EVENT_FALLING_EDGE = 2;

/** Struct layouts (size and member offsets), asserted against the C header in test/ffi. */
export const structs = {
  gpiochip_info: { c: "struct gpiochip_info", size: 68, fields: { name: 0, label: 32, lines: 64 } },
  gpio_v2_line_values: { c: "struct gpio_v2_line_values", size: 16, fields: { bits: 0, mask: 8 } },
  gpio_v2_line_attribute: { c: "struct gpio_v2_line_attribute", size: 16, fields: { id: 0, padding: 4, flags: 8, values: 8, debounce_period_us: 8 } },
  gpio_v2_line_config_attribute: { c: "struct gpio_v2_line_config_attribute", size: 24, fields: { attr: 0, mask: 16 } },
  gpio_v2_line_config: { c: "struct gpio_v2_line_config", size: 272, fields: { flags: 0, num_attrs: 8, padding: 12, attrs: 32 } },
  gpio_v2_line_request: {
    c: "struct gpio_v2_line_request", size: 592,
    fields: { offsets: 0, consumer: 256, config: 288, num_lines: 560, event_buffer_size: 564, padding: 568, fd: 588 },
  },
  gpio_v2_line_info: {
    c: "struct gpio_v2_line_info", size: 256,
    fields: { name: 0, consumer: 32, offset: 64, num_attrs: 68, flags: 72, attrs: 80, padding: 240 },
  },
  gpio_v2_line_info_changed: {
    c: "struct gpio_v2_line_info_changed", size: 288,
    fields: { info: 0, timestamp_ns: 256, event_type: 264, padding: 268 },
  },
  gpio_v2_line_event: {
    c: "struct gpio_v2_line_event", size: 48,
    fields: { timestamp_ns: 0, id: 8, offset: 12, seqno: 16, line_seqno: 20, padding: 24 },
  },
} as const;
const S = structs;

export const ioctls = {
  GPIO_GET_CHIPINFO_IOCTL: IOR(0xb4, 0x01, S.gpiochip_info.size),
  GPIO_V2_GET_LINEINFO_IOCTL: IOWR(0xb4, 0x05, S.gpio_v2_line_info.size),
  GPIO_V2_GET_LINEINFO_WATCH_IOCTL: IOWR(0xb4, 0x06, S.gpio_v2_line_info.size),
  GPIO_V2_GET_LINE_IOCTL: IOWR(0xb4, 0x07, S.gpio_v2_line_request.size),
  GPIO_GET_LINEINFO_UNWATCH_IOCTL: IOWR(0xb4, 0x0c, 4),
  GPIO_V2_LINE_SET_CONFIG_IOCTL: IOWR(0xb4, 0x0d, S.gpio_v2_line_config.size),
  GPIO_V2_LINE_GET_VALUES_IOCTL: IOWR(0xb4, 0x0e, S.gpio_v2_line_values.size),
  GPIO_V2_LINE_SET_VALUES_IOCTL: IOWR(0xb4, 0x0f, S.gpio_v2_line_values.size),
} as const;

export interface ChipInfo { name: string; label: string; lines: number }

export interface LineAttribute {
  id: number;
  /** ATTR_ID_FLAGS: flags; ATTR_ID_OUTPUT_VALUES: values; ATTR_ID_DEBOUNCE: debounce_period_us */
  value: bigint;
}

export interface LineInfo {
  name: string;
  consumer: string;
  offset: number;
  flags: bigint;
  attrs: LineAttribute[];
  /** From a debounce attribute, when the kernel reports one. */
  debouncePeriodUs?: number;
}

/** One gpio_v2_line_config: default flags plus per-line overrides selected by mask. */
export interface LineConfig {
  flags: bigint;
  /** Flags for the lines in mask, overriding `flags`. */
  lineFlags?: { flags: bigint; mask: bigint }[];
  /** Output values for output lines in mask. */
  outputValues?: { bits: bigint; mask: bigint };
  debounce?: { periodUs: number; mask: bigint };
}

export interface LineRequest {
  offsets: number[];
  consumer: string;
  config: LineConfig;
  /** Edge event queue length; 0 lets the kernel choose. */
  eventBufferSize?: number;
}

export interface LineEvent {
  timestampNs: bigint;
  /** EVENT_RISING_EDGE or EVENT_FALLING_EDGE */
  id: number;
  /** Chip line offset. */
  offset: number;
  seqno: number;
  lineSeqno: number;
}

function cString(buf: Buffer, off: number, len: number): string {
  const s = buf.subarray(off, off + len);
  const nul = s.indexOf(0);
  return s.subarray(0, nul < 0 ? len : nul).toString("utf8");
}

function putCString(buf: Buffer, off: number, len: number, s: string): void {
  const b = Buffer.from(s, "utf8");
  if (b.length >= len) throw new RangeError(`name longer than ${len - 1} bytes: ${s}`);
  b.copy(buf, off);
}

/** Opens /dev/gpiochipN (a path or a chip number). */
export function openChip(chip: string | number): number {
  const path = typeof chip === "number" ? `/dev/gpiochip${chip}` : chip;
  return openFile(path, O_RDWR | O_CLOEXEC);
}

export const close = closeFd;

export function chipInfo(chipFd: number): ChipInfo {
  const b = Buffer.alloc(S.gpiochip_info.size);
  ioctl(chipFd, ioctls.GPIO_GET_CHIPINFO_IOCTL, b, "GPIO_GET_CHIPINFO_IOCTL");
  return { name: cString(b, 0, 32), label: cString(b, 32, 32), lines: b.readUInt32LE(64) };
}

export function lineInfo(chipFd: number, offset: number): LineInfo {
  const b = Buffer.alloc(S.gpio_v2_line_info.size);
  b.writeUInt32LE(offset, 64);
  ioctl(chipFd, ioctls.GPIO_V2_GET_LINEINFO_IOCTL, b, "GPIO_V2_GET_LINEINFO_IOCTL");
  return decodeLineInfo(b);
}

/**
 * GPIO_V2_GET_LINEINFO_WATCH_IOCTL: the line's info now; from then on the chip fd
 * becomes readable with a LineInfoChanged whenever the line is requested, released
 * or reconfigured (readLineInfoChanged()).
 */
export function watchLineInfo(chipFd: number, offset: number): LineInfo {
  const b = Buffer.alloc(S.gpio_v2_line_info.size);
  b.writeUInt32LE(offset, 64);
  ioctl(chipFd, ioctls.GPIO_V2_GET_LINEINFO_WATCH_IOCTL, b, "GPIO_V2_GET_LINEINFO_WATCH_IOCTL");
  return decodeLineInfo(b);
}

/** GPIO_GET_LINEINFO_UNWATCH_IOCTL */
export function unwatchLineInfo(chipFd: number, offset: number): void {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(offset, 0);
  ioctl(chipFd, ioctls.GPIO_GET_LINEINFO_UNWATCH_IOCTL, b, "GPIO_GET_LINEINFO_UNWATCH_IOCTL");
}

export interface LineInfoChanged {
  info: LineInfo;
  timestampNs: bigint;
  /** LINE_CHANGED_REQUESTED, LINE_CHANGED_RELEASED or LINE_CHANGED_CONFIG */
  eventType: number;
}

/** Reads queued line-info changes of watched lines from the chip fd (blocks until one is queued). */
export function readLineInfoChanged(chipFd: number, max = 8): LineInfoChanged[] {
  const size = S.gpio_v2_line_info_changed.size;
  const b = readFd(chipFd, size * max);
  const out: LineInfoChanged[] = [];
  for (let off = 0; off + size <= b.length; off += size) {
    out.push({
      info: decodeLineInfo(b.subarray(off, off + S.gpio_v2_line_info.size)),
      timestampNs: b.readBigUInt64LE(off + 256), eventType: b.readUInt32LE(off + 264),
    });
  }
  return out;
}

export function decodeLineInfo(b: Buffer): LineInfo {
  const n = b.readUInt32LE(68);
  const attrs: LineAttribute[] = [];
  let debouncePeriodUs: number | undefined;
  for (let i = 0; i < Math.min(n, GPIO_V2_LINE_NUM_ATTRS_MAX); i++) {
    const a = 80 + i * S.gpio_v2_line_attribute.size;
    const id = b.readUInt32LE(a);
    const value = id === ATTR_ID_DEBOUNCE ? BigInt(b.readUInt32LE(a + 8)) : b.readBigUInt64LE(a + 8);
    if (id === ATTR_ID_DEBOUNCE) debouncePeriodUs = Number(value);
    attrs.push({ id, value });
  }
  return {
    name: cString(b, 0, 32), consumer: cString(b, 32, 32), offset: b.readUInt32LE(64),
    flags: b.readBigUInt64LE(72), attrs, debouncePeriodUs,
  };
}

/** Encodes a LineConfig into buf at off (a struct gpio_v2_line_config). */
export function encodeLineConfig(cfg: LineConfig, buf = Buffer.alloc(S.gpio_v2_line_config.size), off = 0): Buffer {
  const attrs: { id: number; value: bigint; mask: bigint }[] = [];
  for (const lf of cfg.lineFlags ?? []) attrs.push({ id: ATTR_ID_FLAGS, value: lf.flags, mask: lf.mask });
  if (cfg.outputValues) attrs.push({ id: ATTR_ID_OUTPUT_VALUES, value: cfg.outputValues.bits, mask: cfg.outputValues.mask });
  if (cfg.debounce) attrs.push({ id: ATTR_ID_DEBOUNCE, value: BigInt(cfg.debounce.periodUs), mask: cfg.debounce.mask });
  if (attrs.length > GPIO_V2_LINE_NUM_ATTRS_MAX) throw new RangeError(`more than ${GPIO_V2_LINE_NUM_ATTRS_MAX} line attributes`);
  buf.writeBigUInt64LE(cfg.flags, off);
  buf.writeUInt32LE(attrs.length, off + 8);
  attrs.forEach((a, i) => {
    const p = off + 32 + i * S.gpio_v2_line_config_attribute.size;
    buf.writeUInt32LE(a.id, p);
    if (a.id === ATTR_ID_DEBOUNCE) buf.writeUInt32LE(Number(a.value), p + 8);
    else buf.writeBigUInt64LE(BigInt.asUintN(64, a.value), p + 8);
    buf.writeBigUInt64LE(BigInt.asUintN(64, a.mask), p + 16);
  });
  return buf;
}

/** GPIO_V2_GET_LINE_IOCTL: requests lines and returns the request fd. */
export function requestLines(chipFd: number, req: LineRequest): number {
  const n = req.offsets.length;
  if (n < 1 || n > GPIO_V2_LINES_MAX) throw new RangeError(`1..${GPIO_V2_LINES_MAX} lines per request`);
  const b = Buffer.alloc(S.gpio_v2_line_request.size);
  req.offsets.forEach((o, i) => b.writeUInt32LE(o, i * 4));
  putCString(b, 256, GPIO_MAX_NAME_SIZE, req.consumer);
  encodeLineConfig(req.config, b, 288);
  b.writeUInt32LE(n, 560);
  b.writeUInt32LE(req.eventBufferSize ?? 0, 564);
  ioctl(chipFd, ioctls.GPIO_V2_GET_LINE_IOCTL, b, "GPIO_V2_GET_LINE_IOCTL");
  return b.readInt32LE(588);
}

/** GPIO_V2_LINE_GET_VALUES_IOCTL: the values of the lines in mask, as bits. */
export function getValues(reqFd: number, mask: bigint): bigint {
  const b = Buffer.alloc(16);
  b.writeBigUInt64LE(mask, 8);
  ioctl(reqFd, ioctls.GPIO_V2_LINE_GET_VALUES_IOCTL, b, "GPIO_V2_LINE_GET_VALUES_IOCTL");
  return b.readBigUInt64LE(0) & mask;
}

/** GPIO_V2_LINE_SET_VALUES_IOCTL: sets the output lines in mask to bits. */
export function setValues(reqFd: number, bits: bigint, mask: bigint): void {
  const b = Buffer.alloc(16);
  b.writeBigUInt64LE(bits & mask, 0);
  b.writeBigUInt64LE(mask, 8);
  ioctl(reqFd, ioctls.GPIO_V2_LINE_SET_VALUES_IOCTL, b, "GPIO_V2_LINE_SET_VALUES_IOCTL");
}

/** GPIO_V2_LINE_SET_CONFIG_IOCTL: reconfigures all lines of a request. */
export function setConfig(reqFd: number, cfg: LineConfig): void {
  ioctl(reqFd, ioctls.GPIO_V2_LINE_SET_CONFIG_IOCTL, encodeLineConfig(cfg), "GPIO_V2_LINE_SET_CONFIG_IOCTL");
}

export function decodeLineEvent(b: Buffer, off = 0): LineEvent {
  return {
    timestampNs: b.readBigUInt64LE(off), id: b.readUInt32LE(off + 8), offset: b.readUInt32LE(off + 12),
    seqno: b.readUInt32LE(off + 16), lineSeqno: b.readUInt32LE(off + 20),
  };
}

const POLLIN = 1;

/** Waits until fd is readable; false on timeout. timeoutMs < 0 waits forever. */
export function waitReadable(fd: number, timeoutMs: number): boolean {
  const pfd = Buffer.alloc(8); // struct pollfd { int fd; short events; short revents; }
  pfd.writeInt32LE(fd, 0);
  pfd.writeInt16LE(POLLIN, 4);
  return check("poll", () => libc.poll(ptr(pfd), 1, timeoutMs)) > 0;
}

/** Reads queued edge events (blocks until at least one unless the fd is non-blocking). */
export function readEvents(reqFd: number, max = 16): LineEvent[] {
  const size = S.gpio_v2_line_event.size;
  const b = readFd(reqFd, size * max);
  const out: LineEvent[] = [];
  for (let off = 0; off + size <= b.length; off += size) out.push(decodeLineEvent(b, off));
  return out;
}
