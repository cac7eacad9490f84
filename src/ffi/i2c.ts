// i2c-dev (linux/i2c-dev.h, linux/i2c.h): /dev/i2c-N, one target address per fd
// (I2C_SLAVE), SMBus transfers (I2C_SMBUS) and plain combined transfers (I2C_RDWR).
import { O_CLOEXEC, O_RDWR, check, closeFd, ioctl, libc, openFile, ptr } from "./libc.ts";

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
  i2c_smbus_data: { c: "union i2c_smbus_data", size: 34, fields: { byte: 0, word: 0, block: 0 } },
} as const;

/** Opens /dev/i2c-N (a path or a bus number). */
export function openBus(bus: string | number): number {
  return openFile(typeof bus === "number" ? `/dev/i2c-${bus}` : bus, O_RDWR | O_CLOEXEC);
}

export const close = closeFd;

/** I2C_SLAVE (or I2C_SLAVE_FORCE): the target address for later transfers on fd. */
export function setAddress(fd: number, addr: number, force = false): void {
  const req = force ? I2C_SLAVE_FORCE : I2C_SLAVE;
  // The argument is the address itself, not a pointer.
  check(force ? "I2C_SLAVE_FORCE" : "I2C_SLAVE", () => libc.ioctl(fd, BigInt(req), addr as never));
}

/** I2C_FUNCS: the adapter's functionality mask (Func bits). */
export function functionality(fd: number): number {
  const b = Buffer.alloc(8); // unsigned long
  ioctl(fd, I2C_FUNCS, b, "I2C_FUNCS");
  return Number(b.readBigUInt64LE(0));
}

/** One raw SMBus transaction: data is the 34-byte union i2c_smbus_data, in and out. */
export function smbusAccess(fd: number, readWrite: number, command: number, size: number, data: Buffer | null): void {
  const args = Buffer.alloc(structs.i2c_smbus_ioctl_data.size);
  args.writeUInt8(readWrite, 0);
  args.writeUInt8(command, 1);
  args.writeUInt32LE(size, 4);
  args.writeBigUInt64LE(data ? BigInt(ptr(data)) : 0n, 8);
  ioctl(fd, I2C_SMBUS, args, "I2C_SMBUS");
}

const smbusData = () => Buffer.alloc(structs.i2c_smbus_data.size);

export function writeQuick(fd: number, bit: number): void {
  smbusAccess(fd, bit, 0, SMBUS_QUICK, null);
}

export function readByte(fd: number): number {
  const d = smbusData();
  smbusAccess(fd, I2C_SMBUS_READ, 0, SMBUS_BYTE, d);
  return d[0]!;
}

export function writeByte(fd: number, value: number): void {
  smbusAccess(fd, I2C_SMBUS_WRITE, value, SMBUS_BYTE, null);
}

export function readByteData(fd: number, command: number): number {
  const d = smbusData();
  smbusAccess(fd, I2C_SMBUS_READ, command, SMBUS_BYTE_DATA, d);
  return d[0]!;
}

export function writeByteData(fd: number, command: number, value: number): void {
  const d = smbusData();
  d[0] = value;
  smbusAccess(fd, I2C_SMBUS_WRITE, command, SMBUS_BYTE_DATA, d);
}

export function readWordData(fd: number, command: number): number {
  const d = smbusData();
  smbusAccess(fd, I2C_SMBUS_READ, command, SMBUS_WORD_DATA, d);
  return d.readUInt16LE(0);
}

export function writeWordData(fd: number, command: number, value: number): void {
  const d = smbusData();
  d.writeUInt16LE(value, 0);
  smbusAccess(fd, I2C_SMBUS_WRITE, command, SMBUS_WORD_DATA, d);
}

/** SMBus block read: the device sends the length (at most 32 bytes). */
export function readBlockData(fd: number, command: number): Buffer {
  const d = smbusData();
  smbusAccess(fd, I2C_SMBUS_READ, command, SMBUS_BLOCK_DATA, d);
  return Buffer.from(d.subarray(1, 1 + Math.min(d[0]!, I2C_SMBUS_BLOCK_MAX)));
}

/** SMBus block write: up to 32 bytes, preceded on the wire by their count. */
export function writeBlockData(fd: number, command: number, bytes: Uint8Array): void {
  const d = blockData(bytes);
  smbusAccess(fd, I2C_SMBUS_WRITE, command, SMBUS_BLOCK_DATA, d);
}

/** I2C block read of length bytes (1..32) from register command. */
export function readI2cBlockData(fd: number, command: number, length: number): Buffer {
  if (length < 1 || length > I2C_SMBUS_BLOCK_MAX) throw new RangeError(`block length 1..${I2C_SMBUS_BLOCK_MAX}`);
  const d = smbusData();
  d[0] = length;
  smbusAccess(fd, I2C_SMBUS_READ, command, SMBUS_I2C_BLOCK_DATA, d);
  return Buffer.from(d.subarray(1, 1 + d[0]!));
}

/** I2C block write of up to 32 bytes starting at register command. */
export function writeI2cBlockData(fd: number, command: number, bytes: Uint8Array): void {
  smbusAccess(fd, I2C_SMBUS_WRITE, command, SMBUS_I2C_BLOCK_DATA, blockData(bytes));
}

function blockData(bytes: Uint8Array): Buffer {
  if (bytes.length < 1 || bytes.length > I2C_SMBUS_BLOCK_MAX) throw new RangeError(`block length 1..${I2C_SMBUS_BLOCK_MAX}`);
  const d = smbusData();
  d[0] = bytes.length;
  d.set(bytes, 1);
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
  const size = structs.i2c_msg.size;
  const table = Buffer.alloc(size * msgs.length);
  const bufs = msgs.map((m) => {
    const read = ((m.flags ?? 0) & I2C_M_RD) !== 0;
    return read ? Buffer.alloc(m.length ?? 0) : Buffer.from(m.data ?? new Uint8Array());
  });
  msgs.forEach((m, i) => {
    const b = bufs[i]!;
    table.writeUInt16LE(m.addr, i * size);
    table.writeUInt16LE(m.flags ?? 0, i * size + 2);
    table.writeUInt16LE(b.length, i * size + 4);
    table.writeBigUInt64LE(b.length ? BigInt(ptr(b)) : 0n, i * size + 8);
  });
  const args = Buffer.alloc(structs.i2c_rdwr_ioctl_data.size);
  args.writeBigUInt64LE(BigInt(ptr(table)), 0);
  args.writeUInt32LE(msgs.length, 8);
  ioctl(fd, I2C_RDWR, args, "I2C_RDWR");
  return bufs.filter((_, i) => ((msgs[i]!.flags ?? 0) & I2C_M_RD) !== 0);
}
