// The board recipe's `peripheralmanager` section (docs/board-recipes.md): what pins,
// I2C buses, SPI buses and UARTs the board has, by the names clients use, and where
// each is in the kernel (linux backend) or what it is wired to (virtual backend).
import { z } from "zod";
import { parseRecorded } from "../../core/config";

/**
 * The types the section's entries share, built once per section schema (core/config.ts,
 * "Shared option types"): a device node, a name, a note, an integer.
 */
const sectionTypes = () => ({
  device: z.string().min(1).describe("device node, /dev/..."),
  name: z.string().min(1),
  note: z.string().optional(),
  int: z.number().int(),
});
type SectionTypes = ReturnType<typeof sectionTypes>;
/** What the kernel takes as a u32 (line offsets, spidev's max_speed_hz). */
const U32 = 0xffffffff;

export const gpioPin = (t: SectionTypes) => z.object({
  /** GPIO chip: a /dev/gpiochipN path, or the chip's label (found among /dev/gpiochip*). */
  chip: t.name.optional(),
  /** Line: its offset on the chip, or its name. */
  line: z.union([t.int.min(0).max(U32), t.name]).optional(),
  /** Physical header pin, for people. */
  header: t.int.positive().optional(),
  description: t.note,
  /** Virtual backend: the pin this one is wired to (an output on one drives the other). */
  loopback: t.note,
});

export const i2cBus = (t: SectionTypes) => z.object({
  /** /dev/i2c-N */
  device: t.device.optional(),
  /**
   * Addresses of the devices on the bus (the verbose list's slaveAddress): i2c/open
   * takes these only. Empty: any address of the configured range (i2cMinAddress to
   * i2cMaxAddress, by default 0x03-0x77).
   */
  slaveAddresses: z.array(t.int.min(0).max(0x7f)).default([]),
  description: t.note,
});

export const spiBus = (t: SectionTypes) => z.object({
  /** /dev/spidevB.C */
  device: t.device.optional(),
  /** The bus maximum: spi/setFrequency refuses more. */
  maxSpeedHz: t.int.positive().max(U32),
  description: t.note,
});

export const uart = (t: SectionTypes) => z.object({
  /** The tty: /dev/ttyS0, /dev/serial0, a pty... */
  device: t.device.optional(),
  /** Rate set when the interface is opened: one of the rates uart/setBaudrate takes (config uartBaudrates). */
  baudrate: t.int.positive().default(115200),
  description: t.note,
  /** Virtual backend: the interface this one is cross-wired to (TX to RX both ways). */
  loopback: t.note,
});

/** The section's schema, built when the service starts (and garbage after). */
export const peripheralSection = () => {
  const t = sectionTypes();
  return z.object({
    gpio: z.record(z.string().regex(/^gpio\d+$/, "pin IDs are gpio<N>"), gpioPin(t)).default({}),
    i2c: z.record(z.string().regex(/^I2C\d+$/, "I2C bus names are I2C<N>"), i2cBus(t)).default({}),
    spi: z.record(z.string().regex(/^SPI\d\d$/, "SPI bus names are SPI<NN>"), spiBus(t)).default({}),
    uart: z.record(t.name, uart(t)).default({}),
  });
};
export type PeripheralSectionT = z.output<ReturnType<typeof peripheralSection>>;

/** A table whose lookups find only its own entries: a caller's `constructor` or `__proto__` is no name of the board. */
const ownEntries = <T>(table: Record<string, T>): Record<string, T> => Object.assign(Object.create(null) as Record<string, T>, table);

/**
 * The board's section (absent: a board without peripherals); throws naming the field
 * when invalid. With `baudrates`, a UART's `baudrate` must be one of them. Its tables
 * have no prototype, so a lookup by a caller's name finds the recipe's entries only.
 */
export function parseSection(data: unknown, origin: string, o: { baudrates?: ReadonlySet<number> } = {}): PeripheralSectionT {
  const r = parseRecorded("peripheralmanager section", peripheralSection, data ?? {});
  if (!r.success) throw new Error(`${origin}: the peripheralmanager section is invalid: ${z.prettifyError(r.error)}`);
  const s = { ...r.data, gpio: ownEntries(r.data.gpio), i2c: ownEntries(r.data.i2c), spi: ownEntries(r.data.spi), uart: ownEntries(r.data.uart) };
  for (const [name, p] of Object.entries(s.gpio)) {
    if (p.loopback !== undefined && !s.gpio[p.loopback]) throw new Error(`${origin}: gpio ${name} loops back to ${p.loopback}, which is not a pin of the board`);
  }
  for (const [name, u] of Object.entries(s.uart)) {
    if (u.loopback !== undefined && !s.uart[u.loopback]) throw new Error(`${origin}: uart ${name} loops back to ${u.loopback}, which is not an interface of the board`);
    if (o.baudrates && !o.baudrates.has(u.baudrate)) throw new Error(`${origin}: uart ${name}: baudrate ${u.baudrate} is not one of the rates the service may set (uartBaudrates: termios rates)`);
  }
  return s;
}

/** What the linux backend needs of every entry; throws naming the first entry that lacks it. */
export function requireDevices(s: PeripheralSectionT, origin: string): void {
  for (const [name, p] of Object.entries(s.gpio)) {
    if (p.chip === undefined || p.line === undefined) throw new Error(`${origin}: gpio ${name} needs chip and line on a linux board`);
  }
  for (const [kind, table] of [["i2c", s.i2c], ["spi", s.spi], ["uart", s.uart]] as const) {
    for (const [name, e] of Object.entries(table)) if (!e.device) throw new Error(`${origin}: ${kind} ${name} needs device on a linux board`);
  }
}
