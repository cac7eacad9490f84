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

export const PeripheralOptions = z.object({
  /** The Key=Value file (a name in /etc/devservices or an absolute path); null: no file. */
  configFile: z.string().nullable().default("peripheralmanager.conf"),
  /** `auto` follows the board's backend; `linux` or `virtual` force one. */
  backend: z.enum(["auto", "linux", "virtual"]).default("auto"),
  /** Besides root, members of these groups (names or gids) may call the gpio/, i2c/, spi/ and uart/ methods; `*`: any caller. */
  gpioGroup: z.string().min(1).default(DEFAULT_GROUPS.gpio),
  i2cGroup: z.string().min(1).default(DEFAULT_GROUPS.i2c),
  spiGroup: z.string().min(1).default(DEFAULT_GROUPS.spi),
  uartGroup: z.string().min(1).default(DEFAULT_GROUPS.uart),
  /** The consumer name GPIO lines are requested with (shown by gpioinfo). */
  gpioConsumer: z.string().min(1).max(31).default("devservices"),
  /** How long uart/write waits for the tty to take all the bytes. */
  uartWriteTimeoutMs: z.coerce.number().int().positive().default(5000),
});
export type PeripheralOptionsT = z.output<typeof PeripheralOptions>;

const FILE_KEYS = ["gpioGroup", "i2cGroup", "spiGroup", "uartGroup", "gpioConsumer", "uartWriteTimeoutMs"] as const;

export function loadPeripheralOptions(section: Record<string, unknown>) {
  return loadConfig({
    service: "peripheralmanager",
    schema: PeripheralOptions,
    section,
    file: configFileOf(section, "peripheralmanager.conf"),
    format: { separator: "equals" },
    fileKeys: FILE_KEYS,
    // A bad line of the file is reported and the recipe's value or the default kept.
    onInvalid: "default",
  });
}
