// Peripheral manager (spec part 3, com.vendor.service.peripheralmanager): GPIO, I2C,
// SPI and UART by the names of the board recipe (recipe.ts). Who may call: root and
// the protocol's group (the table's rule, schemas.ts; a board may change the group).
// A pin, I2C device, SPI bus or UART is a lease of the client that opened it: another
// client's open fails, every other method acts only on a lease the registry lets the
// caller act on (its own connection's, or any for root), and the platform ends the
// lease (so the resource is closed and list subscribers told) when the holder leaves
// the bus.
// Nothing here waits: edges and UART input come from the event source, I2C and SPI
// transfers run on the transfer thread (backend/offload.ts).
// Error table: errors.ts; choices where the spec is silent: docs/decisions/peripheralmanager.md.
import { answer, ok, raise, type ErrorRow, type Json } from "../../core/errors";
import { group, type AccessRule } from "../../core/access";
import { defineService, FdReply, type Call, type ResponseOf } from "../../core/service";
import type { Lease, ReleaseReason } from "../../core/leases";
import { SysError } from "../../ffi/libc";
import { api, protocolOf, UART_MAX_BYTES, type Protocol } from "./schemas";
import { E } from "./errors";
import { loadPeripheralOptions } from "./config";
import { parseSection } from "./recipe";
import { openBackend } from "./backend";
import { PollFd } from "./backend/pollfd";
import { TtyPort } from "./backend/tty";
import type { GpioLine, I2cDevice, Level, SpiDevice } from "./backend/types";

type Api = typeof api;
type Res<M extends keyof Api> = ResponseOf<Api[M]>;


/** What each open resource keeps with its lease. */
interface PinHeld { line: GpioLine; poll: PollFd; level: Level }
interface I2cHeld { dev: I2cDevice; poll: PollFd }
interface SpiHeld { dev: SpiDevice; delayUsecs: number; bitsPerWord: number }
interface UartHeld { port: TtyPort; poll: PollFd }

const LEVEL = { low: 0, high: 1 } as const;
const levelName = (l: Level): "low" | "high" => (l ? "high" : "low");
const hex = (a: number) => `0x${a.toString(16).padStart(2, "0")}`;
/** Bytes of one SPI word in a transfer buffer (the kernel's rule: 1 up to 8 bits, 2 up to 16, else 4). */
const spiWordBytes = (bits: number) => (bits <= 8 ? 1 : bits <= 16 ? 2 : 4);

/** Lease and topic keys. */
const K = {
  pin: (pin: string) => `gpio/${pin}`,
  i2c: (bus: string, address: number) => `i2c/${bus}/${hex(address)}`,
  spi: (name: string) => `spi/${name}`,
  uart: (id: string) => `uart/${id}`,
  value: (pin: string) => `value/${pin}`,
  list: (p: "gpio" | "uart") => `list/${p}`,
};

const WHY: Record<ReleaseReason, string> = {
  released: "closed",
  "owner-gone": "its client left the bus",
  "subscription-ended": "subscription ended",
  "service-stopped": "service stopping",
};

import * as ERRNO from "../../ffi/errno";

/** The row for a kernel error while opening a device. */
export function openRow(e: unknown): ErrorRow {
  const n = e instanceof SysError ? e.errno : undefined;
  if (n === ERRNO.EBUSY) return E.busy;
  if (n === ERRNO.ENOENT || n === ERRNO.EACCES || n === ERRNO.EPERM || n === ERRNO.ENODEV || n === ERRNO.ENXIO) return E.deviceUnavailable;
  return ioRow(e);
}

/** The row for a kernel error of a transfer, setting or tty call. */
export function ioRow(e: unknown): ErrorRow {
  if (!(e instanceof SysError)) return E.internal;
  switch (e.errno) {
    case ERRNO.ENXIO:
    case ERRNO.EREMOTEIO:
    case ERRNO.ENODEV:
      return E.noDevice;
    case ERRNO.EOPNOTSUPP:
    case ERRNO.EINVAL:
    case ERRNO.ENOTTY:
      return E.notSupported;
    case ERRNO.EBUSY:
      return E.busy;
    default:
      return E.ioError;
  }
}

