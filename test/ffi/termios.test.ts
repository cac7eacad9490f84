// src/ffi/termios.ts: struct termios2, the tty ioctls and flags against the kernel
// headers, then a pty pair on the host: raw and canonical input, output
// processing, any baud rate set and read back, flushing.
import { afterEach, expect, test } from "bun:test";
import * as tty from "../../src/ffi/termios.ts";
import { readAvailable, writeFd } from "../../src/ffi/libc.ts";
import { checkAgainstHeaders, sameNames } from "./cabi.ts";
import { staysTrue, eventually } from "../helpers/harness";

const flagNames = [
  "IGNBRK", "BRKINT", "IGNPAR", "PARMRK", "INPCK", "ISTRIP", "INLCR", "IGNCR", "ICRNL", "IXON", "IXANY", "IXOFF", "IMAXBEL", "IUTF8",
  "OPOST", "ONLCR", "CBAUD", "CSIZE", "CS5", "CS6", "CS7", "CS8", "CSTOPB", "CREAD", "PARENB", "PARODD", "HUPCL", "CLOCAL", "BOTHER",
  "CRTSCTS", "IBSHIFT", "ISIG", "ICANON", "ECHO", "ECHOE", "ECHOK", "ECHONL", "NOFLSH", "TOSTOP", "ECHOCTL", "ECHOKE", "IEXTEN",
  "VINTR", "VQUIT", "VERASE", "VKILL", "VEOF", "VTIME", "VMIN", "VSTART", "VSTOP", "VSUSP", "VEOL", "VWERASE", "VLNEXT",
  "TCIFLUSH", "TCOFLUSH", "TCIOFLUSH", "NCCS", "B0", "B9600", "B19200", "B38400", "B57600", "B115200", "B230400", "B460800",
  "B921600", "B1000000", "B4000000",
] as const;
const T = tty as unknown as Record<string, number>;
checkAgainstHeaders("termios.ts mirrors asm/termbits.h and asm/ioctls.h", {
  headers: ["asm/termbits.h", "asm/ioctls.h"],
  structs: tty.structs,
  ioctls: tty.ioctls,
  consts: sameNames(Object.fromEntries(flagNames.map((k) => [k, T[k]!]))),
});

const open: number[] = [];
afterEach(() => {
  for (const fd of open.splice(0)) tty.close(fd);
});

function pty(): tty.Pty {
  const p = tty.openPty();
  open.push(p.master, p.slave);
  return p;
}

/** Waits (on timers, not blocking) until fd has data, then reads what is there. */
async function readSoon(fd: number, ms = 1000): Promise<string> {
  for (const end = Date.now() + ms; Date.now() < end; await Bun.sleep(5)) {
    const b = readAvailable(fd, 4096);
    if (b && b.length) return b.toString("latin1");
  }
  return "";
}

test("a pty pair: its slave is a tty at /dev/pts/N, both ends non-blocking", () => {
  const p = pty();
  expect(p.path).toMatch(/^\/dev\/pts\/\d+$/);
  expect(readAvailable(p.slave, 16)).toBeNull(); // EAGAIN, not a wait
  expect(readAvailable(p.master, 16)).toBeNull();
  const t = tty.getAttr(p.slave);
  expect(t.cc.length).toBe(tty.NCCS);
  expect(t.lflag & tty.ICANON).toBe(tty.ICANON); // a new pty starts canonical
});

test("raw mode: bytes written on the master are readable on the slave at once, unchanged", async () => {
  const p = pty();
  tty.setAttr(p.slave, tty.makeRaw(tty.getAttr(p.slave)));
  const raw = tty.getAttr(p.slave);
  expect(raw.lflag & (tty.ICANON | tty.ECHO | tty.ISIG)).toBe(0);
  expect(raw.cflag & tty.CSIZE).toBe(tty.CS8);
  expect(raw.cc[tty.VMIN]).toBe(1);
  writeFd(p.master, Buffer.from("ab\rc\x03\x7f"));
  expect(await readSoon(p.slave)).toBe("ab\rc\x03\x7f"); // no line wait, no CR->NL, no ^C, no erase
  writeFd(p.slave, Buffer.from("out\n"));
  expect(await readSoon(p.master)).toBe("out\n"); // no output processing
  expect(readAvailable(p.master, 16)).toBeNull(); // and no echo
});

test("canonical mode: the slave gets whole lines, edited; output NL becomes CR NL", async () => {
  const p = pty();
  tty.setAttr(p.slave, tty.makeCanonical(tty.getAttr(p.slave)));
  writeFd(p.master, Buffer.from("hel"));
  await staysTrue(() => tty.inputPending(p.slave) === 0, 20, "no whole line before its end");
  expect(readAvailable(p.slave, 64)).toBeNull(); // no line yet
  expect(tty.inputPending(p.slave)).toBe(0);
  writeFd(p.master, Buffer.from("lx\x7fo\r")); // erase the x; CR ends the line as NL
  expect(await readSoon(p.slave)).toBe("hello\n");
  writeFd(p.slave, Buffer.from("ok\n"));
  expect(await readSoon(p.master)).toBe("ok\r\n");
});

test("any baud rate is set with BOTHER and read back", () => {
  const p = pty();
  for (const baud of [250000, 115200, 31250]) {
    tty.setAttr(p.slave, tty.setSpeed(tty.getAttr(p.slave), baud));
    const t = tty.getAttr(p.slave);
    expect([tty.outputSpeed(t), tty.inputSpeed(t)]).toEqual([baud, baud]);
  }
  tty.setAttr(p.slave, tty.setInputSpeed(tty.setOutputSpeed(tty.getAttr(p.slave), 9600), 4800));
  const t = tty.getAttr(p.slave);
  expect([tty.outputSpeed(t), tty.inputSpeed(t)]).toEqual([9600, 4800]);
});

test("flushing discards unread input; drain resolves on an empty output queue", async () => {
  const p = pty();
  tty.setAttr(p.slave, tty.makeRaw(tty.getAttr(p.slave)));
  writeFd(p.master, Buffer.from("stale"));
  for (const end = Date.now() + 1000; tty.inputPending(p.slave) < 5 && Date.now() < end;) await Bun.sleep(5);
  expect(tty.inputPending(p.slave)).toBe(5);
  tty.flush(p.slave, tty.TCIFLUSH);
  expect(tty.inputPending(p.slave)).toBe(0);
  expect(readAvailable(p.slave, 16)).toBeNull();
  expect(await tty.drain(p.slave, { timeoutMs: 1000 })).toBe(true);
});

test("watchInput delivers data on the event source and ends when the other side hangs up", async () => {
  const p = tty.openPty();
  open.push(p.master);
  tty.setAttr(p.slave, tty.makeRaw(tty.getAttr(p.slave)));
  const chunks: string[] = [];
  const ended = new Promise<unknown>((resolve) => {
    tty.watchInput(p.master, (d) => {
      chunks.push(d.toString());
      if (chunks.join("") === "hello") tty.close(p.slave); // the master then reads EIO: hang-up
    }, resolve);
  });
  writeFd(p.slave, Buffer.from("hel"));
  await eventually(() => chunks.join("") === "hel");
  writeFd(p.slave, Buffer.from("lo"));
  expect(await ended).toBeUndefined();
  expect(chunks.join("")).toBe("hello");
});
