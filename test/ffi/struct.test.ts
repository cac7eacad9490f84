// src/ffi/struct.ts: members by table, with bounds kept.
import { expect, test } from "bun:test";
import { Struct, struct } from "../../src/ffi/struct.ts";

const inner = { c: "struct inner", size: 8, fields: { a: 0, b: 4 } } as const;
const outer = { c: "struct outer", size: 32, fields: { n: 0, name: 4, items: 16 }, lengths: { name: 8, items: 16 } } as const;

test("members are read and written at their table offsets, nested structs and arrays included", () => {
  const o = struct(outer).setU32("n", 7).setStr("name", "led0");
  o.nested("items", inner, 1).setU32("a", 0xaabbccdd).setI32("b", -2);
  expect(o.buf.readUInt32LE(0)).toBe(7);
  expect(o.buf.toString("utf8", 4, 8)).toBe("led0");
  expect(o.buf.readUInt32LE(16 + 8)).toBe(0xaabbccdd);
  expect(o.nested("items", inner, 1).i32("b")).toBe(-2);
  expect(o.str("name")).toBe("led0");
  expect(Struct.each(inner, o.buf.subarray(16, 32)).map((s) => s.u32("a"))).toEqual([0, 0xaabbccdd]);
});

test("out of bounds is refused: arrays, strings with their NUL, the buffer", () => {
  const o = struct(outer);
  expect(() => o.nested("items", inner, 2)).toThrow(RangeError);
  expect(() => o.setStr("name", "12345678")).toThrow(RangeError); // 8 bytes leave no room for the NUL
  o.setStr("name", "1234567");
  expect(o.str("name")).toBe("1234567");
  expect(() => new Struct(outer, Buffer.alloc(31))).toThrow(RangeError);
  expect(() => o.len("n")).toThrow(/no length/);
});

test("a char array without a NUL is read to its end", () => {
  const o = struct(outer);
  o.bytes("name").fill(0x41);
  expect(o.str("name")).toBe("AAAAAAAA");
});
