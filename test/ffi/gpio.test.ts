import { describe, expect, test } from "bun:test";
import * as gpio from "../../src/ffi/gpio.ts";
import { checkAgainstHeaders } from "./cabi.ts";

checkAgainstHeaders("gpio.ts mirrors linux/gpio.h", {
  headers: ["linux/gpio.h"],
  structs: gpio.structs,
  ioctls: gpio.ioctls,
  consts: {
    GPIO_MAX_NAME_SIZE: ["GPIO_MAX_NAME_SIZE", gpio.GPIO_MAX_NAME_SIZE],
    GPIO_V2_LINES_MAX: ["GPIO_V2_LINES_MAX", gpio.GPIO_V2_LINES_MAX],
    GPIO_V2_LINE_NUM_ATTRS_MAX: ["GPIO_V2_LINE_NUM_ATTRS_MAX", gpio.GPIO_V2_LINE_NUM_ATTRS_MAX],
    LINE_CHANGED_CONFIG: ["GPIO_V2_LINE_CHANGED_CONFIG", gpio.LINE_CHANGED_CONFIG],
    ...Object.fromEntries(Object.entries(gpio.LineFlag).map(([k, v]) => [`LineFlag.${k}`, [`GPIO_V2_LINE_FLAG_${k}`, v]])),
  },
});

describe("gpio line config encoding", () => {
  test("flags, per-line flags, output values and debounce become attributes", () => {
    const b = gpio.encodeLineConfig({
      flags: gpio.LineFlag.OUTPUT,
      lineFlags: [{ flags: gpio.LineFlag.INPUT | gpio.LineFlag.EDGE_RISING, mask: 0b100n }],
      outputValues: { bits: 0b01n, mask: 0b11n },
      debounce: { periodUs: 1500, mask: 0b100n },
    });
    expect(b.length).toBe(272);
    expect(b.readBigUInt64LE(0)).toBe(gpio.LineFlag.OUTPUT);
    expect(b.readUInt32LE(8)).toBe(3);
    const attr = (i: number) => ({ id: b.readUInt32LE(32 + i * 24), v: b.readBigUInt64LE(40 + i * 24), mask: b.readBigUInt64LE(48 + i * 24) });
    expect(attr(0)).toEqual({ id: gpio.ATTR_ID_FLAGS, v: gpio.LineFlag.INPUT | gpio.LineFlag.EDGE_RISING, mask: 0b100n });
    expect(attr(1)).toEqual({ id: gpio.ATTR_ID_OUTPUT_VALUES, v: 1n, mask: 3n });
    expect(attr(2)).toEqual({ id: gpio.ATTR_ID_DEBOUNCE, v: 1500n, mask: 4n });
  });
  test("too many attributes is refused", () => {
    const lineFlags = Array.from({ length: 11 }, (_, i) => ({ flags: 0n, mask: 1n << BigInt(i) }));
    expect(() => gpio.encodeLineConfig({ flags: 0n, lineFlags })).toThrow(RangeError);
  });
  test("decodes a line event", () => {
    const b = Buffer.alloc(48);
    b.writeBigUInt64LE(123n, 0); b.writeUInt32LE(2, 8); b.writeUInt32LE(5, 12); b.writeUInt32LE(7, 16); b.writeUInt32LE(3, 20);
    expect(gpio.decodeLineEvent(b)).toEqual({ timestampNs: 123n, id: 2, offset: 5, seqno: 7, lineSeqno: 3 });
  });
});

test("decodes line info with a debounce attribute", () => {
  const b = Buffer.alloc(256);
  b.write("led", 0); b.write("app", 32); b.writeUInt32LE(4, 64); b.writeUInt32LE(1, 68);
  b.writeBigUInt64LE(gpio.LineFlag.USED | gpio.LineFlag.INPUT, 72);
  b.writeUInt32LE(gpio.ATTR_ID_DEBOUNCE, 80); b.writeUInt32LE(2500, 88);
  expect(gpio.decodeLineInfo(b)).toEqual({
    name: "led", consumer: "app", offset: 4, flags: gpio.LineFlag.USED | gpio.LineFlag.INPUT,
    attrs: [{ id: gpio.ATTR_ID_DEBOUNCE, value: 2500n }], debouncePeriodUs: 2500,
  });
});
