// What the board or the kernel cannot do is refused before it reaches a device:
// I2C addresses the recipe does not declare (or, on a bus that declares none, the
// reserved ones), baud rates termios has no Bxxx code for, SPI transfers that are
// not whole words of the word size, and names that are not the recipe's own
// entries (`constructor`, `__proto__`...). Checked from another uid too, the way an
// unprivileged application on the bus sees it.
import { test, expect, beforeAll, afterAll, describe } from "bun:test";
import { chownSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openBusToAll, spawnScript } from "../helpers/harness";
import * as config from "../../src/services/peripheralmanager/config";
import { parseSection } from "../../src/services/peripheralmanager/recipe";
import { pmEnv, protocolGids, E, OK, err, type PmEnv } from "./setup";

const unknownDevice = E.unknownDevice;
const notSupported = err(12, "Not supported by the device");

describe("on the virtual board", () => {
  let p: PmEnv;
  beforeAll(async () => {
    p = await pmEnv();
  });
  afterAll(() => p.stop());

  test("I2C: on a bus that declares its devices, only those addresses open; the others are error 17 for every method", async () => {
    const { call } = await p.client();
    const none = { name: "I2C0", address: 0x51 };
    expect(await call("i2c/open", none)).toEqual(unknownDevice);
    expect(await call("i2c/open", { name: "I2C0", address: "0x00" })).toEqual(unknownDevice);
    expect(await call("i2c/open", { name: "I2C0", address: 0x7f })).toEqual(unknownDevice);
    for (const [m, extra] of [
      ["i2c/read", { size: 1 }], ["i2c/write", { data: [0] }], ["i2c/readRegByte", { reg: 0 }], ["i2c/readRegWord", { reg: 0 }],
      ["i2c/readRegBuffer", { reg: 0, size: 1 }], ["i2c/writeRegByte", { reg: 0, data: 0 }], ["i2c/writeRegWord", { reg: 0, data: 0 }],
      ["i2c/writeRegBuffer", { reg: 0, data: [0] }], ["i2c/getPollingFd", {}], ["i2c/close", {}],
    ] as const) {
      expect(await call(m, { ...none, ...extra })).toEqual(unknownDevice);
    }
    // Nothing was taken: the declared devices still open, and no lease is left behind.
    expect(await call("i2c/open", { name: "I2C0", address: 0x50 })).toEqual(OK);
    expect(await call("i2c/open", { name: "I2C0", address: 0x68 })).toEqual(OK);
    expect(p.env.rt!.server.stats().leases).toBe(2);
    expect(await call("i2c/close", { name: "I2C0", address: 0x50 })).toEqual(OK);
    expect(await call("i2c/close", { name: "I2C0", address: 0x68 })).toEqual(OK);
    expect(p.env.rt!.server.stats().leases).toBe(0);
  });

  test("UART: setBaudrate takes the termios rates (50 to 4000000) only; others are error 1 and leave the rate as it was", async () => {
    const { call } = await p.client();
    const u = { interfaceId: "uart0" };
    expect(await call("uart/open", u)).toEqual(OK);
    for (const baudrate of [4294967295, 4000001, 250000, 115201, 49, 1, 0x80000000]) {
      expect(await call("uart/setBaudrate", { ...u, baudrate })).toEqual(E.invalid);
      expect(await call("uart/getBaudrate", u)).toEqual({ returnValue: true, baudrate: 115200 });
    }
    for (const baudrate of [50, 75, 134, 9600, 57600, 500000, 921600, 1000000, 3500000, 4000000]) {
      expect(await call("uart/setBaudrate", { ...u, baudrate })).toEqual(OK);
      expect(await call("uart/getBaudrate", u)).toEqual({ returnValue: true, baudrate });
    }
    expect(await call("uart/close", u)).toEqual(OK);
  });

  test("SPI: with more than 8 bits per word a transfer must be whole words (2 bytes up to 16 bits, 4 above): error 12 otherwise", async () => {
    const { call } = await p.client();
    const bus = { name: "SPI01" };
    expect(await call("spi/open", bus)).toEqual(OK);
    expect(await call("spi/setBitsPerWord", { ...bus, nbits: 12 })).toEqual(OK);
    expect(await call("spi/transfer", { ...bus, size: 3 })).toEqual(notSupported);
    expect(await call("spi/transfer", { ...bus, data: [1, 2, 3, 4, 5], size: 5 })).toEqual(notSupported);
    expect(await call("spi/writeBuffer", { ...bus, data: [1, 2, 3] })).toEqual(notSupported);
    expect(await call("spi/writeByte", { ...bus, data: 1 })).toEqual(notSupported);
    expect(await call("spi/transfer", { ...bus, data: [1, 2, 3, 4], size: 4 })).toEqual({ returnValue: true, tx_size: 4, rx_size: 4, rx_data: [1, 2, 3, 4] });
    expect(await call("spi/setBitsPerWord", { ...bus, nbits: 17 })).toEqual(OK);
    expect(await call("spi/transfer", { ...bus, size: 6 })).toEqual(notSupported);
    expect(await call("spi/writeBuffer", { ...bus, data: [1, 2, 3, 4, 5, 6, 7, 8], size: 2 })).toEqual(notSupported);
    expect(await call("spi/writeBuffer", { ...bus, data: [1, 2, 3, 4, 5, 6, 7, 8] })).toEqual({ returnValue: true, size: 8 });
    expect(await call("spi/setBitsPerWord", { ...bus, nbits: 8 })).toEqual(OK);
    expect(await call("spi/transfer", { ...bus, size: 3 })).toMatchObject({ returnValue: true, tx_size: 3 });
    expect(await call("spi/writeByte", { ...bus, data: 1 })).toEqual(OK);
    // The next holder starts from 8 bits again, whatever this one left.
    expect(await call("spi/setBitsPerWord", { ...bus, nbits: 32 })).toEqual(OK);
    expect(await call("spi/close", bus)).toEqual(OK);
    const other = await p.client();
    expect(await other.call("spi/open", bus)).toEqual(OK);
    expect(await other.call("spi/writeByte", { ...bus, data: 1 })).toEqual(OK);
    expect(await other.call("spi/close", bus)).toEqual(OK);
  });

  test("names that are not the recipe's own entries (constructor, __proto__, toString) are unknown, never opened", async () => {
    const { call } = await p.client();
    for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
      expect(await call("gpio/open", { pin: name })).toEqual(E.unknownPin);
      expect(await call("gpio/getPollingFd", { id: name })).toEqual(E.unknownPin);
      expect(await call("i2c/open", { name, address: 0x50 })).toEqual(E.unknownI2c);
      expect(await call("spi/open", { name })).toEqual(E.unknownSpi);
      expect(await call("spi/setFrequency", { name, frequency: 0xffffffff })).toEqual(E.unknownSpi);
      expect(await call("uart/open", { interfaceId: name })).toEqual(E.unknownUart);
      expect(await call("uart/getPollingFd", { id: name })).toEqual(E.unknownUart);
    }
    expect(p.env.rt!.server.stats().leases).toBe(0);
  });
});

