// GPIO character device, uAPI v2 (linux/gpio.h). A chip fd gives chip and line
// info and hands out line requests; a request fd carries values, config and edge events.
// Bit masks on a request index the request's `offsets` array, not chip line offsets.
// Chip and request fds are non-blocking: edge events and line-info changes are read
// with readEdgeEvents()/readLineInfoChanges() ([] when none is queued), or delivered
// on the platform's event source by watchEdges()/watchLineInfo().
import { IOR, IOWR, O_CLOEXEC, O_NONBLOCK, O_RDWR, closeFd, ioctl, openFile, readRecords } from "./libc.ts";
import { setNonBlocking, type Watch } from "./loop.ts";
import { watchItems, type ReaderOptions } from "./readers.ts";
import { Struct, scalar, struct } from "./struct.ts";

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
  gpiochip_info: { c: "struct gpiochip_info", size: 68, fields: { name: 0, label: 32, lines: 64 }, lengths: { name: 32, label: 32 } },
  gpio_v2_line_values: { c: "struct gpio_v2_line_values", size: 16, fields: { bits: 0, mask: 8 } },
  gpio_v2_line_attribute: { c: "struct gpio_v2_line_attribute", size: 16, fields: { id: 0, padding: 4, flags: 8, values: 8, debounce_period_us: 8 } },
  gpio_v2_line_config_attribute: { c: "struct gpio_v2_line_config_attribute", size: 24, fields: { attr: 0, mask: 16 } },
  gpio_v2_line_config: {
    c: "struct gpio_v2_line_config", size: 272, fields: { flags: 0, num_attrs: 8, padding: 12, attrs: 32 }, lengths: { attrs: 240 },
  },
  gpio_v2_line_request: {
    c: "struct gpio_v2_line_request", size: 592,
    fields: { offsets: 0, consumer: 256, config: 288, num_lines: 560, event_buffer_size: 564, padding: 568, fd: 588 },
    lengths: { offsets: 256, consumer: 32 },
  },
  gpio_v2_line_info: {
    c: "struct gpio_v2_line_info", size: 256,
    fields: { name: 0, consumer: 32, offset: 64, num_attrs: 68, flags: 72, attrs: 80, padding: 240 },
    lengths: { name: 32, consumer: 32, attrs: 160 },
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
  GPIO_GET_LINEINFO_UNWATCH_IOCTL: IOWR(0xb4, 0x0c, 4), // __u32 offset
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

/** Opens /dev/gpiochipN (a path or a chip number), non-blocking. */
export function openChip(chip: string | number): number {
  const path = typeof chip === "number" ? `/dev/gpiochip${chip}` : chip;
  return openFile(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
}

export const close = closeFd;

export function chipInfo(chipFd: number): ChipInfo {
  const b = struct(S.gpiochip_info);
  ioctl(chipFd, ioctls.GPIO_GET_CHIPINFO_IOCTL, b.buf, "GPIO_GET_CHIPINFO_IOCTL");
  return { name: b.str("name"), label: b.str("label"), lines: b.u32("lines") };
}

function lineInfoIoctl(chipFd: number, offset: number, request: number, name: string): LineInfo {
  const b = struct(S.gpio_v2_line_info).setU32("offset", offset);
  ioctl(chipFd, request, b.buf, name);
  return decodeLineInfo(b.buf);
}

export function lineInfo(chipFd: number, offset: number): LineInfo {
  return lineInfoIoctl(chipFd, offset, ioctls.GPIO_V2_GET_LINEINFO_IOCTL, "GPIO_V2_GET_LINEINFO_IOCTL");
}

/**
 * GPIO_V2_GET_LINEINFO_WATCH_IOCTL: the line's info now; from then on the chip fd
 * becomes readable with a LineInfoChanged whenever the line is requested, released
 * or reconfigured (readLineInfoChanges(), watchLineInfo()).
 */
export function addLineInfoWatch(chipFd: number, offset: number): LineInfo {
  return lineInfoIoctl(chipFd, offset, ioctls.GPIO_V2_GET_LINEINFO_WATCH_IOCTL, "GPIO_V2_GET_LINEINFO_WATCH_IOCTL");
}

/** GPIO_GET_LINEINFO_UNWATCH_IOCTL */
export function removeLineInfoWatch(chipFd: number, offset: number): void {
  ioctl(chipFd, ioctls.GPIO_GET_LINEINFO_UNWATCH_IOCTL, scalar.u32(offset), "GPIO_GET_LINEINFO_UNWATCH_IOCTL");
}

export interface LineInfoChanged {
  info: LineInfo;
  timestampNs: bigint;
  /** LINE_CHANGED_REQUESTED, LINE_CHANGED_RELEASED or LINE_CHANGED_CONFIG */
  eventType: number;
}

export function decodeLineInfoChanged(b: Buffer, off = 0): LineInfoChanged {
  const c = new Struct(S.gpio_v2_line_info_changed, b, off);
  return { info: decodeLineInfo(b, c.off("info")), timestampNs: c.u64("timestamp_ns"), eventType: c.u32("event_type") };
}

/** The line-info changes queued on a (non-blocking) chip fd now; [] when there are none. */
export function readLineInfoChanges(chipFd: number, max = 64): LineInfoChanged[] {
  return readRecords(chipFd, S.gpio_v2_line_info_changed.size, max).map((b) => decodeLineInfoChanged(b));
}

export function decodeLineInfo(b: Buffer, off = 0): LineInfo {
  const info = new Struct(S.gpio_v2_line_info, b, off);
  const n = info.u32("num_attrs");
  const attrs: LineAttribute[] = [];
  let debouncePeriodUs: number | undefined;
  for (let i = 0; i < Math.min(n, GPIO_V2_LINE_NUM_ATTRS_MAX); i++) {
    const a = info.nested("attrs", S.gpio_v2_line_attribute, i);
    const id = a.u32("id");
    const value = id === ATTR_ID_DEBOUNCE ? BigInt(a.u32("debounce_period_us")) : a.u64(id === ATTR_ID_FLAGS ? "flags" : "values");
    if (id === ATTR_ID_DEBOUNCE) debouncePeriodUs = Number(value);
    attrs.push({ id, value });
  }
  return { name: info.str("name"), consumer: info.str("consumer"), offset: info.u32("offset"), flags: info.u64("flags"), attrs, debouncePeriodUs };
}

/** Encodes a LineConfig into buf at off (a struct gpio_v2_line_config). */
export function encodeLineConfig(cfg: LineConfig, buf: Buffer = Buffer.alloc(S.gpio_v2_line_config.size), off = 0): Buffer {
  const attrs: { id: number; value: bigint; mask: bigint }[] = [];
  for (const lf of cfg.lineFlags ?? []) attrs.push({ id: ATTR_ID_FLAGS, value: lf.flags, mask: lf.mask });
  if (cfg.outputValues) attrs.push({ id: ATTR_ID_OUTPUT_VALUES, value: cfg.outputValues.bits, mask: cfg.outputValues.mask });
  if (cfg.debounce) attrs.push({ id: ATTR_ID_DEBOUNCE, value: BigInt(cfg.debounce.periodUs), mask: cfg.debounce.mask });
  if (attrs.length > GPIO_V2_LINE_NUM_ATTRS_MAX) throw new RangeError(`more than ${GPIO_V2_LINE_NUM_ATTRS_MAX} line attributes`);
  const c = new Struct(S.gpio_v2_line_config, buf, off).setU64("flags", cfg.flags).setU32("num_attrs", attrs.length);
  attrs.forEach((a, i) => {
    const ca = c.nested("attrs", S.gpio_v2_line_config_attribute, i).setU64("mask", a.mask);
    const attr = ca.nested("attr", S.gpio_v2_line_attribute).setU32("id", a.id);
    if (a.id === ATTR_ID_DEBOUNCE) attr.setU32("debounce_period_us", Number(a.value));
    else attr.setU64(a.id === ATTR_ID_FLAGS ? "flags" : "values", a.value);
  });
  return buf;
}

/**
 * GPIO_V2_GET_LINE_IOCTL: requests lines and returns the request fd, set
 * O_NONBLOCK (read its edge events with readEdgeEvents() or watchEdges()).
 */
export function requestLines(chipFd: number, req: LineRequest): number {
  const n = req.offsets.length;
  if (n < 1 || n > GPIO_V2_LINES_MAX) throw new RangeError(`1..${GPIO_V2_LINES_MAX} lines per request`);
  const r = struct(S.gpio_v2_line_request);
  req.offsets.forEach((o, i) => r.setU32At("offsets", i, o));
  r.setStr("consumer", req.consumer);
  encodeLineConfig(req.config, r.buf, r.off("config"));
  r.setU32("num_lines", n).setU32("event_buffer_size", req.eventBufferSize ?? 0);
  ioctl(chipFd, ioctls.GPIO_V2_GET_LINE_IOCTL, r.buf, "GPIO_V2_GET_LINE_IOCTL");
  const fd = r.i32("fd");
  try {
    setNonBlocking(fd);
  } catch (e) {
    closeFd(fd);
    throw e;
  }
  return fd;
}

/** GPIO_V2_LINE_GET_VALUES_IOCTL: the values of the lines in mask, as bits. */
export function getValues(reqFd: number, mask: bigint): bigint {
  const v = struct(S.gpio_v2_line_values).setU64("mask", mask);
  ioctl(reqFd, ioctls.GPIO_V2_LINE_GET_VALUES_IOCTL, v.buf, "GPIO_V2_LINE_GET_VALUES_IOCTL");
  return v.u64("bits") & mask;
}

/** GPIO_V2_LINE_SET_VALUES_IOCTL: sets the output lines in mask to bits. */
export function setValues(reqFd: number, bits: bigint, mask: bigint): void {
  const v = struct(S.gpio_v2_line_values).setU64("bits", bits & mask).setU64("mask", mask);
  ioctl(reqFd, ioctls.GPIO_V2_LINE_SET_VALUES_IOCTL, v.buf, "GPIO_V2_LINE_SET_VALUES_IOCTL");
}

/** GPIO_V2_LINE_SET_CONFIG_IOCTL: reconfigures all lines of a request. */
export function setConfig(reqFd: number, cfg: LineConfig): void {
  ioctl(reqFd, ioctls.GPIO_V2_LINE_SET_CONFIG_IOCTL, encodeLineConfig(cfg), "GPIO_V2_LINE_SET_CONFIG_IOCTL");
}

export function decodeLineEvent(b: Buffer, off = 0): LineEvent {
  const e = new Struct(S.gpio_v2_line_event, b, off);
  return { timestampNs: e.u64("timestamp_ns"), id: e.u32("id"), offset: e.u32("offset"), seqno: e.u32("seqno"), lineSeqno: e.u32("line_seqno") };
}

/** The edge events queued on a request fd now (the fd must be non-blocking, as requestLines() makes it); [] when none. */
export function readEdgeEvents(reqFd: number, max = 64): LineEvent[] {
  return readRecords(reqFd, S.gpio_v2_line_event.size, max).map((b) => decodeLineEvent(b));
}

/**
 * Delivers the edge events of a request fd on the platform's event source, one call
 * per event, in order. Close the watch before closing the fd; a failed read (the
 * chip went away: ENODEV) closes it and goes to opts.onError.
 */
export function watchEdges(reqFd: number, onEvent: (ev: LineEvent) => void, opts?: ReaderOptions): Watch {
  return watchItems(reqFd, () => readEdgeEvents(reqFd), onEvent, opts);
}

/**
 * Delivers the line-info changes of a chip fd (for the lines given to
 * addLineInfoWatch()) on the platform's event source. Close the watch before the fd.
 */
export function watchLineInfo(chipFd: number, onChange: (change: LineInfoChanged) => void, opts?: ReaderOptions): Watch {
  return watchItems(chipFd, () => readLineInfoChanges(chipFd), onChange, opts);
}
