// The virtual backend (the virtual board): pins wired in pairs (an output on one is
// the level, and an edge, on the other; an undriven input reads low), I2C devices
// that are 256-byte register files with an address pointer (like i2c-stub), SPI
// buses that loop what they send back, and UARTs that are pseudo-terminal pairs
// cross-wired to each other (or to themselves), so uart.ts drives real termios.
import * as termios from "../../../ffi/termios";
import { SysError, writeAvailable } from "../../../ffi/libc";
import { watch, type Watch } from "../../../ffi/loop";
import type { Logger } from "../../../core/log";
import type { PeripheralSectionT } from "../recipe";
import type { Backend, Direction, GpioBackend, GpioLine, I2cBackend, I2cDevice, Level, SpiBackend, SpiDevice, UartBackend } from "./types";

import { ENXIO } from "../../../ffi/errno";

interface VirtualPin {
  direction: Direction;
  out: Level;
  /** The level an input last saw (edges are changes of it). */
  seen: Level;
  onEdge?: (level: Level) => void;
}

class VirtualGpio implements GpioBackend {
  private pins = new Map<string, VirtualPin>();
  constructor(private section: PeripheralSectionT["gpio"]) {
    for (const name of Object.keys(section)) this.pins.set(name, { direction: "in", out: 0, seen: 0 });
  }

  private level(name: string): Level {
    const p = this.pins.get(name)!;
    if (p.direction === "out") return p.out;
    const peer = this.section[name]?.loopback;
    const q = peer ? this.pins.get(peer) : undefined;
    return q && q.direction === "out" ? q.out : 0;
  }

  /** Re-reads the inputs of the pin and its peer: a changed level is an edge. */
  private settle(name: string): void {
    for (const n of [name, this.section[name]?.loopback]) {
      if (!n) continue;
      const p = this.pins.get(n)!;
      if (p.direction !== "in") continue;
      const l = this.level(n);
      if (l === p.seen) continue;
      p.seen = l;
      p.onEdge?.(l);
    }
  }

  open(name: string, onEdge: (level: Level) => void): GpioLine {
    const p = this.pins.get(name)!;
    p.direction = "in";
    p.seen = this.level(name);
    p.onEdge = onEdge;
    this.settle(name);
    let closed = false;
    const self = this;
    return {
      get direction() {
        return p.direction;
      },
      configure(d, level = 0) {
        p.direction = d;
        p.out = level;
        if (d === "in") p.seen = self.level(name);
        self.settle(name);
      },
      read: () => this.level(name),
      write(level) {
        p.out = level;
        self.settle(name);
      },
      close() {
        if (closed) return;
        closed = true;
        // Released: no longer driven (an input again, as a freed line floats).
        p.onEdge = undefined;
        p.direction = "in";
        p.out = 0;
        p.seen = self.level(name);
        self.settle(name);
      },
    };
  }

  usedElsewhere(): boolean {
    return false;
  }
  onExternalChange(): void {}
  close(): void {}
}

/** One simulated I2C device: 256 registers and the pointer that raw reads and writes move. */
class Registers {
  regs = new Uint8Array(256);
  pointer = 0;
}

class VirtualI2c implements I2cBackend {
  private devices = new Map<string, Registers>();
  constructor(section: PeripheralSectionT["i2c"]) {
    for (const [bus, b] of Object.entries(section)) for (const a of b.slaveAddresses) this.devices.set(`${bus}/${a}`, new Registers());
  }