describe("a bus that declares no devices", () => {
  let p: PmEnv;
  let narrow: PmEnv;
  const section = {
    i2c: { I2C0: { slaveAddresses: [0x50] }, I2C1: { description: "nothing declared" } },
    uart: { uart0: { baudrate: 9600 } },
  };
  beforeAll(async () => {
    p = await pmEnv({ serviceConfig: { peripheralmanager: { configFile: null } }, peripheralmanager: section } as any);
    narrow = await pmEnv({
      serviceConfig: { peripheralmanager: { configFile: null, i2cMinAddress: 0x08, i2cMaxAddress: 0x3f, uartBaudrates: [9600, 19200] } },
      peripheralmanager: section,
    } as any);
  });
  afterAll(async () => {
    await p?.stop();
    await narrow?.stop();
  });

  test("takes 0x03 to 0x77 and refuses the reserved addresses 0x00-0x02 and 0x78-0x7f with error 17", async () => {
    const { call } = await p.client();
    for (const address of [0x03, 0x40, 0x77]) {
      expect(await call("i2c/open", { name: "I2C1", address })).toEqual(OK);
      // Open as i2c-dev allows; nobody answers on the virtual bus.
      expect(await call("i2c/readRegByte", { name: "I2C1", address, reg: 0 })).toEqual(E.noDevice);
      expect(await call("i2c/close", { name: "I2C1", address })).toEqual(OK);
    }
    for (const address of [0x00, 0x01, 0x02, 0x78, 0x7c, 0x7f]) expect(await call("i2c/open", { name: "I2C1", address })).toEqual(unknownDevice);
    // The bus that declares a device is bound to it.
    expect(await call("i2c/open", { name: "I2C0", address: 0x40 })).toEqual(unknownDevice);
    expect(p.env.rt!.server.stats().leases).toBe(0);
  });

  test("the range and the baud rates come from the configuration (i2cMinAddress, i2cMaxAddress, uartBaudrates)", async () => {
    const { call } = await narrow.client();
    expect(await call("i2c/open", { name: "I2C1", address: 0x07 })).toEqual(unknownDevice);
    expect(await call("i2c/open", { name: "I2C1", address: 0x40 })).toEqual(unknownDevice);
    expect(await call("i2c/open", { name: "I2C1", address: 0x08 })).toEqual(OK);
    expect(await call("i2c/open", { name: "I2C1", address: 0x3f })).toEqual(OK);
    // Declared devices are the bound of their bus whatever the range.
    expect(await call("i2c/open", { name: "I2C0", address: 0x50 })).toEqual(OK);
    const u = { interfaceId: "uart0" };
    expect(await call("uart/open", u)).toEqual(OK);
    expect(await call("uart/setBaudrate", { ...u, baudrate: 115200 })).toEqual(E.invalid);
    expect(await call("uart/setBaudrate", { ...u, baudrate: 19200 })).toEqual(OK);
    expect(await call("uart/getBaudrate", u)).toEqual({ returnValue: true, baudrate: 19200 });
  });
});

