import { describe, expect, test } from "bun:test";
import * as spi from "../../src/ffi/spi.ts";
import { checkAgainstHeaders } from "./cabi.ts";

checkAgainstHeaders("spi.ts mirrors linux/spi/spidev.h", {
  headers: ["linux/spi/spidev.h"],
  structs: spi.structs,
  ioctls: spi.ioctls,
  consts: {
    ...Object.fromEntries(Object.entries(spi.Mode).map(([k, v]) => [`Mode.${k}`, [`SPI_${k.replace("THREE_WIRE", "3WIRE")}`, v]])),
    "SPI_IOC_MESSAGE(42)": ["SPI_IOC_MESSAGE(42)", spi.SPI_IOC_MESSAGE(42)],
    "SPI_IOC_MESSAGE(600)": ["SPI_IOC_MESSAGE(600)", spi.SPI_IOC_MESSAGE(600)],
  },
});
