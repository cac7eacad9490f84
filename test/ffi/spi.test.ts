import { describe, expect, test } from "bun:test";
import * as spi from "../../src/ffi/spi.ts";
import { expected, hasGcc, macros, probe } from "./cabi.ts";

describe.skipIf(!hasGcc)("spi.ts mirrors linux/spi/spidev.h", () => {
  const modes = Object.fromEntries(
    Object.keys(spi.Mode).map((k) => [`Mode.${k}`, `SPI_${k.replace("THREE_WIRE", "3WIRE")}`]),
  );
  const abi = probe({
    headers: ["linux/spi/spidev.h"],
    structs: spi.structs,
    values: { ...macros(spi.ioctls), ...modes, "SPI_IOC_MESSAGE(42)": "SPI_IOC_MESSAGE(42)", "SPI_IOC_MESSAGE(600)": "SPI_IOC_MESSAGE(600)" },
  });
  test("struct sizes and offsets", () => {
    const want = expected(spi.structs);
    expect(abi.sizes).toEqual(want.sizes);
    expect(abi.offsets).toEqual(want.offsets);
  });
  test("ioctl numbers and mode bits", () => {
    for (const [k, v] of Object.entries(spi.ioctls)) expect([k, abi.values[k]]).toEqual([k, v]);
    expect(abi.values["SPI_IOC_MESSAGE(42)"]).toBe(spi.SPI_IOC_MESSAGE(42));
    expect(abi.values["SPI_IOC_MESSAGE(600)"]).toBe(spi.SPI_IOC_MESSAGE(600));
    for (const [k, v] of Object.entries(spi.Mode)) expect([k, abi.values[`Mode.${k}`]]).toEqual([k, v]);
  });
});
