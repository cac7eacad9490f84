// The linux backend: GPIO through the character device (uAPI v2 line requests, edge
// events and line-info changes on the event source), I2C through i2c-dev, SPI
// through spidev, UARTs as the recipe's ttys. Transfers run on the transfer thread
// (offload.ts); settings and line ioctls return at once and run here.
import { readdirSync } from "node:fs";
import * as gpio from "../../../ffi/gpio";
import * as i2c from "../../../ffi/i2c";
import * as spi from "../../../ffi/spi";
import { SysError } from "../../../ffi/libc";
import type { Watch } from "../../../ffi/loop";
import type { Logger } from "../../../core/log";
import type { PeripheralSectionT } from "../recipe";
import { Offload } from "./offload";
import type { Backend, Direction, GpioBackend, GpioLine, I2cBackend, I2cDevice, Level, SpiBackend, SpiDevice, UartBackend } from "./types";

import { EOPNOTSUPP, ENOENT } from "../../../ffi/errno";
const EDGES = gpio.LineFlag.INPUT | gpio.LineFlag.EDGE_RISING | gpio.LineFlag.EDGE_FALLING;

/** The chips of the recipe's pins, opened when first needed and kept (line info and requests). */
class Chips {
  private fds = new Map<string, number>();
  private byLabel = new Map<string, string>();
  constructor(private dev = "/dev") {}

  /** A /dev/gpiochipN path, or the path of the chip with this label. */
  path(chip: string): string {
    if (chip.startsWith("/")) return chip;
    const known = this.byLabel.get(chip);
    if (known) return known;
    for (const name of readdirSync(this.dev).filter((n) => /^gpiochip\d+$/.test(n)).sort()) {
      const path = `${this.dev}/${name}`;
      let fd = -1;
      try {
        fd = gpio.openChip(path);
        const label = gpio.chipInfo(fd).label;
        this.byLabel.set(label, path);
      } catch {
        // Not ours to read: skip it.
      } finally {
        if (fd >= 0) gpio.close(fd);
      }
      if (this.byLabel.get(chip) === path) return path;
    }
    throw new SysError(`no GPIO chip labelled ${chip}`, ENOENT);
  }

  fd(chip: string): number {
    const path = this.path(chip);
    let fd = this.fds.get(path);
    if (fd === undefined) this.fds.set(path, (fd = gpio.openChip(path)));
    return fd;
  }

  each(): [string, number][] {
    return [...this.fds];
  }

  close(): void {
    for (const fd of this.fds.values()) gpio.close(fd);
    this.fds.clear();
  }
}

class LinuxGpio implements GpioBackend {
  private chips = new Chips();
  private offsets = new Map<string, number>();
  private infoWatches: Watch[] = [];
  private listeners: (() => void)[] = [];

  constructor(private pins: PeripheralSectionT["gpio"], private consumer: string, private log: Logger) {
    // Line-info changes of the recipe's lines: another process requesting or releasing one changes `list`.
    const byChip = new Map<string, string[]>();
    for (const [pin, p] of Object.entries(pins)) byChip.set(p.chip!, [...(byChip.get(p.chip!) ?? []), pin]);
    for (const [chip, names] of byChip) {
      try {
        const fd = this.chips.fd(chip);
        for (const pin of names) {
          try {
            gpio.addLineInfoWatch(fd, this.offset(pin));
          } catch (e) {
            log.warn({ err: e, chip, pin }, "GPIO line not watched (a line its chip does not have fails to open)");
          }
        }
        this.infoWatches.push(gpio.watchLineInfo(fd, () => this.listeners.forEach((fn) => fn()), {
          ref: false,
          onError: (e) => log.warn({ err: e, chip }, "GPIO chip line-info watch ended"),
        }));
      } catch (e) {
        log.warn({ err: e, chip, pins: names }, "GPIO chip not available; its pins fail to open until it is");
      }
    }
  }

  private pin(pin: string) {
    const p = this.pins[pin];
    if (!p) throw new SysError(`no pin ${pin}`, ENOENT);
    return p;
  }

