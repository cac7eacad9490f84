// Serial lines and pseudo-terminals (asm/termbits.h, asm/ioctls.h): the kernel's
// struct termios2 through the TCGETS2/TCSETS2 ioctls, so any baud rate can be set
// (BOTHER with c_ispeed/c_ospeed), raw (cfmakeraw) and canonical modes, flushing,
// queue sizes, and pty pairs (posix_openpt, grantpt, unlockpt, ptsname_r).
//
// Nothing here waits: ttys are opened O_NONBLOCK|O_NOCTTY (an open does not wait
// for carrier, and the tty never becomes our controlling terminal), settings are
// applied with TCSETS2/TCSETSF2 (never TCSETSW2, which sleeps until output drains),
// and drain() polls TIOCOUTQ from timers instead of calling tcdrain. Input is read
// with readAvailable() or delivered on the event source by watchInput().
import {
  IOR, IOW, O_CLOEXEC, O_NOCTTY, O_NONBLOCK, O_RDWR, SysError, check, closeFd, cString, ioctl, ioctlValue,
  libc, openFile, ptr, readAvailable,
} from "./libc.ts";

import { EIO } from "./errno.ts";
import type { Watch, WatchOptions } from "./loop.ts";
import { watchItems } from "./readers.ts";
import { scalar, struct, type Struct } from "./struct.ts";

/** c_cc size in struct termios2 (the kernel's NCCS, not glibc's 32). */
export const NCCS = 19;

/** c_iflag */
export const IGNBRK = 0o1, BRKINT = 0o2, IGNPAR = 0o4, PARMRK = 0o10, INPCK = 0o20, ISTRIP = 0o40, INLCR = 0o100,
  IGNCR = 0o200, ICRNL = 0o400, IXON = 0o2000, IXANY = 0o4000, IXOFF = 0o10000, IMAXBEL = 0o20000, IUTF8 = 0o40000;
/** c_oflag */
export const OPOST = 0o1, ONLCR = 0o4;
/** c_cflag */
export const CBAUD = 0o10017, CSIZE = 0o60, CS5 = 0o0, CS6 = 0o20, CS7 = 0o40, CS8 = 0o60, CSTOPB = 0o100, CREAD = 0o200,
  PARENB = 0o400, PARODD = 0o1000, HUPCL = 0o2000, CLOCAL = 0o4000, BOTHER = 0o10000, CRTSCTS = 0o20000000000, IBSHIFT = 16;
/** c_lflag */
export const ISIG = 0o1, ICANON = 0o2, ECHO = 0o10, ECHOE = 0o20, ECHOK = 0o40, ECHONL = 0o100, NOFLSH = 0o200,
  TOSTOP = 0o400, ECHOCTL = 0o1000, ECHOKE = 0o4000, IEXTEN = 0o100000;
/** c_cc indices */
export const VINTR = 0, VQUIT = 1, VERASE = 2, VKILL = 3, VEOF = 4, VTIME = 5, VMIN = 6, VSTART = 8, VSTOP = 9,
  VSUSP = 10, VEOL = 11, VWERASE = 14, VLNEXT = 15;
/** tcflush queues */
export const TCIFLUSH = 0, TCOFLUSH = 1, TCIOFLUSH = 2;
/** The fixed Bxxx speed codes of c_cflag & CBAUD (for reading settings made by others). */
export const B0 = 0, B9600 = 0o15, B19200 = 0o16, B38400 = 0o17, B57600 = 0o10001, B115200 = 0o10002, B230400 = 0o10003,
  B460800 = 0o10004, B921600 = 0o10007, B1000000 = 0o10010, B4000000 = 0o10017;

export const structs = {
  termios2: {
    c: "struct termios2", size: 44,
    fields: { c_iflag: 0, c_oflag: 4, c_cflag: 8, c_lflag: 12, c_line: 16, c_cc: 17, c_ispeed: 36, c_ospeed: 40 },
    lengths: { c_cc: NCCS },
  },
} as const;
const S = structs;