test("the recipe's UART baudrate must be one the service may set; maxSpeedHz and line offsets fit the kernel's 32 bits", () => {
  const rates = new Set(config.TERMIOS_BAUDRATES);
  expect(() => parseSection({ uart: { u: { baudrate: 250000 } } }, "b", { baudrates: rates })).toThrow(/uart u: baudrate 250000/);
  expect(() => parseSection({ uart: { u: { baudrate: 115200 } } }, "b", { baudrates: rates })).not.toThrow();
  expect(() => parseSection({ spi: { SPI00: { maxSpeedHz: 2 ** 32 } } }, "b")).toThrow(/maxSpeedHz/);
  expect(() => parseSection({ gpio: { gpio1: { chip: "c", line: 2 ** 32 } } }, "b")).toThrow(/line/);
});

test("uartBaudrates in the Key=Value file is a comma-separated list; a rate termios has no code for is a bad line", () => {
  const dir = mkdtempSync(join(tmpdir(), "devservices-pm-conf-"));
  try {
    const file = join(dir, "peripheralmanager.conf");
    writeFileSync(file, "uartBaudrates=9600, 115200\ni2cMaxAddress=0x3f\n");
    let o = config.loadPeripheralOptions({ configFile: file });
    expect(o.problems).toEqual([]);
    expect(o.config.uartBaudrates).toEqual([9600, 115200]);
    expect(o.config.i2cMaxAddress).toBe(0x3f);
    writeFileSync(file, "uartBaudrates=9600,250000\n");
    o = config.loadPeripheralOptions({ configFile: file });
    expect(o.problems).toEqual([expect.stringMatching(/^line 1: uartBaudrates/)]);
    expect(o.config.uartBaudrates).toEqual([...config.TERMIOS_BAUDRATES]);
    expect(config.TERMIOS_BAUDRATES[0]).toBe(50);
    expect(config.TERMIOS_BAUDRATES.at(-1)).toBe(4000000);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

describe.skipIf(process.getuid?.() !== 0)("from another uid (setpriv)", () => {
  let p: PmEnv;
  let home: string;
  beforeAll(async () => {
    p = await pmEnv();
    openBusToAll(p.env.bus.address);
    home = mkdtempSync(join(tmpdir(), "devservices-pm-home-"));
    chownSync(home, 65534, 65534);
  });
  afterAll(async () => {
    await p?.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  test("an unprivileged application is refused an undeclared I2C address, a baud rate of 4294967295, and a name of Object's", async () => {
    const calls = [
      ["i2c/open", { name: "I2C0", address: 0x10 }],
      ["i2c/open", { name: "I2C0", address: 0x50 }],
      ["uart/open", { interfaceId: "uart1" }],
      ["uart/setBaudrate", { interfaceId: "uart1", baudrate: 4294967295 }],
      ["uart/getBaudrate", { interfaceId: "uart1" }],
      ["spi/open", { name: "constructor" }],
    ];
    // An application with the protocols' groups (without them it is refused before any of this: access.test.ts).
    const proc = spawnScript("test/fixtures/peripheralmanager-prober.ts", [JSON.stringify(calls)], { DEVSERVICES_BUS: p.env.bus.address, HOME: home }, [
      "setpriv", "--reuid=65534", "--regid=65534", `--groups=${protocolGids(["i2c", "spi", "uart"]).join(",")}`,
    ]);
    const line = await proc.waitFor((l) => l.startsWith("RESULTS "), 20000);
    await proc.proc.exited;
    expect(JSON.parse(line.slice(8))).toEqual([unknownDevice, OK, OK, E.invalid, { returnValue: true, baudrate: 115200 }, E.unknownSpi]);
  }, 30000);
});
