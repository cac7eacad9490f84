// The peripheral manager's options (docs/services/peripheralmanager.md), read by the
// platform's one loader (src/core/config.ts): the board recipe's
// serviceConfig.peripheralmanager and the Key=Value file peripheralmanager.conf (in
// /etc/devservices unless configFile names another; null: none), whose values win.
import { z } from "zod";
import { configFileOf, loadConfig } from "../../core/config";

export const DEFAULT_GROUPS = {
  gpio: "devservices-gpio",
  i2c: "devservices-i2c",
  spi: "devservices-spi",
  uart: "devservices-uart",
} as const;

/**
 * The baud rates termios has a Bxxx code for (asm/termbits.h: B50 to B4000000; B0,
 * hang-up, is no rate). uart/setBaudrate and the recipe's `baudrate` take these only.
 */
export const TERMIOS_BAUDRATES = [
  50, 75, 110, 134, 150, 200, 300, 600, 1200, 1800, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800,
  500000, 576000, 921600, 1000000, 1152000, 1500000, 2000000, 2500000, 3000000, 3500000, 4000000,
] as const;
const TERMIOS_RATES = new Set<number>(TERMIOS_BAUDRATES);

/** A list of Numbers: an array in the recipe, `9600, 115200` in the file. */
const numberList = <T extends z.ZodType>(item: T) =>
  z.preprocess((v) => (typeof v === "string" ? v.split(",").map((x) => x.trim()).filter(Boolean).map(Number) : v), z.array(item).min(1));

/** The options' schema, built when the service starts (and garbage after). */
export const peripheralOptions = () => {
  /** A 7-bit I2C address, a Number (or a decimal or 0x string in the file). */
  const i2cAddress = z.coerce.number().int().min(0).max(0x7f);
  // A type several options share, built once (core/config.ts, "Shared option types").
  const group = z.string().min(1);
  return z.object({
    /** The Key=Value file (a name in /etc/devservices or an absolute path); null: no file. */
    configFile: z.string().nullable().default("peripheralmanager.conf"),
    /** `auto` follows the board's backend; `linux` or `virtual` force one. */
    backend: z.enum(["auto", "linux", "virtual"]).default("auto"),
    /** Besides root, members of these groups (names or gids) may call the gpio/, i2c/, spi/ and uart/ methods; `*`: any caller. */
    gpioGroup: group.default(DEFAULT_GROUPS.gpio),
    i2cGroup: group.default(DEFAULT_GROUPS.i2c),
    spiGroup: group.default(DEFAULT_GROUPS.spi),
    uartGroup: group.default(DEFAULT_GROUPS.uart),
    /** The consumer name GPIO lines are requested with (shown by gpioinfo). */
    gpioConsumer: z.string().min(1).max(31).default("devservices"),
    /** How long uart/write waits for the tty to take all the bytes. */
    uartWriteTimeoutMs: z.coerce.number().int().positive().default(5000),
    /** The baud rates uart/setBaudrate (and the recipe's `baudrate`) may set: some of the termios rates. */
    uartBaudrates: numberList(
      z.number().int().refine((n) => TERMIOS_RATES.has(n), { message: `must be termios rates (${TERMIOS_BAUDRATES[0]} to ${TERMIOS_BAUDRATES.at(-1)}, the Bxxx codes)` }),
    ).default([...TERMIOS_BAUDRATES]),
    /**
     * The addresses i2c/open takes on a bus whose recipe entry declares no devices
     * (`slaveAddresses` empty): i2cMinAddress to i2cMaxAddress. By default the 7-bit
     * addresses that are not reserved (I2C-bus specification: 0x00-0x02 and 0x78-0x7f
     * are general call, CBUS, other buses, high-speed and 10-bit prefixes).
     */
    i2cMinAddress: i2cAddress.default(0x03),
    i2cMaxAddress: i2cAddress.default(0x77),
  }).superRefine((o, ctx) => {
    if (o.i2cMinAddress > o.i2cMaxAddress) ctx.addIssue({ code: "custom", path: ["i2cMaxAddress"], message: "must not be below i2cMinAddress" });
  });
};
export type PeripheralOptionsT = z.output<ReturnType<typeof peripheralOptions>>;

const FILE_KEYS = [
  "gpioGroup", "i2cGroup", "spiGroup", "uartGroup", "gpioConsumer", "uartWriteTimeoutMs", "uartBaudrates", "i2cMinAddress", "i2cMaxAddress",
] as const;

export function loadPeripheralOptions(section: Record<string, unknown>) {
  return loadConfig({
    service: "peripheralmanager",
    schema: peripheralOptions,
    section,
    file: configFileOf(section, "peripheralmanager.conf"),
    format: { separator: "equals" },
    fileKeys: FILE_KEYS,
    // A bad line of the file is reported and the recipe's value or the default kept.
    onInvalid: "default",
  });
}