export const ioctls = {
  TCGETS2: IOR("T", 0x2a, S.termios2.size),
  TCSETS2: IOW("T", 0x2b, S.termios2.size),
  TCSETSF2: IOW("T", 0x2d, S.termios2.size),
  TCFLSH: 0x540b,
  TIOCOUTQ: 0x5411,
  TIOCINQ: 0x541b,
} as const;

/** struct termios2, decoded. */
export interface Termios {
  iflag: number;
  oflag: number;
  cflag: number;
  lflag: number;
  line: number;
  /** Control characters, NCCS of them (indices V*). */
  cc: Uint8Array;
  /** Input and output speed in baud (the kernel fills these in on TCGETS2). */
  ispeed: number;
  ospeed: number;
}

function decode(t: Struct<typeof S.termios2>): Termios {
  return {
    iflag: t.u32("c_iflag"), oflag: t.u32("c_oflag"), cflag: t.u32("c_cflag"), lflag: t.u32("c_lflag"), line: t.u8("c_line"),
    cc: new Uint8Array(t.bytes("c_cc")), ispeed: t.u32("c_ispeed"), ospeed: t.u32("c_ospeed"),
  };
}

function encode(v: Termios): Struct<typeof S.termios2> {
  const t = struct(S.termios2).setU32("c_iflag", v.iflag).setU32("c_oflag", v.oflag).setU32("c_cflag", v.cflag)
    .setU32("c_lflag", v.lflag).setU8("c_line", v.line).setU32("c_ispeed", v.ispeed).setU32("c_ospeed", v.ospeed);
  t.bytes("c_cc").set(v.cc.subarray(0, NCCS));
  return t;
}

/** Opens a tty (serial port, pty slave) read-write, non-blocking, not as controlling terminal. */
export function openTty(path: string, flags = O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC): number {
  return openFile(path, flags);
}

export const close = closeFd;

/** TCGETS2: the tty's settings. */
export function getAttr(fd: number): Termios {
  const t = struct(S.termios2);
  ioctl(fd, ioctls.TCGETS2, t.buf, "TCGETS2");
  return decode(t);
}

/**
 * Applies settings now (TCSETS2), or with `flushInput` after discarding unread
 * input (TCSETSF2). Both return at once; TCSETSW2 (wait for output to drain) is not
 * offered: await drain() first when that matters.
 */
export function setAttr(fd: number, t: Termios, flushInput = false): void {
  ioctl(fd, flushInput ? ioctls.TCSETSF2 : ioctls.TCSETS2, encode(t).buf, flushInput ? "TCSETSF2" : "TCSETS2");
}

/** cfmakeraw: no line editing, echo, signals or CR/NL translation; 8 data bits; reads return what is there. */
export function makeRaw(t: Termios): Termios {
  const cc = Uint8Array.from(t.cc);
  cc[VMIN] = 1;
  cc[VTIME] = 0;
  return {
    ...t, cc,
    iflag: t.iflag & ~(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON),
    oflag: t.oflag & ~OPOST,
    lflag: t.lflag & ~(ECHO | ECHONL | ICANON | ISIG | IEXTEN),
    cflag: (t.cflag & ~(CSIZE | PARENB)) | CS8,
  };
}

/**
 * Canonical (line) mode: input is delivered a line at a time with the erase and
 * kill characters applied; CR becomes NL on input and NL becomes CR NL on output.
 */
export function makeCanonical(t: Termios, opts: { echo?: boolean; signals?: boolean } = {}): Termios {
  const echo = opts.echo ?? false;
  let lflag = (t.lflag | ICANON | IEXTEN) & ~(ECHO | ECHOE | ECHOK | ECHONL | ISIG);
  if (echo) lflag |= ECHO | ECHOE | ECHOK;
  if (opts.signals) lflag |= ISIG;
  return { ...t, lflag, iflag: (t.iflag | ICRNL) & ~(INLCR | IGNCR), oflag: t.oflag | OPOST | ONLCR };
}

/** Sets the output speed to any baud rate (BOTHER). */
export function setOutputSpeed(t: Termios, baud: number): Termios {
  return { ...t, cflag: (t.cflag & ~CBAUD) | BOTHER, ospeed: baud };
}

