// i2c-dev (linux/i2c-dev.h, linux/i2c.h): /dev/i2c-N, one target address per fd
// (I2C_SLAVE), SMBus transfers (I2C_SMBUS) and plain combined transfers (I2C_RDWR).
//
// Transfers are synchronous ioctls: each returns when the bus transaction is done
// (the bus time of the bytes moved, bounded by the adapter's timeout, I2C_TIMEOUT).
import { O_CLOEXEC, O_RDWR, closeFd, ioctl, ioctlValue, openFile } from "./libc.ts";
import { Struct, scalar, struct } from "./struct.ts";

export const I2C_RETRIES = 0x0701, I2C_TIMEOUT = 0x0702, I2C_SLAVE = 0x0703, I2C_TENBIT = 0x0704,
  I2C_FUNCS = 0x0705, I2C_SLAVE_FORCE = 0x0706, I2C_RDWR = 0x0707, I2C_PEC = 0x0708, I2C_SMBUS = 0x0720;
export const ioctls = { I2C_SLAVE, I2C_SLAVE_FORCE, I2C_TENBIT, I2C_FUNCS, I2C_RDWR, I2C_PEC, I2C_SMBUS } as const;

/** i2c_msg flags */
export const I2C_M_RD = 0x0001, I2C_M_TEN = 0x0010, I2C_M_RECV_LEN = 0x0400, I2C_M_NOSTART = 0x4000;
export const I2C_RDWR_IOCTL_MAX_MSGS = 42;
export const I2C_SMBUS_BLOCK_MAX = 32;

/** Adapter functionality bits (I2C_FUNCS). */
export const Func = {
  I2C: 0x00000001,
  TENBIT_ADDR: 0x00000002,
  PROTOCOL_MANGLING: 0x00000004,
  SMBUS_PEC: 0x00000008,
  NOSTART: 0x00000010,
  SLAVE: 0x00000020,
  SMBUS_BLOCK_PROC_CALL: 0x00008000,
  SMBUS_QUICK: 0x00010000,
  SMBUS_READ_BYTE: 0x00020000,
  SMBUS_WRITE_BYTE: 0x00040000,
  SMBUS_READ_BYTE_DATA: 0x00080000,
  SMBUS_WRITE_BYTE_DATA: 0x00100000,
  SMBUS_READ_WORD_DATA: 0x00200000,
  SMBUS_WRITE_WORD_DATA: 0x00400000,
  SMBUS_PROC_CALL: 0x00800000,
  SMBUS_READ_BLOCK_DATA: 0x01000000,
  SMBUS_WRITE_BLOCK_DATA: 0x02000000,
  SMBUS_READ_I2C_BLOCK: 0x04000000,
  SMBUS_WRITE_I2C_BLOCK: 0x08000000,
  SMBUS_HOST_NOTIFY: 0x10000000,
} as const;

export const I2C_SMBUS_READ = 1, I2C_SMBUS_WRITE = 0;
/** SMBus transaction types (i2c_smbus_ioctl_data.size). */
export const SMBUS_QUICK = 0, SMBUS_BYTE = 1, SMBUS_BYTE_DATA = 2, SMBUS_WORD_DATA = 3, SMBUS_PROC_CALL = 4,
  SMBUS_BLOCK_DATA = 5, SMBUS_BLOCK_PROC_CALL = 7, SMBUS_I2C_BLOCK_DATA = 8;

export const structs = {
  i2c_msg: { c: "struct i2c_msg", size: 16, fields: { addr: 0, flags: 2, len: 4, buf: 8 } },
  i2c_rdwr_ioctl_data: { c: "struct i2c_rdwr_ioctl_data", size: 16, fields: { msgs: 0, nmsgs: 8 } },
  i2c_smbus_ioctl_data: { c: "struct i2c_smbus_ioctl_data", size: 16, fields: { read_write: 0, command: 1, size: 4, data: 8 } },
  i2c_smbus_data: { c: "union i2c_smbus_data", size: 34, fields: { byte: 0, word: 0, block: 0 }, lengths: { block: 34 } },
} as const;

/** Opens /dev/i2c-N (a path or a bus number). */
export function openBus(bus: string | number): number {
  return openFile(typeof bus === "number" ? `/dev/i2c-${bus}` : bus, O_RDWR | O_CLOEXEC);
}

export const close = closeFd;

/** I2C_SLAVE (or I2C_SLAVE_FORCE): the target address for later transfers on fd. */
export function setAddress(fd: number, addr: number, force = false): void {
  // The argument is the address itself, not a pointer.
  ioctlValue(fd, force ? I2C_SLAVE_FORCE : I2C_SLAVE, addr, force ? "I2C_SLAVE_FORCE" : "I2C_SLAVE");
}

/** I2C_FUNCS: the adapter's functionality mask (Func bits). */
export function functionality(fd: number): number {
  const b = scalar.u64(); // unsigned long
  ioctl(fd, I2C_FUNCS, b, "I2C_FUNCS");
  return Number(b.readBigUInt64LE(0));
}

/** One raw SMBus transaction: data is the union i2c_smbus_data, in and out. */
export function smbusAccess(fd: number, readWrite: number, command: number, size: number, data: Buffer | null): void {
  const args = struct(structs.i2c_smbus_ioctl_data).setU8("read_write", readWrite).setU8("command", command)
    .setU32("size", size).setPtr("data", data);
  ioctl(fd, I2C_SMBUS, args.buf, "I2C_SMBUS");
}