  /**
   * The pin's line offset (a line name is looked up on its chip once). An offset the
   * chip does not have (at least its line count) is a device that is not there.
   */
  private offset(pin: string): number {
    const p = this.pin(pin);
    const known = this.offsets.get(pin);
    if (known !== undefined) return known;
    const fd = this.chips.fd(p.chip!);
    const lines = gpio.chipInfo(fd).lines;
    if (typeof p.line === "number") {
      if (p.line >= lines) throw new SysError(`line ${p.line} of ${p.chip}, which has ${lines} lines`, ENOENT);
      this.offsets.set(pin, p.line);
      return p.line;
    }
    for (let i = 0; i < lines; i++) {
      if (gpio.lineInfo(fd, i).name === p.line) {
        this.offsets.set(pin, i);
        return i;
      }
    }
    throw new SysError(`no line named ${p.line} on ${p.chip}`, ENOENT);
  }

  open(pin: string, onEdge: (level: Level) => void): GpioLine {
    const chipFd = this.chips.fd(this.pin(pin).chip!);
    const offset = this.offset(pin);
    const fd = gpio.requestLines(chipFd, { offsets: [offset], consumer: this.consumer, config: { flags: EDGES } });
    let direction: Direction = "in";
    let closed = false;
    const watch = gpio.watchEdges(fd, (ev) => {
      if (direction === "in") onEdge(ev.id === gpio.EVENT_RISING_EDGE ? 1 : 0);
    }, { onError: (e) => this.log.warn({ err: e, pin }, "GPIO edge watch ended") });
    return {
      get direction() {
        return direction;
      },
      configure(d, level = 0) {
        if (d === "out") gpio.setConfig(fd, { flags: gpio.LineFlag.OUTPUT, outputValues: { bits: BigInt(level), mask: 1n } });
        else gpio.setConfig(fd, { flags: EDGES });
        direction = d;
      },
      read: () => (gpio.getValues(fd, 1n) ? 1 : 0),
      write: (level) => gpio.setValues(fd, BigInt(level), 1n),
      close() {
        if (closed) return;
        closed = true;
        watch.close();
        gpio.close(fd);
      },
    };
  }

  usedElsewhere(pin: string): boolean {
    try {
      return (gpio.lineInfo(this.chips.fd(this.pin(pin).chip!), this.offset(pin)).flags & gpio.LineFlag.USED) !== 0n;
    } catch {
      return false;
    }
  }

  onExternalChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  close(): void {
    for (const w of this.infoWatches) w.close();
    this.chips.close();
  }
}

/** Runs a device's jobs in order and lets close() wait for the last one. */
class Serial {
  private last: Promise<unknown> = Promise.resolve();
  run<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.last.then(fn, fn);
    this.last = p.catch(() => {});
    return p;
  }
  idle(): Promise<unknown> {
    return this.last;
  }
}

class LinuxI2c implements I2cBackend {
  constructor(private buses: PeripheralSectionT["i2c"], private offload: Offload) {}