/** Sets the input speed to any baud rate (BOTHER in the input half of c_cflag). */
export function setInputSpeed(t: Termios, baud: number): Termios {
  return { ...t, cflag: (t.cflag & ~(CBAUD << IBSHIFT)) | (BOTHER << IBSHIFT), ispeed: baud };
}

/** Both speeds. */
export function setSpeed(t: Termios, baud: number): Termios {
  return setInputSpeed(setOutputSpeed(t, baud), baud);
}

export const outputSpeed = (t: Termios) => t.ospeed;
/** The input speed; 0 input bits mean "same as output". */
export const inputSpeed = (t: Termios) => ((t.cflag >>> IBSHIFT) & CBAUD ? t.ispeed : t.ospeed);

/** tcflush: discards unread input (TCIFLUSH), unsent output (TCOFLUSH) or both. */
export function flush(fd: number, queue = TCIOFLUSH): void {
  ioctlValue(fd, ioctls.TCFLSH, queue, "TCFLSH");
}

/** Bytes written but not yet sent (TIOCOUTQ). */
export function outputPending(fd: number): number {
  const n = scalar.i32();
  ioctl(fd, ioctls.TIOCOUTQ, n, "TIOCOUTQ");
  return n.readInt32LE(0);
}

/** Bytes received and not yet read (TIOCINQ / FIONREAD). */
export function inputPending(fd: number): number {
  const n = scalar.i32();
  ioctl(fd, ioctls.TIOCINQ, n, "TIOCINQ");
  return n.readInt32LE(0);
}

/**
 * tcdrain without blocking: resolves true once the output queue is empty (checked
 * every intervalMs on a timer), false if it is not empty after timeoutMs.
 */
export async function drain(fd: number, opts: { timeoutMs?: number; intervalMs?: number } = {}): Promise<boolean> {
  const end = Date.now() + (opts.timeoutMs ?? 5000);
  for (;;) {
    if (outputPending(fd) === 0) return true;
    if (Date.now() >= end) return false;
    await Bun.sleep(opts.intervalMs ?? 5);
  }
}

export interface Pty {
  /** The master side (what a terminal emulator or a test drives). */
  master: number;
  /** The slave side: a tty, as a serial port would be. */
  slave: number;
  /** The slave's path, /dev/pts/N. */
  path: string;
}

/** A pseudo-terminal pair, both ends non-blocking, neither our controlling terminal. */
export function openPty(): Pty {
  const flags = O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC;
  const master = check("posix_openpt", () => libc.posix_openpt(flags));
  try {
    check("grantpt", () => libc.grantpt(master));
    check("unlockpt", () => libc.unlockpt(master));
    const name = Buffer.alloc(128);
    const r = libc.ptsname_r(master, ptr(name), name.length);
    if (r !== 0) throw new SysError("ptsname_r", r);
    const path = cString(name, 0, name.length);
    return { master, slave: openTty(path, flags), path };
  } catch (e) {
    closeFd(master);
    throw e;
  }
}

/** Thrown by a reader at end of file; watchInput turns it into onEnd(). */
class EndOfInput extends Error {}

/**
 * Delivers what arrives on a tty (or pty master) on the event source: onData with
 * each chunk read (until EAGAIN), onEnd once at end of file or hang-up (EIO on a
 * pty master whose slave closed; no error), or with the error of a failed read.
 * The watch is closed by then.
 */
export function watchInput(fd: number, onData: (data: Buffer) => void, onEnd?: (err?: Error) => void, opts?: WatchOptions): Watch {
  const buf = Buffer.alloc(4096);
  return watchItems(fd, () => {
    const b = readAvailable(fd, buf.length, buf);
    if (b === null) return [];
    if (b.length === 0) throw new EndOfInput();
    return [Buffer.from(b)];
  }, onData, {
    ...opts,
    onError: (e) => onEnd?.(e instanceof EndOfInput || (e instanceof SysError && e.errno === EIO) ? undefined : e),
  });
}
