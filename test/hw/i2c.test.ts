// i2c-stub (chip at 0x50) through i2c-dev: registers written by SMBus transfers read back.
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as i2c from "../../src/ffi/i2c.ts";
import { classDevice, guest } from "./vboard.ts";

guest("I2C on i2c-stub", () => {
  let fd = -1;
  beforeAll(() => {
    const dev = classDevice("i2c-dev", (n) => n.includes("SMBus stub"));
    if (!dev) throw new Error("no i2c-stub adapter");
    fd = i2c.openBus(dev);
    i2c.setAddress(fd, 0x50);
  });
  afterAll(() => i2c.close(fd));

  test("the adapter does SMBus but not plain I2C", () => {
    const f = i2c.functionality(fd);
    for (const bit of [i2c.Func.SMBUS_READ_BYTE_DATA, i2c.Func.SMBUS_WRITE_BYTE_DATA, i2c.Func.SMBUS_READ_WORD_DATA,
      i2c.Func.SMBUS_WRITE_WORD_DATA, i2c.Func.SMBUS_READ_I2C_BLOCK, i2c.Func.SMBUS_WRITE_I2C_BLOCK]) {
      expect(f & bit).toBe(bit);
    }
    expect(f & i2c.Func.I2C).toBe(0);
    expect(() => i2c.transfer(fd, [{ addr: 0x50, data: Uint8Array.of(0) }])).toThrow(expect.objectContaining({ errno: 95 }));
  });

  test("byte data", () => {
    i2c.writeByteData(fd, 0x10, 0xa5);
    i2c.writeByteData(fd, 0x11, 0x5a);
    expect(i2c.readByteData(fd, 0x10)).toBe(0xa5);
    expect(i2c.readByteData(fd, 0x11)).toBe(0x5a);
  });

  test("word data", () => {
    i2c.writeWordData(fd, 0x20, 0xbeef);
    expect(i2c.readWordData(fd, 0x20)).toBe(0xbeef);
  });

  test("i2c block data", () => {
    const bytes = Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8);
    i2c.writeI2cBlockData(fd, 0x40, bytes);
    expect([...i2c.readI2cBlockData(fd, 0x40, 8)]).toEqual([...bytes]);
    expect(i2c.readByteData(fd, 0x43)).toBe(4);
  });

  test("no device answers at an empty address", () => {
    const other = i2c.openBus(`/proc/self/fd/${fd}`);
    try {
      i2c.setAddress(other, 0x51);
      expect(() => i2c.readByteData(other, 0)).toThrow(expect.objectContaining({ errno: 19 })); // ENODEV: i2c-stub has no chip there
    } finally {
      i2c.close(other);
    }
  });
});
