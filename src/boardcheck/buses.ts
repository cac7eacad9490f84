// I2C adapters and the addresses the recipe names, spidev nodes, and UART ttys:
// the recipe's peripheralmanager i2c, spi and uart sections, and their drafts.
import { basename, join } from "node:path";
import { lstatSync, readlinkSync, realpathSync } from "node:fs";
import * as i2c from "../ffi/i2c";
import * as spi from "../ffi/spi";
import * as termios from "../ffi/termios";
import { Offload } from "../services/peripheralmanager/backend/offload";
import type { PeripheralSectionT } from "../services/peripheralmanager/recipe";
import { at, bounded, errnoOf, listed, missing, mismatch, ok, unchecked, why, type Part } from "./part";
import { exists, nodes, readText, type ProbeOptions } from "./system";

const hex = (a: number) => `0x${a.toString(16).padStart(2, "0")}`;

/** Every /dev/i2c-N with its adapter name. */
export function listAdapters(o: ProbeOptions): { path: string; node: string; name: string }[] {
  return nodes(o.dev, /^i2c-\d+$/).map((node) => ({
    path: join(o.dev, node), node,
    name: readText(join(o.sys, "class/i2c-dev", node, "name")) ?? readText(join(o.sys, "bus/i2c/devices", node, "name")) ?? "",
  }));
}

import { EBUSY, EIO, ENODEV, ENXIO, EREMOTEIO, ETIMEDOUT } from "../ffi/errno";

/**
 * One part per bus, and one per address it names: the adapter node opens, and each
 * address answers an SMBus read-byte (or a one-byte I2C read), in the transfer
 * thread, within the probe time. Only the recipe's addresses are touched.
 */
export async function checkI2c(buses: PeripheralSectionT["i2c"], o: ProbeOptions): Promise<Part[]> {
  const parts: Part[] = [];
  const adapters = listAdapters(o);
  let offload: Offload | undefined;
  try {
    for (const [bus, b] of Object.entries(buses)) {
      const dev = b.device!;
      if (!exists(dev)) {
        parts.push(missing("i2c", bus, `adapter ${dev} not found (adapters here: ${listed(adapters.map((a) => `${a.node} '${a.name}'`))})`,
          "the recipe's device, or enable the bus in the device tree and load i2c-dev"));
        continue;
      }
      const name = adapters.find((a) => a.path === dev || a.node === basename(safeRealpath(dev)))?.name ?? "";
      let fd: number;
      try {
        fd = i2c.openBus(dev);
      } catch (e) {
        parts.push(mismatch("i2c", bus, `${dev} does not open: ${why(e)}`, "the node's group and mode (udev rule), or run the check as the service's user or root"));
        continue;
      }
      try {
        const funcs = i2c.functionality(fd);
        parts.push(at(ok("i2c", bus, `${dev} '${name}'`), dev));
        const op = funcs & i2c.Func.SMBUS_READ_BYTE ? "smbus.receiveBytes" : funcs & i2c.Func.I2C ? "i2c.read" : undefined;
        for (const addr of b.slaveAddresses) {
          const id = `${bus}@${hex(addr)}`;
          if (!op) {
            parts.push(unchecked("i2c-address", id, `${dev} has neither SMBus read-byte nor plain I2C transfers to probe with`));
            continue;
          }
          try {
            i2c.setAddress(fd, addr);
          } catch (e) {
            const driver = errnoOf(e) === EBUSY ? boundDriver(o, dev, addr) : undefined;
            parts.push(errnoOf(e) === EBUSY
              ? mismatch("i2c-address", id, `${hex(addr)} on ${dev} is bound to the kernel driver ${driver ?? "(unknown)"}`, "unbind it (remove the device tree node) or drop the address from the recipe")
              : mismatch("i2c-address", id, `${dev} refuses address ${hex(addr)}: ${why(e)}`, "the recipe's slaveAddresses"));
            continue;
          }
          offload ??= new Offload();
          try {
            await bounded(offload.run(op === "i2c.read" ? { fd, op, address: addr, size: 1 } : { fd, op, size: 1 }), o.timeoutMs, `${dev} ${hex(addr)}`);
            parts.push(ok("i2c-address", id, `a device answers at ${hex(addr)} on ${dev}`));
          } catch (e) {
            const n = errnoOf(e);
            if ((e as { code?: string }).code === "ETIMEDOUT" || n === ETIMEDOUT) {
              parts.push(mismatch("i2c-address", id, `${dev} did not finish a read at ${hex(addr)} within ${o.timeoutMs} ms (a held bus: SDA or SCL stuck low?)`, "the bus wiring and pull-ups, or the adapter's driver"));
              // The transfer thread is still in that ioctl: no later probe could run.
              break;
            }
            parts.push(n === ENXIO || n === ENODEV || n === EREMOTEIO || n === EIO
              ? missing("i2c-address", id, `no device answers at ${hex(addr)} on ${dev} (${why(e)})`, "the recipe's slaveAddresses, or the device's power, wiring and address pins")
              : mismatch("i2c-address", id, `a read at ${hex(addr)} on ${dev} failed: ${why(e)}`, "the device or the adapter's driver"));
          }
        }
      } catch (e) {
        parts.push(mismatch("i2c", bus, `${dev} is not an i2c-dev adapter: ${why(e)}`, "the recipe's device (an /dev/i2c-N node)"));
      } finally {
        i2c.close(fd);
      }
    }
  } finally {
    offload?.close();
  }
  return parts;
}

function safeRealpath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** The kernel driver bound to addr on the adapter of dev (sysfs N-00AA/driver). */
function boundDriver(o: ProbeOptions, dev: string, addr: number): string | undefined {
  const n = /i2c-(\d+)$/.exec(basename(safeRealpath(dev)))?.[1];
  if (n === undefined) return undefined;
  try {
    return basename(readlinkSync(join(o.sys, "bus/i2c/devices", `${n}-${addr.toString(16).padStart(4, "0")}`, "driver")));
  } catch {
    return undefined;
  }
}

