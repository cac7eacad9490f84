// Peripheral manager API (spec part 3, com.vendor.service.peripheralmanager, API
// level 13; config, gpioList, the I2C list and uartList objects from level 29). One
// entry per spec method, grouped by protocol path: gpio/, i2c/, spi/, uart/.
// Who may call (`access`, the D-Bus policy and docs/security.md are made from it):
// root and the protocol's group, every method, list included. A board may change a
// protocol's group (gpioGroup... in config.ts; service.ts applies it per instance).
import { z } from "zod";
import { group } from "../../core/access";
import { answerSchema as answer, once, type Api } from "../../core/service";
import { integerString } from "../../core/jsonschema";
import { DEFAULT_GROUPS } from "./config";

/** Each protocol's default rule: root and members of its group. */
const ACCESS = {
  gpio: group(DEFAULT_GROUPS.gpio),
  i2c: group(DEFAULT_GROUPS.i2c),
  spi: group(DEFAULT_GROUPS.spi),
  uart: group(DEFAULT_GROUPS.uart),
} as const;

// Every failure carries errorCode and errorText (errors.ts; answerSchema, core/service.ts).
const level = 13;

/** Largest raw I2C read or write, and register buffer (i2c-dev takes up to 8192 bytes per message). */
export const I2C_MAX_BYTES = 4096;
/** Largest SPI transfer: spidev's default buffer (its `bufsiz` parameter). */
export const SPI_MAX_BYTES = 4096;
/** Largest UART read or write in one call. */
export const UART_MAX_BYTES = 65536;
/** How uart/read returns and uart/write takes `data`. */
export const DATA_TYPES = ["text", "base64", "hex"] as const;

const byte = once(() => z.number().int().min(0).max(255));
/**
 * A Number, or a string of one in decimal or 0x hexadecimal (the spec declares some
 * Numbers as strings): the string's pattern takes only the spellings of n's range,
 * so the published schema states the bound too.
 */
const numberLike = (n: z.ZodNumber) => z.union([n, integerString(n, { hex: true, trim: true, message: "a number" })]);

const pin = once(() => z.string().min(1).describe("pin ID of the board recipe, gpio<N>"));
const bus = once(() => z.string().min(1).describe("I2C bus name of the board recipe, I2C<N>"));
const address = once(() => numberLike(z.number().int().min(0).max(0x7f)).describe("7-bit device address (Number; a decimal or 0x string is taken too)"));
const reg = once(() => z.number().int().min(0).max(255).describe("register address"));
const spiName = once(() => z.string().min(1).describe("SPI bus name of the board recipe, SPI<NN>"));
const interfaceId = once(() => z.string().min(1).describe("UART interface ID of the board recipe"));
const dataType = once(() => z.enum(DATA_TYPES));
const subscribe = once(() => z.boolean().optional());

