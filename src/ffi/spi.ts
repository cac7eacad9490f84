// spidev (linux/spi/spidev.h, linux/spi/spi.h): /dev/spidevB.C, full-duplex
// transfers (SPI_IOC_MESSAGE) and the device's default mode, word size and speed.
// A transfer is a synchronous ioctl: it returns when the bytes have been clocked out
// and in (their bus time at the transfer's speed).
import { IOR, IOW, O_CLOEXEC, O_RDWR, closeFd, ioctl, openFile } from "./libc.ts";
import { Struct, scalar } from "./struct.ts";

const SPI_IOC_MAGIC = "k";

/** Mode bits (spi.h). */
export const Mode = {
  CPHA: 1 << 0,
  CPOL: 1 << 1,
  MODE_0: 0,
  MODE_1: 1 << 0,
  MODE_2: 1 << 1,
  MODE_3: (1 << 1) | (1 << 0),
  CS_HIGH: 1 << 2,
  LSB_FIRST: 1 << 3,
  THREE_WIRE: 1 << 4,
  LOOP: 1 << 5,
  NO_CS: 1 << 6,
  READY: 1 << 7,
  TX_DUAL: 1 << 8,
  TX_QUAD: 1 << 9,
  RX_DUAL: 1 << 10,
  RX_QUAD: 1 << 11,
  CS_WORD: 1 << 12,
  TX_OCTAL: 1 << 13,
  RX_OCTAL: 1 << 14,
  THREE_WIRE_HIZ: 1 << 15,
  RX_CPHA_FLIP: 1 << 16,
} as const;

export const structs = {
  spi_ioc_transfer: {
    c: "struct spi_ioc_transfer", size: 32,
    fields: {
      tx_buf: 0, rx_buf: 8, len: 16, speed_hz: 20, delay_usecs: 24, bits_per_word: 26, cs_change: 27,
      tx_nbits: 28, rx_nbits: 29, word_delay_usecs: 30, pad: 31,
    },
  },
} as const;

const IOC_SIZEBITS = 14;
/** SPI_IOC_MESSAGE(n): n transfers in one message (0 when n structs exceed the ioctl size field). */
export function SPI_IOC_MESSAGE(n: number): number {
  const size = n * structs.spi_ioc_transfer.size;
  return IOW(SPI_IOC_MAGIC, 0, size < 1 << IOC_SIZEBITS ? size : 0);
}

export const ioctls = {
  "SPI_IOC_MESSAGE(1)": SPI_IOC_MESSAGE(1),
  "SPI_IOC_MESSAGE(2)": SPI_IOC_MESSAGE(2),
  // Settings are __u8 or __u32, by pointer.
  SPI_IOC_RD_MODE: IOR(SPI_IOC_MAGIC, 1, 1),
  SPI_IOC_WR_MODE: IOW(SPI_IOC_MAGIC, 1, 1),
  SPI_IOC_RD_LSB_FIRST: IOR(SPI_IOC_MAGIC, 2, 1),
  SPI_IOC_WR_LSB_FIRST: IOW(SPI_IOC_MAGIC, 2, 1),
  SPI_IOC_RD_BITS_PER_WORD: IOR(SPI_IOC_MAGIC, 3, 1),
  SPI_IOC_WR_BITS_PER_WORD: IOW(SPI_IOC_MAGIC, 3, 1),
  SPI_IOC_RD_MAX_SPEED_HZ: IOR(SPI_IOC_MAGIC, 4, 4),
  SPI_IOC_WR_MAX_SPEED_HZ: IOW(SPI_IOC_MAGIC, 4, 4),
  SPI_IOC_RD_MODE32: IOR(SPI_IOC_MAGIC, 5, 4),
  SPI_IOC_WR_MODE32: IOW(SPI_IOC_MAGIC, 5, 4),
} as const;

/** One segment of a message; per-transfer fields default to the device's settings. */
export interface SpiTransfer {
  /** Bytes sent; omitted sends zeros. */
  tx?: Uint8Array;
  /** Length when there is no tx; with tx it must match tx.length. */
  length?: number;
  /** false skips reading (rx_buf = 0). */
  read?: boolean;
  speedHz?: number;
  delayUsecs?: number;
  bitsPerWord?: number;
  /** Deselect the chip after this transfer. */
  csChange?: boolean;
  txNbits?: number;
  rxNbits?: number;
  wordDelayUsecs?: number;
}