export function checkSpi(buses: PeripheralSectionT["spi"], o: ProbeOptions): Part[] {
  const here = nodes(o.dev, /^spidev\d+\.\d+$/);
  return Object.entries(buses).map(([bus, b]) => {
    const dev = b.device!;
    if (!exists(dev)) {
      return missing("spi", bus, `${dev} not found (spidev nodes here: ${listed(here)})`,
        "the recipe's device, or a spidev-compatible device tree node on the controller's chip select (and spidev loaded)");
    }
    let fd: number;
    try {
      fd = spi.openDevice(dev);
    } catch (e) {
      return mismatch("spi", bus, `${dev} does not open: ${why(e)}`, "the node's group and mode (udev rule), or run the check as the service's user or root");
    }
    try {
      const max = spi.getMaxSpeedHz(fd);
      return at(ok("spi", bus, `${dev} opens (mode ${spi.getMode(fd)}, ${spi.getBitsPerWord(fd) || 8} bits, max ${max} Hz now)`), dev);
    } catch (e) {
      return mismatch("spi", bus, `${dev} is not a spidev node: ${why(e)}`, "the recipe's device (a /dev/spidevB.C node)");
    } finally {
      spi.close(fd);
    }
  });
}

export function scanSpi(o: ProbeOptions): PeripheralSectionT["spi"] {
  const out: PeripheralSectionT["spi"] = {};
  for (const node of nodes(o.dev, /^spidev\d\.\d$/)) {
    const [b, c] = node.slice(6).split(".");
    let maxSpeedHz = 1_000_000;
    try {
      const fd = spi.openDevice(join(o.dev, node));
      try {
        maxSpeedHz = spi.getMaxSpeedHz(fd) || maxSpeedHz;
      } finally {
        spi.close(fd);
      }
    } catch {
      continue;
    }
    out[`SPI${b}${c}`] = { device: join(o.dev, node), maxSpeedHz, description: `${node}` };
  }
  return out;
}

export function scanI2c(o: ProbeOptions): PeripheralSectionT["i2c"] {
  const out: PeripheralSectionT["i2c"] = {};
  for (const a of listAdapters(o)) {
    try {
      i2c.close(i2c.openBus(a.path));
    } catch {
      continue;
    }
    // No address is probed: slaveAddresses is for the engineer to fill in.
    out[`I2C${a.node.slice(4)}`] = { device: a.path, slaveAddresses: [], description: a.name };
  }
  return out;
}

/** The console's ttys (not peripherals). */
function consoles(o: ProbeOptions): Set<string> {
  return new Set((readText(join(o.sys, "class/tty/console/active")) ?? "").split(/\s+/).filter(Boolean));
}

/**
 * ttys that are real UARTs: a device behind them in sysfs, and for the serial core's
 * ports a port type other than unknown (8250 registers ports that have no hardware).
 */
export function realUarts(o: ProbeOptions): string[] {
  const skip = consoles(o);
  return nodes(join(o.sys, "class/tty"), /^tty/).filter((t) => {
    if (skip.has(t) || !exists(join(o.sys, "class/tty", t, "device"))) return false;
    const type = readText(join(o.sys, "class/tty", t, "type"));
    if (type !== undefined && type === "0") return false;
    return exists(join(o.dev, t));
  });
}

export function checkUart(uarts: PeripheralSectionT["uart"], o: ProbeOptions): Part[] {
  return Object.entries(uarts).map(([id, u]) => {
    const dev = u.device!;
    let isLink = false;
    try {
      isLink = lstatSync(dev).isSymbolicLink();
    } catch {
      return missing("uart", id, `${dev} not found (UARTs here: ${listed(realUarts(o))})`, "the recipe's device, or enable the UART in the device tree (status okay, and not as the console)");
    }
    const target = isLink ? ` -> ${safeRealpath(dev)}` : "";
    let fd: number;
    try {
      fd = termios.openTty(dev);
    } catch (e) {
      return mismatch("uart", id, `${dev}${target} does not open: ${why(e)}`, errnoOf(e) === EIO || errnoOf(e) === ENODEV
        ? "the port has no hardware behind it (8250 port type unknown): the device tree or the kernel's serial driver"
        : "the node's group and mode (udev rule), or run the check as the service's user or root");
    }
    try {
      const t = termios.getAttr(fd);
      const console = consoles(o).has(basename(safeRealpath(dev)));
      if (console) return mismatch("uart", id, `${dev}${target} is the system console`, "another UART, or move the console (console= on the kernel command line)");
      return at(ok("uart", id, `${dev}${target} is a tty (termios works; ${termios.outputSpeed(t)} baud now, ${u.baudrate} at open)`), dev);
    } catch (e) {
      return mismatch("uart", id, `${dev}${target} is not a tty: ${why(e)}`, "the recipe's device (a serial tty)");
    } finally {
      termios.close(fd);
    }
  });
}

export function scanUart(o: ProbeOptions): PeripheralSectionT["uart"] {
  const out: PeripheralSectionT["uart"] = {};
  let n = 0;
  for (const t of realUarts(o)) {
    try {
      const fd = termios.openTty(join(o.dev, t));
      try {
        termios.getAttr(fd);
      } finally {
        termios.close(fd);
      }
    } catch {
      continue;
    }
    out[`uart${n++}`] = { device: join(o.dev, t), baudrate: 115200, description: `${t} (driver ${basename(safeRealpath(join(o.sys, "class/tty", t, "device/driver")))})` };
  }
  return out;
}
