// What the service needs of a backend, per protocol. The linux backend drives the
// kernel (GPIO character device, i2c-dev, spidev); the virtual one simulates a board
// (wired pin pairs, register files, loopback buses). UARTs are ttys on both: the
// virtual backend makes pseudo-terminal pairs, so uart.ts drives real termios either way.
// Failures are SysErrors (src/ffi/libc.ts) whose errno the service maps to its table.

export type Level = 0 | 1;
export type Direction = "in" | "out";

export interface GpioLine {
  readonly direction: Direction;
  /** Reconfigures the line; an output starts at `level`. */
  configure(direction: Direction, level?: Level): void;
  read(): Level;
  /** Drives an output. */
  write(level: Level): void;
  close(): void;
}

export interface GpioBackend {
  /** Requests the pin as an input; onEdge gets the new level on every edge while it is an input. */
  open(pin: string, onEdge: (level: Level) => void): GpioLine;
  /** Held outside this service (another process, a kernel driver). */
  usedElsewhere(pin: string): boolean;
  /** Runs fn when a pin's use outside this service may have changed. */
  onExternalChange(fn: () => void): void;
  close(): void;
}

export interface I2cDevice {
  read(size: number): Promise<Uint8Array>;
  write(data: Uint8Array): Promise<void>;
  readRegByte(reg: number): Promise<number>;
  readRegWord(reg: number): Promise<number>;
  readRegBuffer(reg: number, size: number): Promise<Uint8Array>;
  writeRegByte(reg: number, value: number): Promise<void>;
  writeRegWord(reg: number, value: number): Promise<void>;
  writeRegBuffer(reg: number, data: Uint8Array): Promise<void>;
  /** Closes once the transfers in flight are done. */
  close(): Promise<void>;
}

export interface I2cBackend {
  open(bus: string, address: number): I2cDevice;
  close(): void;
}

export interface SpiSettings {
  /** 0..3 */
  mode: number;
  bitsPerWord: number;
  speedHz: number;
  lsbFirst: boolean;
  delayUsecs: number;
}

export interface SpiDevice {
  setMode(mode: number): void;
  setBitsPerWord(bits: number): void;
  setSpeed(hz: number): void;
  setLsbFirst(on: boolean): void;
  /** One full-duplex transfer; read false drops what comes back. */
  transfer(tx: Uint8Array, read: boolean, delayUsecs: number): Promise<Uint8Array>;
  close(): Promise<void>;
}

export interface SpiBackend {
  open(name: string): SpiDevice;
  close(): void;
}

export interface UartBackend {
  /** The tty the interface is. */
  path(interfaceId: string): string;
  close(): void;
}

export interface Backend {
  kind: "linux" | "virtual";
  gpio: GpioBackend;
  i2c: I2cBackend;
  spi: SpiBackend;
  uart: UartBackend;
  close(): void;
}