/** Opens /dev/spidevB.C (a path, or bus and chip select). */
export function openDevice(bus: string | number, cs = 0): number {
  return openFile(typeof bus === "number" ? `/dev/spidev${bus}.${cs}` : bus, O_RDWR | O_CLOEXEC);
}

export const close = closeFd;

/** SPI_IOC_MESSAGE(n): runs the transfers as one message; returns what was received, per transfer (empty when read is false). */
export function transfer(fd: number, transfers: SpiTransfer[]): Buffer[] {
  const table = Struct.array(structs.spi_ioc_transfer, transfers.length);
  const keep: Buffer[] = [];
  const rx = transfers.map((t, i) => {
    const len = t.tx ? t.tx.length : (t.length ?? 0);
    if (t.tx && t.length !== undefined && t.length !== t.tx.length) throw new RangeError("length differs from tx.length");
    const tx = t.tx && len ? Buffer.from(t.tx) : null;
    if (tx) keep.push(tx);
    const r = Buffer.alloc(t.read === false ? 0 : len);
    Struct.at(structs.spi_ioc_transfer, table, i).setPtr("tx_buf", tx).setPtr("rx_buf", r).setU32("len", len)
      .setU32("speed_hz", t.speedHz ?? 0).setU16("delay_usecs", t.delayUsecs ?? 0).setU8("bits_per_word", t.bitsPerWord ?? 0)
      .setU8("cs_change", t.csChange ? 1 : 0).setU8("tx_nbits", t.txNbits ?? 0).setU8("rx_nbits", t.rxNbits ?? 0)
      .setU8("word_delay_usecs", t.wordDelayUsecs ?? 0);
    return r;
  });
  ioctl(fd, SPI_IOC_MESSAGE(transfers.length), table, "SPI_IOC_MESSAGE");
  void keep;
  return rx;
}

/** A single full-duplex transfer: sends tx, returns as many received bytes. */
export function exchange(fd: number, tx: Uint8Array, speedHz?: number): Buffer {
  return transfer(fd, [{ tx, speedHz }])[0]!;
}

function getU8(fd: number, req: number, name: string): number {
  const b = scalar.u8();
  ioctl(fd, req, b, name);
  return b[0]!;
}
function setU8(fd: number, req: number, name: string, v: number): void {
  ioctl(fd, req, scalar.u8(v), name);
}
function getU32(fd: number, req: number, name: string): number {
  const b = scalar.u32();
  ioctl(fd, req, b, name);
  return b.readUInt32LE(0);
}
function setU32(fd: number, req: number, name: string, v: number): void {
  ioctl(fd, req, scalar.u32(v), name);
}

/** The full 32-bit mode (Mode bits). */
export const getMode = (fd: number) => getU32(fd, ioctls.SPI_IOC_RD_MODE32, "SPI_IOC_RD_MODE32");
export const setMode = (fd: number, mode: number) => setU32(fd, ioctls.SPI_IOC_WR_MODE32, "SPI_IOC_WR_MODE32", mode);
export const getLsbFirst = (fd: number) => getU8(fd, ioctls.SPI_IOC_RD_LSB_FIRST, "SPI_IOC_RD_LSB_FIRST") !== 0;
export const setLsbFirst = (fd: number, on: boolean) => setU8(fd, ioctls.SPI_IOC_WR_LSB_FIRST, "SPI_IOC_WR_LSB_FIRST", on ? 1 : 0);
/** Bits per word; 0 means 8. */
export const getBitsPerWord = (fd: number) => getU8(fd, ioctls.SPI_IOC_RD_BITS_PER_WORD, "SPI_IOC_RD_BITS_PER_WORD");
export const setBitsPerWord = (fd: number, bits: number) => setU8(fd, ioctls.SPI_IOC_WR_BITS_PER_WORD, "SPI_IOC_WR_BITS_PER_WORD", bits);
export const getMaxSpeedHz = (fd: number) => getU32(fd, ioctls.SPI_IOC_RD_MAX_SPEED_HZ, "SPI_IOC_RD_MAX_SPEED_HZ");
export const setMaxSpeedHz = (fd: number, hz: number) => setU32(fd, ioctls.SPI_IOC_WR_MAX_SPEED_HZ, "SPI_IOC_WR_MAX_SPEED_HZ", hz);
