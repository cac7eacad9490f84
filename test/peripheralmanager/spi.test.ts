// SPI on the virtual board: loopback buses (what is sent comes back), the settings
// methods and their limits, ownership, and the error rows.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { pmEnv, E, OK, type PmEnv } from "./setup";
import type { Json } from "../../src/core/errors";

let p: PmEnv;
beforeAll(async () => {
  p = await pmEnv();
});
afterAll(() => p.stop());
const bus = { name: "SPI00" };

test("list", async () => {
  const { call } = await p.client();
  expect(await call("spi/list")).toEqual({ returnValue: true, list: ["SPI00", "SPI01"] });
});

test("transfer returns what was sent; without data it clocks out zeros; writeBuffer and writeByte send", async () => {
  const { call } = await p.client();
  expect(await call("spi/open", bus)).toEqual(OK);
  const data = Array.from({ length: 64 }, (_, i) => (i * 7 + 3) & 0xff);
  expect(await call("spi/transfer", { ...bus, data, size: 64 })).toEqual({ returnValue: true, tx_size: 64, rx_size: 64, rx_data: data });
  expect(await call("spi/transfer", { ...bus, data, size: 3 })).toEqual({ returnValue: true, tx_size: 3, rx_size: 3, rx_data: data.slice(0, 3) });
  expect(await call("spi/transfer", { ...bus, size: 4 })).toEqual({ returnValue: true, tx_size: 4, rx_size: 4, rx_data: [0, 0, 0, 0] });
  expect(await call("spi/transfer", { ...bus, data: [1], size: 2 })).toEqual(E.invalid);
  expect(await call("spi/transfer", { ...bus, data })).toEqual(E.invalid);
  expect(await call("spi/transfer", { ...bus, size: 4097 })).toEqual(E.invalid);
  expect(await call("spi/writeBuffer", { ...bus, data: [1, 2, 3] })).toEqual({ returnValue: true, size: 3 });
  expect(await call("spi/writeBuffer", { ...bus, data: [1, 2, 3], size: 2 })).toEqual({ returnValue: true, size: 2 });
  expect(await call("spi/writeBuffer", { ...bus, data: [] })).toEqual(E.invalid);
  expect(await call("spi/writeByte", { ...bus, data: 0x9f })).toEqual(OK);
  expect(await call("spi/writeByte", { ...bus, data: 256 })).toEqual(E.invalid);
  await call("spi/close", bus);
});

test("settings: mode 0-3, bits per word, delay, bit justification, frequency up to the bus maximum", async () => {
  const { call } = await p.client();
  await call("spi/open", bus);
  for (const mode of [0, 1, 2, 3]) expect(await call("spi/setMode", { ...bus, mode })).toEqual(OK);
  expect(await call("spi/setMode", { ...bus, mode: 4 })).toEqual(E.invalid);
  expect(await call("spi/setMode", { ...bus, mode: -1 })).toEqual(E.invalid);
  expect(await call("spi/setBitsPerWord", { ...bus, nbits: 16 })).toEqual(OK);
  expect(await call("spi/setBitsPerWord", { ...bus, nbits: 0 })).toEqual(E.invalid);
  expect(await call("spi/setDelay", { ...bus, delay_usecs: 10 })).toEqual(OK);
  expect(await call("spi/setDelay", { ...bus, delay_usecs: 65536 })).toEqual(E.invalid);
  expect(await call("spi/setBitJustification", { ...bus, lsb_first: true })).toEqual(OK);
  expect(await call("spi/setBitJustification", { ...bus, lsb_first: "true" })).toEqual(E.invalid);
  expect(await call("spi/setFrequency", { ...bus, frequency: 10_000_000 })).toEqual(OK);
  expect(await call("spi/setFrequency", { ...bus, frequency: 10_000_001 })).toEqual(E.tooFast);
  expect(await call("spi/setFrequency", { ...bus, frequency: 0 })).toEqual(E.invalid);
  // The other bus has its own maximum.
  await call("spi/open", { name: "SPI01" });
  expect(await call("spi/setFrequency", { name: "SPI01", frequency: 2_000_000 })).toEqual(E.tooFast);
  expect(await call("spi/setFrequency", { name: "SPI01", frequency: 1_000_000 })).toEqual(OK);
  await call("spi/close", { name: "SPI01" });
  await call("spi/close", bus);
});

test("ownership and unknown buses: another application (uid 65534, group devservices-spi) may not use the holder's bus; root may", async () => {
  const a = await p.client();
  const b = await p.client();
  expect(await a.call("spi/open", bus)).toEqual(OK);
  const onBus = [
    ["spi/transfer", { size: 1 }], ["spi/writeBuffer", { data: [1] }], ["spi/writeByte", { data: 1 }], ["spi/setMode", { mode: 1 }],
    ["spi/setBitsPerWord", { nbits: 8 }], ["spi/setDelay", { delay_usecs: 0 }], ["spi/setFrequency", { frequency: 1000 }],
    ["spi/setBitJustification", { lsb_first: false }], ["spi/close", {}],
  ] as const;
  const answers = await p.app(["spi"], [
    ["spi/open", bus],
    ...onBus.map(([m, extra]): [string, Json] => [m, { ...bus, ...extra }]),
    ["spi/open", { name: "SPI02" }], ["spi/transfer", { name: "SPI02", size: 1 }], ["spi/open", {}],
  ]);
  expect(answers).toEqual([E.openedByOther, ...onBus.map(() => E.notOpened), E.unknownSpi, E.unknownSpi, E.invalid]);
  // Root's other connection may act on it (not open it: it is held).
  expect(await b.call("spi/open", bus)).toEqual(E.openedByOther);
  expect(await b.call("spi/transfer", { ...bus, data: [7], size: 1 })).toEqual({ returnValue: true, tx_size: 1, rx_size: 1, rx_data: [7] });
  expect(await a.call("spi/close", bus)).toEqual(OK);
  expect(await b.call("spi/open", bus)).toEqual(OK);
  await b.call("spi/close", bus);
}, 30000);