  open(bus: string, address: number): I2cDevice {
    const d = this.devices.get(`${bus}/${address}`);
    // As i2c-dev: any address can be opened; nobody acknowledges where there is no device.
    const dev = () => d ?? raiseErrno("I2C transfer", ENXIO);
    const at = (reg: number, n: number) => Uint8Array.from({ length: n }, (_, i) => dev().regs[(reg + i) & 0xff]!);
    const put = (reg: number, data: Uint8Array) => data.forEach((b, i) => (dev().regs[(reg + i) & 0xff] = b));
    return {
      read: async (size) => {
        const r = dev();
        const out = at(r.pointer, size);
        r.pointer = (r.pointer + size) & 0xff;
        return out;
      },
      write: async (data) => {
        const r = dev();
        r.pointer = data[0]!;
        put(r.pointer, data.subarray(1));
        r.pointer = (r.pointer + data.length - 1) & 0xff;
      },
      readRegByte: async (reg) => at(reg, 1)[0]!,
      readRegWord: async (reg) => {
        const [lo, hi] = at(reg, 2);
        return lo! | (hi! << 8);
      },
      readRegBuffer: async (reg, size) => at(reg, size),
      writeRegByte: async (reg, value) => put(reg, Uint8Array.of(value)),
      writeRegWord: async (reg, value) => put(reg, Uint8Array.of(value & 0xff, value >> 8)),
      writeRegBuffer: async (reg, data) => put(reg, data),
      close: async () => {},
    };
  }

  close(): void {}
}

class VirtualSpi implements SpiBackend {
  open(): SpiDevice {
    return {
      setMode() {},
      setBitsPerWord() {},
      setSpeed() {},
      setLsbFirst() {},
      // A loopback: what is clocked out comes back in.
      transfer: async (tx, read) => (read ? Uint8Array.from(tx) : new Uint8Array(0)),
      close: async () => {},
    };
  }
  close(): void {}
}

/** Bytes from one pty master into another, queued while the other's input is full. */
class Wire {
  private queue: Buffer[] = [];
  private out?: Watch;
  constructor(private to: number) {}
  send(data: Buffer): void {
    this.queue.push(data);
    this.flush();
  }
  private flush(): void {
    while (this.queue.length) {
      const head = this.queue[0]!;
      const n = writeAvailable(this.to, head);
      if (n < head.length) {
        this.queue[0] = head.subarray(n);
        this.out ??= watch(this.to, { writable: () => this.flush() }, { readable: false, writable: true, ref: false });
        return;
      }
      this.queue.shift();
    }
    this.out?.close();
    this.out = undefined;
  }
  close(): void {
    this.out?.close();
    this.queue = [];
  }
}

class VirtualUart implements UartBackend {
  private ptys = new Map<string, termios.Pty>();
  private closers: (() => void)[] = [];

  constructor(section: PeripheralSectionT["uart"], log: Logger) {
    for (const id of Object.keys(section)) {
      const pty = termios.openPty();
      // No echo or line editing until the interface is opened: nothing bounces between the pair.
      termios.setAttr(pty.slave, termios.makeRaw(termios.getAttr(pty.slave)));
      this.ptys.set(id, pty);
      this.closers.push(() => {
        termios.close(pty.master);
        termios.close(pty.slave);
      });
    }
    for (const [id, pty] of this.ptys) {
      const peer = this.ptys.get(section[id]!.loopback ?? id)!;
      const wire = new Wire(peer.master);
      const w = termios.watchInput(pty.master, (data) => wire.send(data), (err) => err && log.warn({ err, uart: id }, "virtual UART wire ended"), { ref: false });
      this.closers.unshift(() => {
        w.close();
        wire.close();
      });
    }
  }

  path(id: string): string {
    return this.ptys.get(id)!.path;
  }

  close(): void {
    for (const c of this.closers.splice(0)) c();
  }
}

function raiseErrno(call: string, errno: number): never {
  throw new SysError(call, errno);
}

export function virtualBackend(section: PeripheralSectionT, o: { log: Logger }): Backend {
  const uart = new VirtualUart(section.uart, o.log);
  return {
    kind: "virtual",
    gpio: new VirtualGpio(section.gpio),
    i2c: new VirtualI2c(section.i2c),
    spi: new VirtualSpi(),
    uart,
    close: () => uart.close(),
  };
}
