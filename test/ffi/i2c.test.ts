import { describe, expect, test } from "bun:test";
import * as i2c from "../../src/ffi/i2c.ts";
import { expected, hasGcc, macros, probe } from "./cabi.ts";

describe.skipIf(!hasGcc)("i2c.ts mirrors linux/i2c-dev.h and linux/i2c.h", () => {
  const funcs = Object.fromEntries(
    Object.keys(i2c.Func).map((k) => [`Func.${k}`, `I2C_FUNC_${k === "TENBIT_ADDR" ? "10BIT_ADDR" : k}`]),
  );
  const abi = probe({
    headers: ["linux/i2c.h", "linux/i2c-dev.h"],
    structs: i2c.structs,
    values: {
      ...macros(i2c.ioctls), ...funcs,
      I2C_M_RD: "I2C_M_RD", I2C_M_TEN: "I2C_M_TEN", I2C_M_RECV_LEN: "I2C_M_RECV_LEN", I2C_M_NOSTART: "I2C_M_NOSTART",
      I2C_SMBUS_BLOCK_MAX: "I2C_SMBUS_BLOCK_MAX", I2C_RDWR_IOCTL_MAX_MSGS: "I2C_RDWR_IOCTL_MAX_MSGS",
      SMBUS_BYTE_DATA: "I2C_SMBUS_BYTE_DATA", SMBUS_WORD_DATA: "I2C_SMBUS_WORD_DATA",
      SMBUS_BLOCK_DATA: "I2C_SMBUS_BLOCK_DATA", SMBUS_I2C_BLOCK_DATA: "I2C_SMBUS_I2C_BLOCK_DATA",
      I2C_SMBUS_READ: "I2C_SMBUS_READ",
    },
  });
  test("struct sizes and offsets", () => {
    const want = expected(i2c.structs);
    expect(abi.sizes).toEqual(want.sizes);
    expect(abi.offsets).toEqual(want.offsets);
  });
  test("ioctl numbers and constants", () => {
    for (const [k, v] of Object.entries(i2c.ioctls)) expect([k, abi.values[k]]).toEqual([k, v]);
    for (const [k, v] of Object.entries(i2c.Func)) expect([k, abi.values[`Func.${k}`]]).toEqual([k, v]);
    const mod = i2c as unknown as Record<string, number>;
    for (const k of ["I2C_M_RD", "I2C_M_TEN", "I2C_M_RECV_LEN", "I2C_M_NOSTART", "I2C_SMBUS_BLOCK_MAX",
      "I2C_RDWR_IOCTL_MAX_MSGS", "SMBUS_BYTE_DATA", "SMBUS_WORD_DATA", "SMBUS_BLOCK_DATA", "SMBUS_I2C_BLOCK_DATA", "I2C_SMBUS_READ"]) {
      expect([k, abi.values[k]]).toEqual([k, mod[k]]);
    }
  });
});

test("block helpers refuse more than 32 bytes", () => {
  expect(() => i2c.writeI2cBlockData(-1, 0, new Uint8Array(33))).toThrow(RangeError);
  expect(() => i2c.readI2cBlockData(-1, 0, 0)).toThrow(RangeError);
});

test("ioctls on a non-i2c fd report the kernel's errno", () => {
  const { openFile, O_RDONLY, closeFd, SysError } = require("../../src/ffi/libc.ts");
  const fd = openFile("/dev/null", O_RDONLY);
  try {
    expect(() => i2c.functionality(fd)).toThrow(SysError);
    expect(() => i2c.setAddress(fd, 0x50)).toThrow(/I2C_SLAVE/);
  } finally {
    closeFd(fd);
  }
});