export const api = {
  // ---- GPIO -------------------------------------------------------------------
  "gpio/close": {
    summary: "Closes a pin the caller opened: the line is released and the pin is available to others.",
    request: () => z.looseObject({ pin: pin() }),
    response: () => answer({}),
    level,
    access: ACCESS.gpio,
  },
  "gpio/getDirection": {
    summary: "The direction of a pin the caller opened: `in` or `out`.",
    request: () => z.looseObject({ pin: pin() }),
    response: () => answer({ direction: z.enum(["in", "out"]) }),
    level,
    access: ACCESS.gpio,
  },
  "gpio/getPollingFd": {
    summary:
      "An eventfd, passed with the reply, that the service signals on every edge of the caller's open pin (its counter is the number of edges since it was last read).",
    request: () => z.looseObject({ id: pin().describe("pin ID") }),
    response: () => answer({ fd: z.number().describe("index of the descriptor among the reply's Unix fds (always 0)") }),
    passesFd: true,
    level,
    access: ACCESS.gpio,
  },
  "gpio/getValue": {
    summary: "The level of a pin the caller opened, `low` or `high`; subscribers get {value} on every edge (and on every change made with setValue or setDirection).",
    request: () => z.looseObject({ pin: pin(), subscribe: subscribe() }),
    response: () => answer({ subscribed: z.boolean(), value: z.enum(["low", "high"]) }),
    subscribable: true,
    level,
    access: ACCESS.gpio,
  },
  "gpio/list": {
    summary: "Every pin of the board with its status, `available` or `used`; subscribers get the list again whenever a status changes.",
    request: () => z.looseObject({ subscribe: subscribe() }),
    response: () => answer({ subscribed: z.boolean(), gpioList: z.array(z.object({ pin: z.string(), status: z.enum(["available", "used"]) })) }),
    subscribable: true,
    level,
    access: ACCESS.gpio,
  },
  "gpio/open": {
    summary: "Opens a pin for the caller (as an input); fails while another application holds it. Released on close or when the caller leaves the bus.",
    request: () => z.looseObject({ pin: pin() }),
    response: () => answer({}),
    level,
    access: ACCESS.gpio,
  },
  "gpio/setDirection": {
    summary: "Sets the direction of a pin the caller opened: `in`, or output starting low (`outLow`) or high (`outHigh`).",
    request: () => z.looseObject({ pin: pin(), direction: z.enum(["in", "outLow", "outHigh"]) }),
    response: () => answer({}),
    level,
    access: ACCESS.gpio,
  },
  "gpio/setValue": {
    summary: "Drives an output pin the caller opened `low` or `high`.",
    request: () => z.looseObject({ pin: pin(), value: z.enum(["low", "high"]) }),
    response: () => answer({}),
    level,
    access: ACCESS.gpio,
  },

  // ---- I2C --------------------------------------------------------------------
  "i2c/close": {
    summary: "Closes an I2C device (bus and address) the caller opened.",
    request: () => z.looseObject({ name: bus(), address: address() }),
    response: () => answer({}),
    level,
    access: ACCESS.i2c,
  },
  "i2c/getPollingFd": {
    summary: "An eventfd, passed with the reply, that the service signals each time a transfer to the caller's open device completes.",
    request: () => z.looseObject({ name: bus(), address: address() }),
    response: () => answer({ fd: z.number().describe("index of the descriptor among the reply's Unix fds (always 0)") }),
    passesFd: true,
    level,
    access: ACCESS.i2c,
  },
  "i2c/list": {
    summary: "The board's I2C buses: names in i2cBusList and i2cList; with verbose, i2cBusList holds {name, slaveAddress} with the recipe's device addresses.",
    request: () => z.looseObject({ verbose: z.boolean().optional() }),
    response: () => answer({
      i2cList: z.array(z.string()),
      i2cBusList: z.union([z.array(z.string()), z.array(z.object({ name: z.string(), slaveAddress: z.array(z.string()) }))]),
    }),
    level,
    access: ACCESS.i2c,
  },
  "i2c/open": {
    summary:
      "Opens the device at address on an I2C bus for the caller: one of the bus's devices in the board recipe (0x03-0x77, configurable, on a bus that declares none); fails while another application holds it.",
    request: () => z.looseObject({ name: bus(), address: address() }),
    response: () => answer({}),
    level,
    access: ACCESS.i2c,
  },
  "i2c/read": {
    summary: `Reads size bytes from the device (one I2C read message; 1 to ${I2C_MAX_BYTES}).`,
    request: () => z.looseObject({ name: bus(), address: address(), size: z.number().int().min(1).max(I2C_MAX_BYTES) }),
    response: () => answer({ size: z.number(), data: z.array(byte()) }),
    level,
    access: ACCESS.i2c,
  },
  "i2c/readRegBuffer": {
    summary: `Reads size bytes starting at register reg (1 to ${I2C_MAX_BYTES}; at most 32 on an SMBus-only adapter).`,
    request: () => z.looseObject({ name: bus(), address: address(), reg: reg(), size: z.number().int().min(1).max(I2C_MAX_BYTES) }),
    response: () => answer({ size: z.number(), data: z.array(byte()) }),
    level,
    access: ACCESS.i2c,
  },
  "i2c/readRegByte": {
    summary: "Reads the byte of register reg (SMBus read byte data).",
    request: () => z.looseObject({ name: bus(), address: address(), reg: reg() }),
    response: () => answer({ data: byte() }),
    level,
    access: ACCESS.i2c,
  },
  "i2c/readRegWord": {
    summary: "Reads the 16-bit word of register reg (SMBus read word data: low byte first on the wire).",
    request: () => z.looseObject({ name: bus(), address: address(), reg: reg() }),
    response: () => answer({ data: z.number().int().min(0).max(0xffff) }),
    level,
    access: ACCESS.i2c,
  },
  "i2c/write": {
    summary: `Writes data to the device (one I2C write message); size, when given, writes only the first size bytes (1 to ${I2C_MAX_BYTES}).`,
    request: () => z.looseObject({ name: bus(), address: address(), data: z.array(byte()).min(1).max(I2C_MAX_BYTES), size: z.number().int().min(1).max(I2C_MAX_BYTES).optional() }),
    response: () => answer({ size: z.number() }),
    level,
    access: ACCESS.i2c,
  },
  "i2c/writeRegBuffer": {
    summary: "Writes data starting at register reg; size, when given, writes only the first size bytes (at most 32 on an SMBus-only adapter).",
    request: () => z.looseObject({
      name: bus(), address: address(), reg: reg(),
      data: z.array(byte()).min(1).max(I2C_MAX_BYTES),
      size: z.number().int().min(1).max(I2C_MAX_BYTES).optional().describe("declared required by the spec; its sample omits it, and so may the caller"),
    }),
    response: () => answer({ size: z.number() }),
    level,
    access: ACCESS.i2c,
  },
  "i2c/writeRegByte": {
    summary: "Writes one byte to register reg (SMBus write byte data).",
    request: () => z.looseObject({ name: bus(), address: address(), reg: reg(), data: byte() }),
    response: () => answer({}),
    level,
    access: ACCESS.i2c,
  },
  "i2c/writeRegWord": {
    summary: "Writes a 16-bit word to register reg (SMBus write word data).",
    request: () => z.looseObject({ name: bus(), address: address(), reg: reg(), data: z.number().int().min(0).max(0xffff) }),
    response: () => answer({}),
    level,
    access: ACCESS.i2c,
  },

  // ---- SPI --------------------------------------------------------------------
  "spi/close": {
    summary: "Closes an SPI bus the caller opened.",
    request: () => z.looseObject({ name: spiName() }),
    response: () => answer({}),
    level,
    access: ACCESS.spi,
  },
  "spi/list": {
    summary: "The board's SPI buses.",
    request: () => z.looseObject({}),
    response: () => answer({ list: z.array(z.string()) }),
    level,
    access: ACCESS.spi,
  },
  "spi/open": {
    summary: "Opens an SPI bus (a spidev device) for the caller; fails while another application holds it.",
    request: () => z.looseObject({ name: spiName() }),
    response: () => answer({}),
    level,
    access: ACCESS.spi,
  },
  "spi/setBitJustification": {
    summary: "Bit order of words: lsb_first true sends the least significant bit first, false the most significant.",
    request: () => z.looseObject({ name: spiName(), lsb_first: z.boolean() }),
    response: () => answer({}),
    level,
    access: ACCESS.spi,
  },
  "spi/setBitsPerWord": {
    summary: "Word size in bits (1 to 32; what the controller supports). Above 8 bits a transfer is whole words: 2 bytes each up to 16 bits, 4 above.",
    request: () => z.looseObject({ name: spiName(), nbits: z.number().int().min(1).max(32) }),
    response: () => answer({}),
    level,
    access: ACCESS.spi,
  },
  "spi/setDelay": {
    summary: "Microseconds to wait after each transfer before chip select changes and the next transfer starts (0 to 65535).",
    request: () => z.looseObject({ name: spiName(), delay_usecs: z.number().int().min(0).max(0xffff) }),
    response: () => answer({}),
    level,
    access: ACCESS.spi,
  },
  "spi/setFrequency": {
    summary: "Clock frequency in Hz, up to the bus maximum of the board recipe.",
    request: () => z.looseObject({ name: spiName(), frequency: z.number().int().positive().max(0xffffffff) }),
    response: () => answer({}),
    level,
    access: ACCESS.spi,
  },
  "spi/setMode": {
    summary: "Clock polarity and phase, mode 0 to 3 (CPOL = bit 1, CPHA = bit 0).",
    request: () => z.looseObject({ name: spiName(), mode: z.number().int().min(0).max(3) }),
    response: () => answer({}),
    level,
    access: ACCESS.spi,
  },
  "spi/transfer": {
    summary: `Full-duplex transfer of size bytes (1 to ${SPI_MAX_BYTES}): the first size bytes of data, or zeros without data; returns what was received.`,
    request: () => z.looseObject({ name: spiName(), data: z.array(byte()).max(SPI_MAX_BYTES).optional(), size: z.number().int().min(1).max(SPI_MAX_BYTES) }),
    response: () => answer({ tx_size: z.number(), rx_size: z.number(), rx_data: z.array(byte()) }),
    level,
    access: ACCESS.spi,
  },
  "spi/writeBuffer": {
    summary: "Sends data (received bytes are dropped); size, when given, sends only the first size bytes.",
    request: () => z.looseObject({
      name: spiName(),
      data: z.array(byte()).min(1).max(SPI_MAX_BYTES),
      size: z.number().int().min(1).max(SPI_MAX_BYTES).optional().describe("declared required by the spec; its sample omits it, and so may the caller"),
    }),
    response: () => answer({ size: z.number() }),
    level,
    access: ACCESS.spi,
  },
  "spi/writeByte": {
    summary: "Sends one byte.",
    request: () => z.looseObject({ name: spiName(), data: byte() }),
    response: () => answer({}),
    level,
    access: ACCESS.spi,
  },

  // ---- UART -------------------------------------------------------------------
  "uart/close": {
    summary: "Closes a UART interface the caller opened.",
    request: () => z.looseObject({ interfaceId: interfaceId() }),
    response: () => answer({}),
    level,
    access: ACCESS.uart,
  },
  "uart/getBaudrate": {
    summary: "The baud rate of an interface the caller opened, as the tty reports it.",
    request: () => z.looseObject({ interfaceId: interfaceId() }),
    response: () => answer({ baudrate: z.number() }),
    level,
    access: ACCESS.uart,
  },
  "uart/getPollingFd": {
    summary:
      "An eventfd, passed with the reply, that the service signals when input is waiting on the caller's open interface; it is signalled again after a uart/read while input remains.",
    request: () => z.looseObject({ id: interfaceId().describe("interface ID") }),
    response: () => answer({ fd: z.number().describe("index of the descriptor among the reply's Unix fds (always 0)") }),
    passesFd: true,
    level,
    access: ACCESS.uart,
  },
  "uart/list": {
    summary: "Every UART interface of the board with its status, `available` or `used`; subscribers get the list again whenever a status changes.",
    request: () => z.looseObject({ subscribe: subscribe() }),
    response: () => answer({ subscribed: z.boolean(), uartList: z.array(z.object({ interfaceId: z.string(), status: z.enum(["available", "used"]) })) }),
    subscribable: true,
    level,
    access: ACCESS.uart,
  },
  "uart/open": {
    summary: "Opens a UART interface for the caller, raw by default or canonical (line mode) with config.canonical; fails while another application holds it.",
    request: () => z.looseObject({ interfaceId: interfaceId(), config: z.looseObject({ canonical: z.boolean().optional() }).optional() }),
    response: () => answer({}),
    level,
    access: ACCESS.uart,
  },
  "uart/read": {
    summary: `What has arrived, without waiting: up to size bytes, or all of it without size (at most ${UART_MAX_BYTES}); in canonical mode, whole lines. dataType: text (UTF-8), base64 or hex.`,
    request: () => z.looseObject({ interfaceId: interfaceId(), dataType: dataType().optional(), size: z.number().int().min(1).max(UART_MAX_BYTES).optional() }),
    response: () => answer({ data: z.string(), dataType: dataType(), size: z.number() }),
    level,
    access: ACCESS.uart,
  },
  "uart/setBaudrate": {
    summary: "Sets the input and output baud rate: a rate termios has a Bxxx code for, 50 to 4000000 (the configuration's uartBaudrates); others are invalid.",
    request: () => z.looseObject({ interfaceId: interfaceId(), baudrate: z.number().int().min(50).max(4000000) }),
    response: () => answer({}),
    level,
    access: ACCESS.uart,
  },
  "uart/write": {
    summary: "Writes the first size bytes of data (decoded from dataType: text, base64 or hex); answers once the tty has taken them all.",
    request: () => z.looseObject({
      interfaceId: interfaceId(),
      data: z.string(),
      dataType: dataType(),
      size: numberLike(z.number().int().min(0).max(UART_MAX_BYTES)).describe("bytes to write (Number; the spec declares a string)"),
    }),
    response: () => answer({ size: z.number() }),
    level,
    access: ACCESS.uart,
  },
} satisfies Api;

/** The protocol of a method: its path's first segment. */
export type Protocol = "gpio" | "i2c" | "spi" | "uart";
export const protocolOf = (method: string) => method.split("/")[0] as Protocol;