const smbusData = () => struct(structs.i2c_smbus_data);
/** The block member: [count, bytes...] */
const block = (d: Struct<typeof structs.i2c_smbus_data>) => d.bytes("block");

export function writeQuick(fd: number, bit: number): void {
  smbusAccess(fd, bit, 0, SMBUS_QUICK, null);
}

export function readByte(fd: number): number {
  const d = smbusData();
  smbusAccess(fd, I2C_SMBUS_READ, 0, SMBUS_BYTE, d.buf);
  return d.u8("byte");
}

export function writeByte(fd: number, value: number): void {
  smbusAccess(fd, I2C_SMBUS_WRITE, value, SMBUS_BYTE, null);
}

export function readByteData(fd: number, command: number): number {
  const d = smbusData();
  smbusAccess(fd, I2C_SMBUS_READ, command, SMBUS_BYTE_DATA, d.buf);
  return d.u8("byte");
}

export function writeByteData(fd: number, command: number, value: number): void {
  smbusAccess(fd, I2C_SMBUS_WRITE, command, SMBUS_BYTE_DATA, smbusData().setU8("byte", value).buf);
}

export function readWordData(fd: number, command: number): number {
  const d = smbusData();
  smbusAccess(fd, I2C_SMBUS_READ, command, SMBUS_WORD_DATA, d.buf);
  return d.u16("word");
}

export function writeWordData(fd: number, command: number, value: number): void {
  smbusAccess(fd, I2C_SMBUS_WRITE, command, SMBUS_WORD_DATA, smbusData().setU16("word", value).buf);
}

/** SMBus block read: the device sends the length (at most 32 bytes). */
export function readBlockData(fd: number, command: number): Buffer {
  const d = smbusData();
  smbusAccess(fd, I2C_SMBUS_READ, command, SMBUS_BLOCK_DATA, d.buf);
  const b = block(d);
  return Buffer.from(b.subarray(1, 1 + Math.min(b[0]!, I2C_SMBUS_BLOCK_MAX)));
}

/** SMBus block write: up to 32 bytes, preceded on the wire by their count. */
export function writeBlockData(fd: number, command: number, bytes: Uint8Array): void {
  smbusAccess(fd, I2C_SMBUS_WRITE, command, SMBUS_BLOCK_DATA, blockData(bytes).buf);
}

/** I2C block read of length bytes (1..32) from register command. */
export function readI2cBlockData(fd: number, command: number, length: number): Buffer {
  if (length < 1 || length > I2C_SMBUS_BLOCK_MAX) throw new RangeError(`block length 1..${I2C_SMBUS_BLOCK_MAX}`);
  const d = smbusData();
  const b = block(d);
  b[0] = length;
  smbusAccess(fd, I2C_SMBUS_READ, command, SMBUS_I2C_BLOCK_DATA, d.buf);
  return Buffer.from(b.subarray(1, 1 + Math.min(b[0]!, I2C_SMBUS_BLOCK_MAX)));
}

/** I2C block write of up to 32 bytes starting at register command. */
export function writeI2cBlockData(fd: number, command: number, bytes: Uint8Array): void {
  smbusAccess(fd, I2C_SMBUS_WRITE, command, SMBUS_I2C_BLOCK_DATA, blockData(bytes).buf);
}

function blockData(bytes: Uint8Array): Struct<typeof structs.i2c_smbus_data> {
  if (bytes.length < 1 || bytes.length > I2C_SMBUS_BLOCK_MAX) throw new RangeError(`block length 1..${I2C_SMBUS_BLOCK_MAX}`);
  const d = smbusData();
  const b = block(d);
  b[0] = bytes.length;
  b.set(bytes, 1);
  return d;
}

export interface I2cMessage {
  addr: number;
  /** I2C_M_* flags; I2C_M_RD makes it a read of `length` bytes. */
  flags?: number;
  /** Bytes to write (writes). */
  data?: Uint8Array;
  /** Bytes to read (reads). */
  length?: number;
}

/** I2C_RDWR: messages in one combined transfer; returns the buffers of the read messages, in order. */
export function transfer(fd: number, msgs: I2cMessage[]): Buffer[] {
  if (msgs.length < 1 || msgs.length > I2C_RDWR_IOCTL_MAX_MSGS) throw new RangeError(`1..${I2C_RDWR_IOCTL_MAX_MSGS} messages`);
  const isRead = (m: I2cMessage) => ((m.flags ?? 0) & I2C_M_RD) !== 0;
  const bufs = msgs.map((m) => (isRead(m) ? Buffer.alloc(m.length ?? 0) : Buffer.from(m.data ?? new Uint8Array())));
  const table = Struct.array(structs.i2c_msg, msgs.length);
  msgs.forEach((m, i) => {
    Struct.at(structs.i2c_msg, table, i).setU16("addr", m.addr).setU16("flags", m.flags ?? 0)
      .setU16("len", bufs[i]!.length).setPtr("buf", bufs[i]);
  });
  const args = struct(structs.i2c_rdwr_ioctl_data).setPtr("msgs", table).setU32("nmsgs", msgs.length);
  ioctl(fd, I2C_RDWR, args.buf, "I2C_RDWR");
  return bufs.filter((_, i) => isRead(msgs[i]!));
}
