// I2C on the virtual board: two register devices on I2C0 (0x50, 0x68), raw reads
// and writes through the address pointer, SMBus-style register methods, ownership
// per device, the polling fd, and the error rows.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { eventfdRead } from "../../src/ffi/shm";
import { closeFd } from "../../src/ffi/libc";
import { pmEnv, E, OK, type PmEnv } from "./setup";
import type { Json } from "../../src/core/errors";

let p: PmEnv;
beforeAll(async () => {
  p = await pmEnv();
});
afterAll(() => p.stop());
const dev = { name: "I2C0", address: 0x50 };

test("list: names, and with verbose the recipe's device addresses", async () => {
  const { call } = await p.client();
  expect(await call("i2c/list")).toEqual({ returnValue: true, i2cList: ["I2C0"], i2cBusList: ["I2C0"] });
  expect(await call("i2c/list", { verbose: true })).toEqual({
    returnValue: true, i2cList: ["I2C0"], i2cBusList: [{ name: "I2C0", slaveAddress: ["0x50", "0x68"] }],
  });
  expect(await call("i2c/list", { verbose: "yes" })).toEqual(E.invalid);
});

test("register byte, word and buffer round trips", async () => {
  const { call } = await p.client();
  expect(await call("i2c/open", dev)).toEqual(OK);
  expect(await call("i2c/writeRegByte", { ...dev, reg: 0x10, data: 0xa5 })).toEqual(OK);
  expect(await call("i2c/readRegByte", { ...dev, reg: 0x10 })).toEqual({ returnValue: true, data: 0xa5 });
  expect(await call("i2c/writeRegWord", { ...dev, reg: 0x20, data: 0xbeef })).toEqual(OK);
  expect(await call("i2c/readRegWord", { ...dev, reg: 0x20 })).toEqual({ returnValue: true, data: 0xbeef });
  // SMBus words are low byte first.
  expect(await call("i2c/readRegByte", { ...dev, reg: 0x20 })).toEqual({ returnValue: true, data: 0xef });
  const bytes = [1, 2, 3, 4, 5, 6, 7, 8];
  expect(await call("i2c/writeRegBuffer", { ...dev, reg: 0x40, data: bytes })).toEqual({ returnValue: true, size: 8 });
  expect(await call("i2c/readRegBuffer", { ...dev, reg: 0x40, size: 8 })).toEqual({ returnValue: true, size: 8, data: bytes });
  expect(await call("i2c/readRegByte", { ...dev, reg: 0x43 })).toEqual({ returnValue: true, data: 4 });
  // size writes only the first bytes; more than data is refused.
  expect(await call("i2c/writeRegBuffer", { ...dev, reg: 0x40, data: [9, 9, 9], size: 1 })).toEqual({ returnValue: true, size: 1 });
  expect(await call("i2c/readRegBuffer", { ...dev, reg: 0x40, size: 2 })).toEqual({ returnValue: true, size: 2, data: [9, 2] });
  expect(await call("i2c/writeRegBuffer", { ...dev, reg: 0x40, data: [1], size: 2 })).toEqual(E.invalid);
  // The other device on the bus has registers of its own.
  const other = { name: "I2C0", address: 0x68 };
  await call("i2c/open", other);
  expect(await call("i2c/readRegByte", { ...other, reg: 0x10 })).toEqual({ returnValue: true, data: 0 });
  await call("i2c/close", other);
  await call("i2c/close", dev);
});

test("raw write then read: the first byte sets the device's pointer", async () => {
  const { call } = await p.client();
  await call("i2c/open", dev);
  expect(await call("i2c/write", { ...dev, data: [0x80, 0x11, 0x22, 0x33] })).toEqual({ returnValue: true, size: 4 });
  expect(await call("i2c/write", { ...dev, data: [0x80], size: 1 })).toEqual({ returnValue: true, size: 1 });
  expect(await call("i2c/read", { ...dev, size: 3 })).toEqual({ returnValue: true, size: 3, data: [0x11, 0x22, 0x33] });
  expect(await call("i2c/readRegBuffer", { ...dev, reg: 0x81, size: 2 })).toEqual({ returnValue: true, size: 2, data: [0x22, 0x33] });
  expect(await call("i2c/write", { ...dev, data: [1, 2], size: 3 })).toEqual(E.invalid);
  expect(await call("i2c/read", { ...dev, size: 0 })).toEqual(E.invalid);
  expect(await call("i2c/read", { ...dev, size: 4097 })).toEqual(E.invalid);
  await call("i2c/close", dev);
});

