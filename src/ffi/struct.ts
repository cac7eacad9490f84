// Reading and writing C structs by their layout table. Every FFI module describes
// the structs it passes to the kernel as { c, size, fields, lengths? }: the C type,
// sizeof, offsetof of each member it touches, and sizeof of its array members.
// test/ffi/cabi.ts compiles the same names against the C headers and compares, so
// codecs that go through Struct use only asserted offsets and sizes.
//
// Little-endian, LP64 (x86_64, aarch64): pointers, size_t and long are 8 bytes.
import { ptr } from "bun:ffi";
import { cString, putCString } from "./libc";

export interface Layout {
  /** The C type, as the probe names it: "struct gpiochip_info", "union i2c_smbus_data". */
  readonly c: string;
  /** sizeof */
  readonly size: number;
  /** offsetof of each member used, by its C member designator ("m.offset" for nested ones). */
  readonly fields: { readonly [member: string]: number };
  /** sizeof of array (and other sized) members: char arrays, nested arrays. */
  readonly lengths?: { readonly [member: string]: number };
}

export type Field<L extends Layout> = keyof L["fields"] & string;

/** The address of a buffer for a pointer member (0 for none or an empty one). */
export const addressOf = (b: Uint8Array | null | undefined): bigint => (b && b.length ? BigInt(ptr(b)) : 0n);

/** One struct of layout L at `base` in a buffer. */
export class Struct<L extends Layout> {
  readonly buf: Buffer;

  constructor(readonly layout: L, buf?: Buffer, readonly base = 0) {
    this.buf = buf ?? Buffer.alloc(layout.size);
    if (base < 0 || base + layout.size > this.buf.length) {
      throw new RangeError(`${layout.c} at ${base} does not fit in ${this.buf.length} bytes`);
    }
  }

  /** A zeroed buffer for n structs of layout (an array argument). */
  static array(layout: Layout, n: number): Buffer {
    return Buffer.alloc(layout.size * n);
  }

  /** Element i of an array of layout in buf. */
  static at<M extends Layout>(layout: M, buf: Buffer, i: number): Struct<M> {
    return new Struct(layout, buf, i * layout.size);
  }

  /** The first n whole elements of an array of layout in buf (all of them by default). */
  static each<M extends Layout>(layout: M, buf: Buffer, n = Math.floor(buf.length / layout.size)): Struct<M>[] {
    const count = Math.min(n, Math.floor(buf.length / layout.size));
    return Array.from({ length: count }, (_, i) => Struct.at(layout, buf, i));
  }

  /** Absolute offset of a member in buf. */
  off(f: Field<L>): number {
    const o = this.layout.fields[f];
    if (o === undefined) throw new Error(`${this.layout.c} has no member ${f} in its table`);
    return this.base + o;
  }

  /** sizeof of a sized member (from the table's lengths). */
  len(f: Field<L>): number {
    const n = this.layout.lengths?.[f];
    if (n === undefined) throw new Error(`${this.layout.c}.${f} has no length in its table`);
    return n;
  }

  u8(f: Field<L>): number { return this.buf.readUInt8(this.off(f)); }
  u16(f: Field<L>): number { return this.buf.readUInt16LE(this.off(f)); }
  be16(f: Field<L>): number { return this.buf.readUInt16BE(this.off(f)); }
  i32(f: Field<L>): number { return this.buf.readInt32LE(this.off(f)); }
  u32(f: Field<L>): number { return this.buf.readUInt32LE(this.off(f)); }
  u64(f: Field<L>): bigint { return this.buf.readBigUInt64LE(this.off(f)); }
  i64(f: Field<L>): bigint { return this.buf.readBigInt64LE(this.off(f)); }

  setU8(f: Field<L>, v: number): this { this.buf.writeUInt8(v & 0xff, this.off(f)); return this; }
  setU16(f: Field<L>, v: number): this { this.buf.writeUInt16LE(v & 0xffff, this.off(f)); return this; }
  setI32(f: Field<L>, v: number): this { this.buf.writeInt32LE(v | 0, this.off(f)); return this; }
  setU32(f: Field<L>, v: number): this { this.buf.writeUInt32LE(v >>> 0, this.off(f)); return this; }
  setU64(f: Field<L>, v: bigint | number): this { this.buf.writeBigUInt64LE(BigInt.asUintN(64, BigInt(v)), this.off(f)); return this; }
  setI64(f: Field<L>, v: bigint | number): this { this.buf.writeBigInt64LE(BigInt.asIntN(64, BigInt(v)), this.off(f)); return this; }
  /** A pointer member: the address of b (NULL for none or an empty buffer); keep b alive while the kernel uses it. */
  setPtr(f: Field<L>, b: Uint8Array | null | undefined): this { return this.setU64(f, addressOf(b)); }

  /** A char array member as text (up to its NUL). */
  str(f: Field<L>): string { return cString(this.buf, this.off(f), this.len(f)); }
  /** Writes text NUL-terminated into a char array member; RangeError when it does not fit. */
  setStr(f: Field<L>, s: string): this { putCString(this.buf, this.off(f), this.len(f), s); return this; }
  /** A sized member's bytes (a view into buf). */
  bytes(f: Field<L>): Buffer { return this.buf.subarray(this.off(f), this.off(f) + this.len(f)); }

  /** The struct of layout M at member f (element i when f is an array of M; bounds-checked when f is sized). */
  nested<M extends Layout>(f: Field<L>, layout: M, i = 0): Struct<M> {
    const n = (this.layout.lengths as Record<string, number> | undefined)?.[f];
    if (n !== undefined && (i + 1) * layout.size > n) throw new RangeError(`${this.layout.c}.${f}[${i}] is out of bounds`);
    return new Struct(layout, this.buf, this.off(f) + i * layout.size);
  }

  /** Element i of a __u32 array member. */
  u32At(f: Field<L>, i: number): number {
    if ((i + 1) * 4 > this.len(f)) throw new RangeError(`${this.layout.c}.${f}[${i}] is out of bounds`);
    return this.buf.readUInt32LE(this.off(f) + 4 * i);
  }
  setU32At(f: Field<L>, i: number, v: number): this {
    if ((i + 1) * 4 > this.len(f)) throw new RangeError(`${this.layout.c}.${f}[${i}] is out of bounds`);
    this.buf.writeUInt32LE(v >>> 0, this.off(f) + 4 * i);
    return this;
  }
}

/** A new zeroed struct of layout. */
export const struct = <L extends Layout>(layout: L): Struct<L> => new Struct(layout);

/** Integer ioctl arguments passed by pointer (their width is part of the ioctl number). */
export const scalar = {
  u8: (v = 0) => Buffer.from([v & 0xff]),
  u32: (v = 0) => { const b = Buffer.alloc(4); b.writeUInt32LE(v >>> 0); return b; },
  i32: (v = 0) => { const b = Buffer.alloc(4); b.writeInt32LE(v | 0); return b; },
  u64: (v: bigint | number = 0) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); return b; },
};

/** Arrays of __u32 (id lists filled by the kernel). */
export const u32Array = (n: number) => Buffer.alloc(4 * n);
export const readU32s = (b: Buffer, n: number) => Array.from({ length: Math.min(n, b.length >> 2) }, (_, i) => b.readUInt32LE(4 * i));
export const u64Array = (n: number) => Buffer.alloc(8 * n);
export const readU64s = (b: Buffer, n: number) => Array.from({ length: Math.min(n, b.length >> 3) }, (_, i) => b.readBigUInt64LE(8 * i));
