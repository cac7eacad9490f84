// GPIO on the virtual board: wired pin pairs (an output on one is the level and an
// edge on the other), ownership, value and list subscriptions, the polling fd.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { eventually, staysTrue } from "../helpers/harness";
import { eventfdRead, watchEventfd } from "../../src/ffi/shm";
import { closeFd } from "../../src/ffi/libc";
import { pmEnv, PM, E, OK, type PmEnv } from "./setup";
import type { Json } from "../../src/core/errors";

let p: PmEnv;
beforeAll(async () => {
  p = await pmEnv();
});
afterAll(() => p.stop());

test("list: every pin of the recipe, available until opened, used while held, available again after close", async () => {
  const { call } = await p.client();
  const { call: other } = await p.client();
  const all = (status: string) => ["gpio0", "gpio1", "gpio2", "gpio3", "gpio4"].map((pin) => ({ pin, status }));
  expect(await call("gpio/list")).toEqual({ returnValue: true, subscribed: false, gpioList: all("available") });
  expect(await call("gpio/open", { pin: "gpio4" })).toEqual(OK);
  const used = all("available");
  used[4]!.status = "used";
  // Used is used for everyone, the holder too.
  expect(await other("gpio/list")).toEqual({ returnValue: true, subscribed: false, gpioList: used });
  expect(await call("gpio/list")).toEqual({ returnValue: true, subscribed: false, gpioList: used });
  expect(await call("gpio/close", { pin: "gpio4" })).toEqual(OK);
  expect(await other("gpio/list")).toEqual({ returnValue: true, subscribed: false, gpioList: all("available") });
});

test("list subscription: told when a pin is opened, closed, or its holder leaves", async () => {
  const { c } = await p.client();
  const got: Json[] = [];
  const sub = await c.subscribe(PM, "gpio/list", {}, (m) => got.push(m));
  expect(sub.first).toMatchObject({ returnValue: true, subscribed: true });
  const holder = await p.client();
  await holder.call("gpio/open", { pin: "gpio2" });
  await eventually(() => got.length === 1);
  expect((got[0]!.gpioList as Json[]).find((e) => e.pin === "gpio2")).toEqual({ pin: "gpio2", status: "used" });
  // Opening it again changes nothing: nobody is told.
  expect(await holder.call("gpio/open", { pin: "gpio2" })).toEqual(OK);
  holder.c.close();
  await eventually(() => got.length === 2);
  expect((got[1]!.gpioList as Json[]).find((e) => e.pin === "gpio2")).toEqual({ pin: "gpio2", status: "available" });
  await staysTrue(() => got.length === 2, 50, "opening a held pin again tells nobody");
  await sub.cancel();
});

test("open by another application fails; every other method needs the caller to hold the pin (or be root)", async () => {
  const a = await p.client();
  const b = await p.client();
  expect(await a.call("gpio/open", { pin: "gpio3" })).toEqual(OK);
  const onPin: [string, Json][] = [
    ["gpio/close", { pin: "gpio3" }],
    ["gpio/getDirection", { pin: "gpio3" }],
    ["gpio/getValue", { pin: "gpio3" }],
    ["gpio/getValue", { pin: "gpio3", subscribe: true }],
    ["gpio/setDirection", { pin: "gpio3", direction: "outHigh" }],
    ["gpio/setValue", { pin: "gpio3", value: "high" }],
    ["gpio/getPollingFd", { id: "gpio3" }],
  ];
  // Another application: uid 65534 with the group devservices-gpio, in its own process.
  expect(await p.app(["gpio"], [["gpio/open", { pin: "gpio3" }], ...onPin])).toEqual([E.openedByOther, ...onPin.map(() => E.notOpened)]);
  expect(await a.call("gpio/getDirection", { pin: "gpio3" })).toEqual({ returnValue: true, direction: "in" });
  // Root's other connection is not the holder but may act on the pin; open stays the holder's.
  expect(await b.call("gpio/open", { pin: "gpio3" })).toEqual(E.openedByOther);
  expect(await b.call("gpio/getDirection", { pin: "gpio3" })).toEqual({ returnValue: true, direction: "in" });
  expect(await a.call("gpio/close", { pin: "gpio3" })).toEqual(OK);
  expect(await a.call("gpio/close", { pin: "gpio3" })).toEqual(E.notOpened);
  expect(await b.call("gpio/open", { pin: "gpio3" })).toEqual(OK);
  expect(await b.call("gpio/close", { pin: "gpio3" })).toEqual(OK);
}, 30000);

test("unknown pins and bad payloads", async () => {
  const { call } = await p.client();
  for (const m of ["gpio/open", "gpio/close", "gpio/getDirection", "gpio/getValue"]) expect(await call(m, { pin: "gpio99" })).toEqual(E.unknownPin);
  expect(await call("gpio/setDirection", { pin: "gpio99", direction: "in" })).toEqual(E.unknownPin);
  expect(await call("gpio/setValue", { pin: "gpio99", value: "low" })).toEqual(E.unknownPin);
  expect(await call("gpio/getPollingFd", { id: "gpio99" })).toEqual(E.unknownPin);
  expect(await call("gpio/open", {})).toEqual(E.invalid);
  expect(await call("gpio/open", { pin: 4 })).toEqual(E.invalid);
  expect(await call("gpio/open", "{pin")).toEqual(E.invalid);
  await call("gpio/open", { pin: "gpio4" });
  expect(await call("gpio/setDirection", { pin: "gpio4", direction: "out" })).toEqual(E.invalid);
  expect(await call("gpio/setValue", { pin: "gpio4", value: 1 })).toEqual(E.invalid);
  expect(await call("gpio/getPollingFd", { pin: "gpio4" })).toEqual(E.invalid);
  await call("gpio/close", { pin: "gpio4" });
});

