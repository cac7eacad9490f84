// Who may use the peripheral manager and what it holds. The service runs in its own
// process on the virtual board as shipped (no widened rule: the same groups as a real
// board); callers are separate processes (test/fixtures/peripheralmanager-prober.ts,
// fixtures/holder.ts) of uid 65534 with or without the protocols' groups, or root.
// Without the protocol's group an application is refused every method of it; with
// the group it opens; a pin, I2C device, SPI bus or UART is used, changed, read,
// written and closed only by the connection that opened it (another connection of
// the same uid and groups is refused) or by root.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { eventually, openBusToAll, spawnScript } from "../helpers/harness";
import { testAccounts, type Accounts } from "../layer/accounts";
import { E, OK, PM } from "./setup";
import type { Json } from "../../src/core/errors";

const NOBODY = 65534;
const PROTOCOLS = ["gpio", "i2c", "spi", "uart"] as const;
type Protocol = (typeof PROTOCOLS)[number];
const GROUP: Record<Protocol, "devservices-gpio" | "devservices-i2c" | "devservices-spi" | "devservices-uart"> = {
  gpio: "devservices-gpio",
  i2c: "devservices-i2c",
  spi: "devservices-spi",
  uart: "devservices-uart",
};
/** The handle each protocol's methods name, on the virtual board. */
const HANDLE: Record<Protocol, Json> = {
  gpio: { pin: "gpio0" },
  i2c: { name: "I2C0", address: 0x50 },
  spi: { name: "SPI00" },
  uart: { interfaceId: "uart0" },
};

const skip = process.getuid?.() !== 0 ? "needs root (setpriv)" : null;
if (skip) console.warn(`peripheral manager access tests skipped: ${skip}`);

