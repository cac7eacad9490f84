// The recipe section: the shipped boards' sections are valid and complete for their
// backend; a linux board whose devices are missing starts, and opening them fails
// with "Device unavailable"; invalid sections stop the service naming the field.
import { test, expect, afterAll } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../helpers/harness";
import { parseSection, requireDevices } from "../../src/services/peripheralmanager/recipe";
import { pmEnv, E, type PmEnv } from "./setup";

const boards = readdirSync(join(ROOT, "recipes/boards")).filter((f) => f.endsWith(".json"));

test("every shipped board's section is valid; linux boards name every device", () => {
  for (const f of boards) {
    const b = JSON.parse(readFileSync(join(ROOT, "recipes/boards", f), "utf8"));
    const s = parseSection(b.peripheralmanager, f);
    if (b.backend === "linux") expect(() => requireDevices(s, f)).not.toThrow();
  }
});

test("the Raspberry Pi 4: header GPIOs by BCM number, i2c-1, spidev0.0/0.1, serial0", () => {
  const b = JSON.parse(readFileSync(join(ROOT, "recipes/boards/rpi4.json"), "utf8"));
  expect(b.backend).toBe("linux");
  expect(b.services).toContain("peripheralmanager");
  const s = parseSection(b.peripheralmanager, "rpi4");
  expect(s.gpio.gpio17).toMatchObject({ chip: "pinctrl-bcm2711", line: 17, header: 11 });
  expect(s.gpio.gpio4).toMatchObject({ line: 4, header: 7 });
  expect(s.gpio.gpio21).toMatchObject({ line: 21, header: 40 });
  // Pins taken by I2C1 (2, 3), SPI0 (7-11) and the UART (14, 15) are not offered as GPIOs.
  for (const n of [2, 3, 7, 8, 9, 10, 11, 14, 15]) expect(s.gpio[`gpio${n}`]).toBeUndefined();
  expect(Object.keys(s.gpio).length).toBe(17);
  expect(new Set(Object.values(s.gpio).map((p) => p.header)).size).toBe(17);
  expect(s.i2c).toEqual({ I2C1: expect.objectContaining({ device: "/dev/i2c-1" }) });
  expect(Object.fromEntries(Object.entries(s.spi).map(([k, v]) => [k, v.device]))).toEqual({ SPI00: "/dev/spidev0.0", SPI01: "/dev/spidev0.1" });
  expect(s.uart).toEqual({ serial0: expect.objectContaining({ device: "/dev/serial0", baudrate: 115200 }) });
});

test("invalid sections are refused, naming what is wrong", () => {
  expect(() => parseSection({ gpio: { pin4: {} } }, "b")).toThrow(/gpio\.pin4/);
  expect(() => parseSection({ i2c: { i2c1: {} } }, "b")).toThrow(/i2c\.i2c1/);
  expect(() => parseSection({ spi: { SPI0: { maxSpeedHz: 1 } } }, "b")).toThrow(/spi\.SPI0\b/);
  expect(() => parseSection({ spi: { SPI00: {} } }, "b")).toThrow(/maxSpeedHz/);
  expect(() => parseSection({ gpio: { gpio1: { loopback: "gpio2" } } }, "b")).toThrow(/gpio2/);
  expect(() => requireDevices(parseSection({ gpio: { gpio1: { line: 1 } } }, "b"), "b")).toThrow(/gpio1 needs chip and line/);
  expect(() => requireDevices(parseSection({ uart: { u: {} } }, "b"), "b")).toThrow(/uart u needs device/);
});

let p: PmEnv | undefined;
afterAll(() => p?.stop());

test("a linux board whose chip and device nodes are missing: the service starts; opening fails with Device unavailable", async () => {
  p = await pmEnv({
    name: "missing",
    backend: "linux",
    services: ["peripheralmanager"],
    serviceConfig: { peripheralmanager: { configFile: null } },
    peripheralmanager: {
      gpio: { gpio1: { chip: "no-such-chip-label", line: 1 }, gpio2: { chip: "/dev/gpiochip-devservices-none", line: 2 } },
      i2c: { I2C9: { device: "/dev/i2c-devservices-none" } },
      spi: { SPI99: { device: "/dev/spidev-devservices-none", maxSpeedHz: 1000 } },
    },
  });
  const { call } = await p.client();
  expect(await call("gpio/list")).toEqual({ returnValue: true, subscribed: false, gpioList: [{ pin: "gpio1", status: "available" }, { pin: "gpio2", status: "available" }] });
  expect(await call("gpio/open", { pin: "gpio1" })).toEqual(E.unavailable);
  expect(await call("gpio/open", { pin: "gpio2" })).toEqual(E.unavailable);
  expect(await call("i2c/open", { name: "I2C9", address: 0x50 })).toEqual(E.unavailable);
  expect(await call("spi/open", { name: "SPI99" })).toEqual(E.unavailable);
  expect(p.env.rt!.server.stats().leases).toBe(0);
});