function decode(data: string, type: "text" | "base64" | "hex"): Buffer {
  if (type === "text") return Buffer.from(data, "utf8");
  if (type === "hex") {
    if (!/^([0-9a-fA-F]{2})*$/.test(data)) raise(E.invalidParameters);
    return Buffer.from(data, "hex");
  }
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data) || data.length % 4 !== 0) raise(E.invalidParameters);
  return Buffer.from(data, "base64");
}

export default defineService({
  spec: {
    name: "peripheralmanager",
    busName: "com.vendor.service.peripheralmanager",
    description:
      "Peripheral manager: GPIO pins (character device), I2C devices (i2c-dev), SPI buses (spidev) and UARTs (termios) by the board recipe's names, each opened by one client at a time and released when that client leaves the bus.",
    api,
    badRequest: () => answer(E.invalidParameters),
    internalError: () => answer(E.internal),
    denied: () => answer(E.permissionDenied),
  },

  create(ctx) {
    const origin = `board ${ctx.board.name}`;
    const loaded = loadPeripheralOptions(ctx.config);
    for (const problem of loaded.problems) ctx.log.warn({ file: loaded.file, problem }, "peripheral manager configuration: line ignored");
    const o = loaded.config;
    const baudrates = new Set(o.uartBaudrates);
    const section = parseSection((ctx.board as Record<string, unknown>).peripheralmanager, origin, { baudrates });
    const kind = o.backend === "auto" ? ctx.board.backend : o.backend;
    const backend = openBackend(kind, section, { consumer: o.gpioConsumer, log: ctx.log, origin });
    /** Every live lease of the service, so stop() closes them while the backend is still there. */
    const live = new Set<Lease<unknown>>();
    ctx.log.info(
      { backend: backend.kind, pins: Object.keys(section.gpio).length, i2c: Object.keys(section.i2c), spi: Object.keys(section.spi), uart: Object.keys(section.uart) },
      "peripheral manager ready",
    );

    // ---- leases -----------------------------------------------------------------
    /** Runs fn; a kernel error becomes the row `row(e)` (logged). */
    const attempt = async <T>(what: Json, fn: () => T | Promise<T>, row: (e: unknown) => ErrorRow = ioRow): Promise<T> => {
      try {
        return await fn();
      } catch (e) {
        const r = row(e);
        ctx.log.warn({ ...what, err: e, errorCode: r.code }, "peripheral call failed");
        raise(r);
      }
    };

    /**
     * open: opens the resource and takes the caller's lease on key (undefined is
     * returned), or returns the lease the caller already holds (nothing is opened).
     * Another holder refuses; a failed open takes nothing.
     */
    const take = <D>(call: Call, key: string, what: Json, opening: () => D, close: (d: D, why: ReleaseReason) => void, after?: () => void): Lease<D> | undefined => {
      const mine = ctx.leases.heldBy<D>(call.caller.name, key);
      if (mine) return mine;
      if (ctx.leases.holders(key).length) raise(E.openedByOther);
      let data: D;
      try {
        data = opening();
      } catch (e) {
        const r = openRow(e);
        ctx.log.warn({ ...what, err: e, errorCode: r.code }, "open failed");
        raise(r);
      }
      const lease = ctx.leases.take<D>(call.caller.name, key, {
        data,
        release: (why) => {
          live.delete(lease);
          try {
            close(data, why);
          } finally {
            ctx.log.info({ ...what, client: call.caller.name, why: WHY[why] }, "closed");
            after?.();
          }
        },
      });
      live.add(lease);
      ctx.log.info({ ...what, client: call.caller.name }, "opened");
      after?.();
      return undefined;
    };

    /**
     * The lease on key the caller may use, change or close: the one its connection
     * holds, or, for root, whoever's (the registry's one ownership check, mayAct).
     * Free, or held by another client: error 7.
     */
    const leaseFor = <D>(call: Call, key: string): Lease<D> => {
      const lease = ctx.leases.forActor<D>(call.caller, key);
      if (lease === "free" || lease === "others") raise(E.notOpened);
      return lease;
    };
    const held = <D>(call: Call, key: string): D => leaseFor<D>(call, key).data;
    const close = (call: Call, key: string) => {
      const lease = leaseFor(call, key);
      ctx.log.info({ key, holder: lease.owner, by: call.caller.name, uid: call.caller.uid }, "close asked");
      lease.release();
    };

    // ---- GPIO -------------------------------------------------------------------
    const knownPin = (pin: string) => section.gpio[pin] ?? raise(E.unknownPin);
    const pinHeld = (call: Call, pin: string) => (knownPin(pin), held<PinHeld>(call, K.pin(pin)));

    /** A new level of an open pin: value subscribers and its polling fd hear of it. */
    const pinLevel = (pin: string, level: Level, h: PinHeld | undefined = ctx.leases.holders<PinHeld>(K.pin(pin))[0]?.data) => {
      if (!h) return;
      h.level = level;
      ctx.topics.publish(K.value(pin), { returnValue: true, pin, value: levelName(level) });
      h.poll.signal();
    };

    const lists: Partial<Record<"gpio" | "uart", string>> = {};
    const gpioList = () =>
      Object.keys(section.gpio).map((pin) => ({
        pin,
        status: ctx.leases.holders(K.pin(pin)).length || backend.gpio.usedElsewhere(pin) ? ("used" as const) : ("available" as const),
      }));
    const uartList = () =>
      Object.keys(section.uart).map((interfaceId) => ({
        interfaceId,
        status: ctx.leases.holders(K.uart(interfaceId)).length ? ("used" as const) : ("available" as const),
      }));
    /** Tells list subscribers, when the list differs from what they were last told. */
    const publishList = (p: "gpio" | "uart") => {
      const list = p === "gpio" ? { gpioList: gpioList() } : { uartList: uartList() };
      const text = JSON.stringify(list);
      if (lists[p] === text) return;
      lists[p] = text;
      ctx.topics.publish(K.list(p), { returnValue: true, ...list });
    };
    lists.gpio = JSON.stringify({ gpioList: gpioList() });
    lists.uart = JSON.stringify({ uartList: uartList() });
    backend.gpio.onExternalChange(() => publishList("gpio"));

    // ---- I2C, SPI, UART ---------------------------------------------------------
    const knownBus = (name: string) => section.i2c[name] ?? raise(E.unknownI2cBus);
    /** An address the recipe has on the bus: one of its declared devices, or, where it declares none, one of the configured range. */
    const knownDevice = (name: string, address: number) => {
      const bus = knownBus(name);
      const ok = bus.slaveAddresses.length ? bus.slaveAddresses.includes(address) : address >= o.i2cMinAddress && address <= o.i2cMaxAddress;
      if (!ok) raise(E.unknownI2cDevice);
      return bus;
    };
    const i2cHeld = (call: Call, name: string, address: number) => (knownDevice(name, address), held<I2cHeld>(call, K.i2c(name, address)));
    /** A transfer on an open I2C device, off the main thread; its polling fd hears when it is done. */
    const i2c = async <T>(call: Call, req: { name: string; address: number }, fn: (d: I2cDevice) => Promise<T>): Promise<T> => {
      const h = i2cHeld(call, req.name, req.address);
      const r = await attempt({ method: call.method, bus: req.name, address: hex(req.address) }, () => fn(h.dev));
      h.poll.signal();
      return r;
    };

    const knownSpi = (name: string) => section.spi[name] ?? raise(E.unknownSpiBus);
    const spiHeld = (call: Call, name: string) => (knownSpi(name), held<SpiHeld>(call, K.spi(name)));
    const spiSet = async (call: Call, name: string, fn: (h: SpiHeld) => void) => {
      const h = spiHeld(call, name);
      await attempt({ method: call.method, bus: name }, () => fn(h));
      return ok();
    };
    const spiSend = (call: Call, name: string, tx: Uint8Array, read: boolean) => {
      const h = spiHeld(call, name);
      // Words wider than 8 bits take 2 or 4 bytes each: the kernel refuses (EINVAL) a buffer of part of a word.
      if (tx.length % spiWordBytes(h.bitsPerWord)) raise(E.notSupported);
      return attempt({ method: call.method, bus: name }, () => h.dev.transfer(tx, read, h.delayUsecs));
    };
    /** The first n bytes of data; n beyond data is a bad request. */
    const first = (data: number[], n: number | undefined) => {
      if (n !== undefined && n > data.length) raise(E.invalidParameters);
      return Uint8Array.from(n === undefined ? data : data.slice(0, n));
    };

    const knownUart = (id: string) => section.uart[id] ?? raise(E.unknownUart);
    const uartHeld = (call: Call, id: string) => (knownUart(id), held<UartHeld>(call, K.uart(id)));

    // ---- access -----------------------------------------------------------------
    // Each method's rule is its protocol's configured group (the table's by default; `*`:
    // any caller); the runtime logs a rule that differs from the table's.
    const groups: Record<Protocol, string> = { gpio: o.gpioGroup, i2c: o.i2cGroup, spi: o.spiGroup, uart: o.uartGroup };
    const access = Object.fromEntries(
      Object.keys(api).map((m) => {
        const g = groups[protocolOf(m)];
        return [m, group(g)];
      }),
    ) as Record<keyof Api, AccessRule>;

    return {
      access,
      handlers: {
        // ---- GPIO ---------------------------------------------------------------
        "gpio/close"(req, call) {
          knownPin(req.pin);
          close(call, K.pin(req.pin));
          return ok();
        },

        "gpio/getDirection"(req, call) {
          return ok({ direction: pinHeld(call, req.pin).line.direction });
        },

        "gpio/getPollingFd"(req, call) {
          const h = pinHeld(call, req.id);
          return new FdReply(ok({ fd: 0 }), h.poll.duplicate());
        },

        async "gpio/getValue"(req, call): Promise<Res<"gpio/getValue">> {
          const h = pinHeld(call, req.pin);
          const level = await attempt({ method: call.method, pin: req.pin }, () => h.line.read());
          if (call.subscription) ctx.topics.add(K.value(req.pin), call.subscription);
          return ok({ subscribed: !!call.subscription, value: levelName(level) });
        },

        "gpio/list"(_req, call) {
          if (call.subscription) ctx.topics.add(K.list("gpio"), call.subscription, { shared: true }); // every pin's status, the same for the whole group: shared
          return ok({ subscribed: !!call.subscription, gpioList: gpioList() });
        },

        "gpio/open"(req, call) {
          knownPin(req.pin);
          const pin = req.pin;
          take<PinHeld>(
            call, K.pin(pin), { pin },
            () => {
              const line = backend.gpio.open(pin, (level) => pinLevel(pin, level));
              try {
                return { line, poll: new PollFd(), level: line.read() };
              } catch (e) {
                line.close();
                throw e;
              }
            },
            (h) => {
              // The subscribers of its value were its holder's: they end with it.
              ctx.topics.end(K.value(pin), { returnValue: false, ...answer(E.notOpened), pin });
              h.line.close();
              h.poll.close();
            },
            () => publishList("gpio"),
          );
          return ok();
        },

        async "gpio/setDirection"(req, call) {
          const h = pinHeld(call, req.pin);
          const out = req.direction !== "in";
          await attempt({ method: call.method, pin: req.pin }, () => {
            h.line.configure(out ? "out" : "in", req.direction === "outHigh" ? 1 : 0);
            const level = h.line.read();
            if (level !== h.level) pinLevel(req.pin, level, h);
          });
          return ok();
        },

        async "gpio/setValue"(req, call) {
          const h = pinHeld(call, req.pin);
          if (h.line.direction !== "out") raise(E.notOutput);
          const level = LEVEL[req.value];
          await attempt({ method: call.method, pin: req.pin }, () => h.line.write(level));
          if (level !== h.level) pinLevel(req.pin, level, h);
          return ok();
        },

        // ---- I2C ----------------------------------------------------------------
        "i2c/close"(req, call) {
          knownDevice(req.name, req.address);
          close(call, K.i2c(req.name, req.address));
          return ok();
        },

        "i2c/getPollingFd"(req, call) {
          const h = i2cHeld(call, req.name, req.address);
          return new FdReply(ok({ fd: 0 }), h.poll.duplicate());
        },

        "i2c/list"(req) {
          const names = Object.keys(section.i2c);
          const i2cBusList = req.verbose
            ? Object.entries(section.i2c).map(([name, b]) => ({ name, slaveAddress: b.slaveAddresses.map(hex) }))
            : names;
          return ok({ i2cList: names, i2cBusList });
        },

        "i2c/open"(req, call) {
          knownDevice(req.name, req.address);
          const { name, address } = req;
          take<I2cHeld>(
            call, K.i2c(name, address), { bus: name, address: hex(address) },
            () => ({ dev: backend.i2c.open(name, address), poll: new PollFd() }),
            (h) => {
              h.poll.close();
              h.dev.close().catch((e) => ctx.log.warn({ err: e, bus: name }, "closing an I2C device failed"));
            },
          );
          return ok();
        },

        async "i2c/read"(req, call) {
          const data = await i2c(call, req, (d) => d.read(req.size));
          return ok({ size: data.length, data: [...data] });
        },

        async "i2c/readRegBuffer"(req, call) {
          const data = await i2c(call, req, (d) => d.readRegBuffer(req.reg, req.size));
          return ok({ size: data.length, data: [...data] });
        },

        async "i2c/readRegByte"(req, call) {
          return ok({ data: await i2c(call, req, (d) => d.readRegByte(req.reg)) });
        },

        async "i2c/readRegWord"(req, call) {
          return ok({ data: await i2c(call, req, (d) => d.readRegWord(req.reg)) });
        },

        async "i2c/write"(req, call) {
          const bytes = first(req.data, req.size);
          await i2c(call, req, (d) => d.write(bytes));
          return ok({ size: bytes.length });
        },

        async "i2c/writeRegBuffer"(req, call) {
          const bytes = first(req.data, req.size);
          await i2c(call, req, (d) => d.writeRegBuffer(req.reg, bytes));
          return ok({ size: bytes.length });
        },

        async "i2c/writeRegByte"(req, call) {
          await i2c(call, req, (d) => d.writeRegByte(req.reg, req.data));
          return ok();
        },

        async "i2c/writeRegWord"(req, call) {
          await i2c(call, req, (d) => d.writeRegWord(req.reg, req.data));
          return ok();
        },

        // ---- SPI ----------------------------------------------------------------
        "spi/close"(req, call) {
          knownSpi(req.name);
          close(call, K.spi(req.name));
          return ok();
        },

        "spi/list"() {
          return ok({ list: Object.keys(section.spi) });
        },

        "spi/open"(req, call) {
          const bus = knownSpi(req.name);
          const name = req.name;
          take<SpiHeld>(
            call, K.spi(name), { bus: name },
            () => {
              const dev = backend.spi.open(name);
              try {
                // Every holder starts from the same settings, whatever the last one left.
                dev.setMode(0);
                dev.setBitsPerWord(8);
                dev.setSpeed(bus.maxSpeedHz);
                dev.setLsbFirst(false);
              } catch (e) {
                void dev.close();
                throw e;
              }
              return { dev, delayUsecs: 0, bitsPerWord: 8 };
            },
            (h) => void h.dev.close().catch((e) => ctx.log.warn({ err: e, bus: name }, "closing an SPI device failed")),
          );
          return ok();
        },

        "spi/setBitJustification": (req, call) => spiSet(call, req.name, (h) => h.dev.setLsbFirst(req.lsb_first)),
        "spi/setBitsPerWord": (req, call) =>
          spiSet(call, req.name, (h) => {
            h.dev.setBitsPerWord(req.nbits);
            h.bitsPerWord = req.nbits;
          }),
        "spi/setDelay": (req, call) => spiSet(call, req.name, (h) => (h.delayUsecs = req.delay_usecs)),
        "spi/setFrequency"(req, call) {
          const bus = knownSpi(req.name);
          spiHeld(call, req.name);
          if (req.frequency > bus.maxSpeedHz) raise(E.frequencyTooHigh);
          return spiSet(call, req.name, (h) => h.dev.setSpeed(req.frequency));
        },
        "spi/setMode": (req, call) => spiSet(call, req.name, (h) => h.dev.setMode(req.mode)),

        async "spi/transfer"(req, call) {
          const tx = req.data ? first(req.data, req.size) : new Uint8Array(req.size);
          const rx = await spiSend(call, req.name, tx, true);
          return ok({ tx_size: tx.length, rx_size: rx.length, rx_data: [...rx] });
        },

        async "spi/writeBuffer"(req, call) {
          const tx = first(req.data, req.size);
          await spiSend(call, req.name, tx, false);
          return ok({ size: tx.length });
        },

        async "spi/writeByte"(req, call) {
          await spiSend(call, req.name, Uint8Array.of(req.data), false);
          return ok();
        },

        // ---- UART ---------------------------------------------------------------
        "uart/close"(req, call) {
          knownUart(req.interfaceId);
          close(call, K.uart(req.interfaceId));
          return ok();
        },

        async "uart/getBaudrate"(req, call) {
          const h = uartHeld(call, req.interfaceId);
          return ok({ baudrate: await attempt({ method: call.method, uart: req.interfaceId }, () => h.port.baudrate) });
        },

        "uart/getPollingFd"(req, call) {
          const h = uartHeld(call, req.id);
          const fd = h.poll.duplicate();
          h.port.notifyInput(() => h.poll.signal());
          return new FdReply(ok({ fd: 0 }), fd);
        },

        "uart/list"(_req, call) {
          if (call.subscription) ctx.topics.add(K.list("uart"), call.subscription, { shared: true }); // every interface's status, the same for the whole group: shared
          return ok({ subscribed: !!call.subscription, uartList: uartList() });
        },

        async "uart/open"(req, call) {
          const u = knownUart(req.interfaceId);
          const id = req.interfaceId;
          const canonical = req.config?.canonical ?? false;
          const mine = take<UartHeld>(
            call, K.uart(id), { uart: id },
            () => ({ port: new TtyPort(backend.uart.path(id), { canonical, baudrate: u.baudrate }), poll: new PollFd() }),
            (h) => {
              h.port.close();
              h.poll.close();
            },
            () => publishList("uart"),
          );
          // Opened again by its holder: the new config applies.
          if (mine) await attempt({ method: call.method, uart: id }, () => mine.data.port.configure(canonical));
          return ok();
        },

        async "uart/read"(req, call) {
          const h = uartHeld(call, req.interfaceId);
          const dataType = req.dataType ?? "text";
          const bytes = await attempt({ method: call.method, uart: req.interfaceId }, () => h.port.read(req.size ?? UART_MAX_BYTES));
          return ok({ data: bytes.toString(dataType === "text" ? "utf8" : dataType), dataType, size: bytes.length });
        },

        async "uart/setBaudrate"(req, call) {
          const h = uartHeld(call, req.interfaceId);
          // A rate termios has a Bxxx code for (and the configuration allows); BOTHER would take any u32.
          if (!baudrates.has(req.baudrate)) raise(E.invalidParameters);
          await attempt({ method: call.method, uart: req.interfaceId }, () => {
            h.port.baudrate = req.baudrate;
          });
          return ok();
        },

        async "uart/write"(req, call) {
          const h = uartHeld(call, req.interfaceId);
          const bytes = decode(req.data, req.dataType);
          if (req.size > bytes.length) raise(E.invalidParameters);
          const n = await attempt({ method: call.method, uart: req.interfaceId }, () => h.port.write(bytes.subarray(0, req.size), o.uartWriteTimeoutMs));
          return ok({ size: n });
        },
      },

      stop() {
        for (const lease of [...live]) lease.release();
        backend.close();
      },
    };
  },
});