  open(bus: string, address: number): I2cDevice {
    const fd = i2c.openBus(this.buses[bus]!.device!);
    let funcs: number;
    try {
      i2c.setAddress(fd, address);
      funcs = i2c.functionality(fd);
    } catch (e) {
      i2c.close(fd);
      throw e;
    }
    const plain = (funcs & i2c.Func.I2C) !== 0;
    const has = (bit: number) => (funcs & bit) !== 0;
    const unsupported = (what: string) => Promise.reject(new SysError(what, EOPNOTSUPP));
    const q = new Serial();
    const run = <T>(job: Parameters<Offload["run"]>[0]) => q.run(() => this.offload.run<T>(job));
    let closed = false;
    return {
      // Raw messages: I2C_RDWR; an SMBus-only adapter gets the SMBus forms with the same bytes on the wire
      // (a read becomes that many receive-byte transactions).
      read: (size) =>
        plain ? run<Uint8Array>({ op: "i2c.read", fd, address, size })
        : has(i2c.Func.SMBUS_READ_BYTE) ? run<Uint8Array>({ op: "smbus.receiveBytes", fd, size })
        : unsupported("I2C read"),
      write: async (data) => {
        if (plain) await run({ op: "i2c.write", fd, address, data });
        else if (data.length === 1 && has(i2c.Func.SMBUS_WRITE_BYTE)) await run({ op: "smbus.sendByte", fd, value: data[0]! });
        else if (data.length >= 2 && data.length <= i2c.I2C_SMBUS_BLOCK_MAX + 1 && has(i2c.Func.SMBUS_WRITE_I2C_BLOCK))
          await run({ op: "smbus.writeI2cBlock", fd, reg: data[0]!, data: data.subarray(1) });
        else await unsupported("I2C write");
      },
      readRegByte: (reg) => run<number>({ op: "smbus.readByteData", fd, reg }),
      readRegWord: (reg) => run<number>({ op: "smbus.readWordData", fd, reg }),
      readRegBuffer: (reg, size) =>
        plain ? run<Uint8Array>({ op: "i2c.writeRead", fd, address, data: Uint8Array.of(reg), size })
        : size <= i2c.I2C_SMBUS_BLOCK_MAX && has(i2c.Func.SMBUS_READ_I2C_BLOCK) ? run<Uint8Array>({ op: "smbus.readI2cBlock", fd, reg, size })
        : unsupported("I2C register read"),
      writeRegByte: async (reg, value) => void (await run({ op: "smbus.writeByteData", fd, reg, value })),
      writeRegWord: async (reg, value) => void (await run({ op: "smbus.writeWordData", fd, reg, value })),
      writeRegBuffer: async (reg, data) => {
        if (plain) {
          const buf = new Uint8Array(data.length + 1);
          buf[0] = reg;
          buf.set(data, 1);
          await run({ op: "i2c.write", fd, address, data: buf });
        } else if (data.length <= i2c.I2C_SMBUS_BLOCK_MAX && has(i2c.Func.SMBUS_WRITE_I2C_BLOCK)) await run({ op: "smbus.writeI2cBlock", fd, reg, data });
        else await unsupported("I2C register write");
      },
      async close() {
        if (closed) return;
        closed = true;
        await q.idle();
        i2c.close(fd);
      },
    };
  }

  close(): void {}
}

class LinuxSpi implements SpiBackend {
  constructor(private buses: PeripheralSectionT["spi"], private offload: Offload) {}

  open(name: string): SpiDevice {
    const fd = spi.openDevice(this.buses[name]!.device!);
    const q = new Serial();
    let closed = false;
    return {
      // Only CPOL and CPHA change; the device's other mode bits (CS_HIGH, LSB_FIRST...) stay.
      setMode: (mode) => spi.setMode(fd, (spi.getMode(fd) & ~spi.Mode.MODE_3) | mode),
      setBitsPerWord: (bits) => spi.setBitsPerWord(fd, bits),
      setSpeed: (hz) => spi.setMaxSpeedHz(fd, hz),
      setLsbFirst: (on) => spi.setLsbFirst(fd, on),
      transfer: (tx, read, delayUsecs) => q.run(() => this.offload.run<Uint8Array>({ op: "spi.transfer", fd, data: tx, read, delayUsecs })),
      async close() {
        if (closed) return;
        closed = true;
        await q.idle();
        spi.close(fd);
      },
    };
  }

  close(): void {}
}

export function linuxBackend(section: PeripheralSectionT, o: { consumer: string; log: Logger }): Backend {
  const offload = new Offload();
  const gpioBackend = new LinuxGpio(section.gpio, o.consumer, o.log);
  const uart: UartBackend = { path: (id) => section.uart[id]!.device!, close() {} };
  return {
    kind: "linux",
    gpio: gpioBackend,
    i2c: new LinuxI2c(section.i2c, offload),
    spi: new LinuxSpi(section.spi, offload),
    uart,
    close() {
      gpioBackend.close();
      offload.close();
    },
  };
}