test("address as the spec declares it (a string) is taken too; out of range is refused", async () => {
  const { call } = await p.client();
  expect(await call("i2c/open", { name: "I2C0", address: "0x50" })).toEqual(OK);
  expect(await call("i2c/readRegByte", { name: "I2C0", address: "80", reg: 0 })).toMatchObject({ returnValue: true });
  expect(await call("i2c/close", { name: "I2C0", address: 80 })).toEqual(OK);
  expect(await call("i2c/open", { name: "I2C0", address: 0x80 })).toEqual(E.invalid);
  expect(await call("i2c/open", { name: "I2C0", address: "fifty" })).toEqual(E.invalid);
  expect(await call("i2c/open", { name: "I2C0" })).toEqual(E.invalid);
});

test("ownership is per device: another application (uid 65534, group devservices-i2c) may use another address of the bus, not the same one", async () => {
  const a = await p.client();
  expect(await a.call("i2c/open", dev)).toEqual(OK);
  const other = { name: "I2C0", address: 0x68 };
  const onDevice = [
    ["i2c/read", { size: 1 }], ["i2c/write", { data: [0] }], ["i2c/readRegByte", { reg: 0 }], ["i2c/readRegWord", { reg: 0 }],
    ["i2c/readRegBuffer", { reg: 0, size: 1 }], ["i2c/writeRegByte", { reg: 0, data: 0 }], ["i2c/writeRegWord", { reg: 0, data: 0 }],
    ["i2c/writeRegBuffer", { reg: 0, data: [0] }], ["i2c/getPollingFd", {}], ["i2c/close", {}],
  ] as const;
  const answers = await p.app(["i2c"], [
    ["i2c/open", dev],
    ["i2c/open", other],
    ["i2c/readRegByte", { ...other, reg: 0 }],
    ...onDevice.map(([m, extra]): [string, Json] => [m, { ...dev, ...extra }]),
    ["i2c/close", other],
  ]);
  expect(answers).toEqual([E.openedByOther, OK, { returnValue: true, data: 0 }, ...onDevice.map(() => E.notOpened), OK]);
  await a.call("i2c/close", dev);
}, 30000);

test("an address the recipe does not declare is an unknown device; unknown buses and out-of-range values are refused", async () => {
  const { call } = await p.client();
  // I2C0 declares 0x50 and 0x68 only (a bus that declares none, and devices that do not answer: bounds.test.ts).
  const none = { name: "I2C0", address: 0x51 };
  expect(await call("i2c/open", none)).toEqual(E.unknownDevice);
  expect(await call("i2c/readRegByte", { ...none, reg: 0 })).toEqual(E.unknownDevice);
  expect(await call("i2c/open", { name: "I2C7", address: 0x50 })).toEqual(E.unknownI2c);
  expect(await call("i2c/readRegByte", { name: "I2C7", address: 0x50, reg: 0 })).toEqual(E.unknownI2c);
  expect(await call("i2c/readRegByte", { ...dev, reg: 256 })).toEqual(E.invalid);
  expect(await call("i2c/writeRegByte", { ...dev, reg: 0, data: 256 })).toEqual(E.invalid);
  expect(await call("i2c/writeRegWord", { ...dev, reg: 0, data: 0x10000 })).toEqual(E.invalid);
});

test("getPollingFd: signalled each time a transfer to the device completes", async () => {
  const { c, call } = await p.client();
  await call("i2c/open", dev);
  const { response, fd } = await c.callForFd("peripheralmanager", "i2c/getPollingFd", dev);
  expect(response).toEqual({ returnValue: true, fd: 0 });
  expect(eventfdRead(fd!)).toBeNull();
  await call("i2c/writeRegByte", { ...dev, reg: 1, data: 1 });
  await call("i2c/readRegByte", { ...dev, reg: 1 });
  expect(eventfdRead(fd!)).toBe(2n);
  // A failed call is no transfer done.
  await call("i2c/write", { ...dev, data: [1], size: 2 });
  expect(eventfdRead(fd!)).toBeNull();
  closeFd(fd!);
  await call("i2c/close", dev);
});