describe.skipIf(skip !== null)("the virtual board as shipped, callers of another uid", () => {
  let acc: Accounts;
  let bus: PrivateBus;
  let dir: string;
  let serve: ReturnType<typeof spawnScript>;
  let root: BusClient;
  const gids = (...ps: Protocol[]) => ps.map((p) => acc.gids[GROUP[p]]);

  beforeAll(async () => {
    acc = testAccounts();
    bus = await startPrivateBus();
    openBusToAll(bus.address);
    dir = mkdtempSync(join(tmpdir(), "devservices-pm-access-"));
    chmodSync(dir, 0o755);
    serve = spawnScript("src/main.ts", ["serve", "--bus", bus.address, "--state-dir", join(dir, "state"), "--log-level", "error", "peripheralmanager"]);
    root = await BusClient.connect(bus.address);
    await eventually(() => root.hasOwner(PM), 20000, 50);
  }, 30000);

  afterAll(async () => {
    root?.close();
    await serve?.kill("SIGTERM");
    await bus?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** setpriv's arguments: uid 65534 with these gids (none: no group), or root (no setpriv). */
  const as = (who: number[] | "root") =>
    who === "root" ? [] : ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, who.length ? `--groups=${who.join(",")}` : "--clear-groups"];

  /** Makes the calls in order on one connection of a new process; its answers. */
  async function probe(who: number[] | "root", calls: [string, Json][]): Promise<Json[]> {
    const p = spawnScript("test/fixtures/peripheralmanager-prober.ts", [JSON.stringify(calls)], { DEVSERVICES_BUS: bus.address, HOME: dir }, as(who));
    const line = await p.waitFor((l) => l.startsWith("RESULTS "), 20000);
    await p.proc.exited;
    return JSON.parse(line.slice(8));
  }

  const lists = async () => {
    const [g, u] = [await root.call(PM, "gpio/list", {}), await root.call(PM, "uart/list", {})];
    return { gpio0: (g.gpioList as Json[]).find((e) => e.pin === "gpio0")!.status, uart0: (u.uartList as Json[]).find((e) => e.interfaceId === "uart0")!.status };
  };

  test("without the protocol's group, open and list of every protocol are refused (other groups do not help), nothing is taken; with it, allowed", async () => {
    const calls = PROTOCOLS.flatMap((p): [string, Json][] => [[`${p}/open`, HANDLE[p]], [`${p}/list`, {}]]);
    expect(await probe([], calls)).toEqual(calls.map(() => E.denied));
    for (const p of PROTOCOLS) {
      const others = gids(...PROTOCOLS.filter((q) => q !== p));
      expect(await probe(others, [[`${p}/open`, HANDLE[p]], [`${p}/list`, {}]])).toEqual([E.denied, E.denied]);
    }
    expect(await lists()).toEqual({ gpio0: "available", uart0: "available" });
    // With the protocol's group: allowed.
    for (const p of PROTOCOLS) {
      const [opened, listed, closed] = await probe(gids(p), [[`${p}/open`, HANDLE[p]], [`${p}/list`, {}], [`${p}/close`, HANDLE[p]]]);
      expect({ p, opened, listed: listed!.returnValue, closed }).toEqual({ p, opened: OK, listed: true, closed: OK });
    }
  }, 90000);

  test("what a client holds, another connection of the same uid and groups cannot use, change, read, write or close; root can", async () => {
    const all = gids(...PROTOCOLS);
    const holder = spawnScript("test/peripheralmanager/fixtures/holder.ts", ["gpio:gpio0", "i2c:I2C0:80", "spi:SPI00", "uart:uart0"], { DEVSERVICES_BUS: bus.address, HOME: dir }, as(all));
    try {
      expect(JSON.parse((await holder.waitFor("HELD", 20000)).slice(5))).toEqual([OK, OK, OK, OK]);
      const g = HANDLE.gpio, i = HANDLE.i2c, s = HANDLE.spi, u = HANDLE.uart;
      const onHandles: [string, Json][] = [
        ["gpio/getDirection", g], ["gpio/getValue", g], ["gpio/getValue", { ...g, subscribe: true }], ["gpio/getPollingFd", { id: "gpio0" }],
        ["gpio/setDirection", { ...g, direction: "outHigh" }], ["gpio/setValue", { ...g, value: "high" }],
        ["i2c/read", { ...i, size: 1 }], ["i2c/readRegByte", { ...i, reg: 0x10 }], ["i2c/readRegWord", { ...i, reg: 0x10 }], ["i2c/readRegBuffer", { ...i, reg: 0x10, size: 2 }],
        ["i2c/write", { ...i, data: [0x10, 0xab] }], ["i2c/writeRegByte", { ...i, reg: 0x10, data: 0xab }], ["i2c/writeRegWord", { ...i, reg: 0x10, data: 0xabcd }],
        ["i2c/writeRegBuffer", { ...i, reg: 0x10, data: [0xab], size: 1 }], ["i2c/getPollingFd", i],
        ["spi/setMode", { ...s, mode: 3 }], ["spi/setBitsPerWord", { ...s, nbits: 16 }], ["spi/setFrequency", { ...s, frequency: 1000 }],
        ["spi/setBitJustification", { ...s, lsb_first: true }], ["spi/setDelay", { ...s, delay_usecs: 10 }],
        ["spi/transfer", { ...s, data: [1, 2], size: 2 }], ["spi/writeBuffer", { ...s, data: [1, 2], size: 2 }], ["spi/writeByte", { ...s, data: 1 }],
        ["uart/getBaudrate", u], ["uart/setBaudrate", { ...u, baudrate: 9600 }], ["uart/read", u], ["uart/write", { ...u, data: "x", dataType: "text", size: 1 }],
        ["uart/getPollingFd", { id: "uart0" }],
        ["gpio/close", g], ["i2c/close", i], ["spi/close", s], ["uart/close", u],
      ];
      const opens: [string, Json][] = PROTOCOLS.map((p) => [`${p}/open`, HANDLE[p]]);
      const refused = await probe(all, [...onHandles, ...opens]);
      expect(refused.map((r, n) => [[...onHandles, ...opens][n]![0], r])).toEqual([
        ...onHandles.map(([m]) => [m, E.notOpened]),
        ...opens.map(([m]) => [m, E.openedByOther]),
      ]);
      // Nothing changed: still held, still an input, the register and the rate as they were.
      expect(await lists()).toEqual({ gpio0: "used", uart0: "used" });

      // Root, in a process of its own, acts on the holder's handles and closes them.
      const byRoot = await probe("root", [
        ["gpio/getDirection", g], ["uart/getBaudrate", u], ["i2c/readRegByte", { ...i, reg: 0x10 }],
        ["gpio/setDirection", { ...g, direction: "outHigh" }], ["gpio/getValue", g],
        ["i2c/writeRegByte", { ...i, reg: 0x10, data: 0xab }], ["i2c/readRegByte", { ...i, reg: 0x10 }],
        ["spi/transfer", { ...s, data: [1, 2, 3], size: 3 }],
        ["uart/setBaudrate", { ...u, baudrate: 9600 }], ["uart/getBaudrate", u],
        ["gpio/close", g], ["i2c/close", i], ["spi/close", s], ["uart/close", u],
      ]);
      expect(byRoot).toEqual([
        { returnValue: true, direction: "in" }, { returnValue: true, baudrate: 115200 }, { returnValue: true, data: 0 },
        OK, { returnValue: true, subscribed: false, value: "high" },
        OK, { returnValue: true, data: 0xab },
        { returnValue: true, tx_size: 3, rx_size: 3, rx_data: [1, 2, 3] },
        OK, { returnValue: true, baudrate: 9600 },
        OK, OK, OK, OK,
      ]);
      await eventually(async () => (await lists()).gpio0 === "available", 5000);
      expect(await lists()).toEqual({ gpio0: "available", uart0: "available" });
      // Closed for good: the former holder's connection holds nothing; another member opens all four.
      expect(await probe(all, opens)).toEqual([OK, OK, OK, OK]);
    } finally {
      await holder.kill();
    }
  }, 90000);
});