test("direction: opened as an input; outLow and outHigh drive the wired pin; setValue only on an output", async () => {
  const { call } = await p.client();
  await call("gpio/open", { pin: "gpio0" });
  await call("gpio/open", { pin: "gpio1" });
  expect(await call("gpio/getDirection", { pin: "gpio0" })).toEqual({ returnValue: true, direction: "in" });
  expect(await call("gpio/getValue", { pin: "gpio1" })).toEqual({ returnValue: true, subscribed: false, value: "low" });
  expect(await call("gpio/setValue", { pin: "gpio0", value: "high" })).toEqual(E.notOutput);
  expect(await call("gpio/setDirection", { pin: "gpio0", direction: "outHigh" })).toEqual(OK);
  expect(await call("gpio/getDirection", { pin: "gpio0" })).toEqual({ returnValue: true, direction: "out" });
  expect(await call("gpio/getValue", { pin: "gpio0" })).toMatchObject({ value: "high" });
  expect(await call("gpio/getValue", { pin: "gpio1" })).toMatchObject({ value: "high" });
  expect(await call("gpio/setValue", { pin: "gpio0", value: "low" })).toEqual(OK);
  expect(await call("gpio/getValue", { pin: "gpio1" })).toMatchObject({ value: "low" });
  expect(await call("gpio/setDirection", { pin: "gpio0", direction: "outHigh" })).toEqual(OK);
  expect(await call("gpio/setDirection", { pin: "gpio0", direction: "outLow" })).toEqual(OK);
  expect(await call("gpio/getValue", { pin: "gpio1" })).toMatchObject({ value: "low" });
  expect(await call("gpio/setDirection", { pin: "gpio0", direction: "in" })).toEqual(OK);
  expect(await call("gpio/getDirection", { pin: "gpio0" })).toEqual({ returnValue: true, direction: "in" });
  await call("gpio/close", { pin: "gpio0" });
  await call("gpio/close", { pin: "gpio1" });
});

test("getValue subscription: low/high on every edge of the wired pin; it ends when the pin is closed", async () => {
  const driver = await p.client();
  const reader = await p.client();
  await driver.call("gpio/open", { pin: "gpio2" });
  await reader.call("gpio/open", { pin: "gpio3" });
  const got: string[] = [];
  const sub = await reader.c.subscribe(PM, "gpio/getValue", { pin: "gpio3" }, (m) => got.push(m.value as string));
  expect(sub.first).toEqual({ returnValue: true, subscribed: true, value: "low" });
  await driver.call("gpio/setDirection", { pin: "gpio2", direction: "outLow" });
  for (const v of ["high", "low", "high", "high", "low"]) await driver.call("gpio/setValue", { pin: "gpio2", value: v });
  // Setting the level it has is no edge.
  await eventually(() => got.length === 4);
  expect(got).toEqual(["high", "low", "high", "low"]);
  // The driver lets go: the line floats low again (already low: no edge).
  await driver.call("gpio/setValue", { pin: "gpio2", value: "high" });
  await eventually(() => got.length === 5);
  await driver.call("gpio/close", { pin: "gpio2" });
  await eventually(() => got.length === 6);
  expect(got.slice(4)).toEqual(["high", "low"]);
  // A subscription to someone else's pin is refused to another application ("open by another application fails" above);
  // root may subscribe, and its subscription ends with the holder's pin as the holder's does.
  const rootSub = await driver.c.subscribe(PM, "gpio/getValue", { pin: "gpio3" }, () => {});
  expect(rootSub.first).toEqual({ returnValue: true, subscribed: true, value: "low" });
  await reader.call("gpio/close", { pin: "gpio3" });
  await rootSub.ended;
  await sub.ended;
  expect(p.env.rt!.server.stats().topics).toBe(0);
});

test("getPollingFd: an eventfd received through fd passing, signalled on each edge", async () => {
  const driver = await p.client();
  const reader = await p.client();
  await driver.call("gpio/open", { pin: "gpio0" });
  await reader.call("gpio/open", { pin: "gpio1" });
  const { response, fd } = await reader.c.callForFd(PM, "gpio/getPollingFd", { id: "gpio1" });
  expect(response).toEqual({ returnValue: true, fd: 0 });
  expect(fd).toBeGreaterThan(2);
  expect(eventfdRead(fd!)).toBeNull(); // nothing yet, and it does not block
  const signals: bigint[] = [];
  const w = watchEventfd(fd!, (n) => signals.push(n));
  await driver.call("gpio/setDirection", { pin: "gpio0", direction: "outHigh" });
  await eventually(() => signals.length >= 1);
  await driver.call("gpio/setValue", { pin: "gpio0", value: "low" });
  await eventually(() => signals.reduce((a, b) => a + b, 0n) === 2n);
  w.close();
  // Edges while nobody reads add up.
  await driver.call("gpio/setValue", { pin: "gpio0", value: "high" });
  await driver.call("gpio/setValue", { pin: "gpio0", value: "low" });
  expect(eventfdRead(fd!)).toBe(2n);
  // Closing the pin wakes the waiter once more; then it never fires again.
  await reader.call("gpio/close", { pin: "gpio1" });
  expect(eventfdRead(fd!)).toBe(1n);
  await driver.call("gpio/setValue", { pin: "gpio0", value: "high" });
  expect(eventfdRead(fd!)).toBeNull();
  closeFd(fd!);
  await driver.call("gpio/close", { pin: "gpio0" });
});
