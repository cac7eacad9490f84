import { describe, expect, test } from "bun:test";
import * as i2c from "../../src/ffi/i2c.ts";
import { checkAgainstHeaders } from "./cabi.ts";

const i2cConsts = i2c as unknown as Record<string, number>;
checkAgainstHeaders("i2c.ts mirrors linux/i2c-dev.h and linux/i2c.h", {
  headers: ["linux/i2c.h", "linux/i2c-dev.h"],
  structs: i2c.structs,
  ioctls: i2c.ioctls,
  consts: {
    ...Object.fromEntries(Object.entries(i2c.Func).map(([k, v]) => [`Func.${k}`, [`I2C_FUNC_${k === "TENBIT_ADDR" ? "10BIT_ADDR" : k}`, v]])),
    ...Object.fromEntries(
      ["I2C_M_RD", "I2C_M_TEN", "I2C_M_RECV_LEN", "I2C_M_NOSTART", "I2C_SMBUS_BLOCK_MAX", "I2C_RDWR_IOCTL_MAX_MSGS", "I2C_SMBUS_READ"].map((k) => [k, [k, i2cConsts[k]!]]),
    ),
    ...Object.fromEntries(
      ["SMBUS_BYTE_DATA", "SMBUS_WORD_DATA", "SMBUS_BLOCK_DATA", "SMBUS_I2C_BLOCK_DATA"].map((k) => [k, [`I2C_${k}`, i2cConsts[k]!]]),
    ),
  },
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
