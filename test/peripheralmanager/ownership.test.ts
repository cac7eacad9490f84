// Ownership across processes: a client killed with SIGKILL while it holds a pin, an
// I2C device, an SPI bus and a UART loses them all at once (a second client opens
// all four within a second, list subscribers are told); access per protocol group
// for another uid (the compiled binary as the client, through setpriv).
import { test, expect, beforeAll, afterAll, describe } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "bun";
import { binaryBuilt, binaryForAnyUser, eventually, openBusToAll, spawnScript } from "../helpers/harness";
import { Offload } from "../../src/services/peripheralmanager/backend/offload";
import { openFile, O_RDWR, closeFd } from "../../src/ffi/libc";
import { pmEnv, PM, E, OK, type PmEnv } from "./setup";
import type { Json } from "../../src/core/errors";

describe("a holder killed with SIGKILL", () => {
  let p: PmEnv;
  beforeAll(async () => {
    p = await pmEnv();
  });
  afterAll(() => p.stop());

  test("loses its pin, I2C device, SPI bus and UART at once; another client opens all four within a second", async () => {
    const watcher = await p.client();
    const gpioLists: Json[] = [];
    const uartLists: Json[] = [];
    const s1 = await watcher.c.subscribe(PM, "gpio/list", {}, (m) => gpioLists.push(m));
    const s2 = await watcher.c.subscribe(PM, "uart/list", {}, (m) => uartLists.push(m));
    const holder = spawnScript("test/peripheralmanager/fixtures/holder.ts", ["gpio:gpio0", "i2c:I2C0:80", "spi:SPI00", "uart:uart0"], { DEVSERVICES_BUS: p.env.bus.address });
    const held = await holder.waitFor("HELD");
    expect(JSON.parse(held.slice(5))).toEqual([OK, OK, OK, OK]);
    await eventually(() => gpioLists.length === 1 && uartLists.length === 1);
    const second = await p.client();
    const opens = [
      ["gpio/open", { pin: "gpio0" }],
      ["i2c/open", { name: "I2C0", address: 0x50 }],
      ["spi/open", { name: "SPI00" }],
      ["uart/open", { interfaceId: "uart0" }],
    ] as const;
    for (const [m, payload] of opens) expect(await second.call(m, payload)).toEqual(E.openedByOther);
    expect(p.env.rt!.server.stats().leases).toBe(4);

    const killedAt = performance.now();
    await holder.kill("SIGKILL");
    await eventually(async () => {
      for (const [m, payload] of opens) if ((await second.call(m, payload)).returnValue !== true) return false;
      return true;
    }, 1000, 10);
    expect(performance.now() - killedAt).toBeLessThan(1000);
    // The holder's value subscription went with it; the list subscribers saw the pin and the UART come free and be taken again.
    await eventually(() => gpioLists.length === 3 && uartLists.length === 3);
    expect((gpioLists[1]!.gpioList as Json[])[0]).toEqual({ pin: "gpio0", status: "available" });
    expect((uartLists[1]!.uartList as Json[])[0]).toEqual({ interfaceId: "uart0", status: "available" });
    expect(p.env.rt!.server.stats().leases).toBe(4);
    // The pin was really closed: the new holder starts from an input, and its wired peer floats low.
    expect(await second.call("gpio/getDirection", { pin: "gpio0" })).toEqual({ returnValue: true, direction: "in" });
    for (const [m, payload] of opens) expect(await second.call(m.replace("open", "close"), payload)).toEqual(OK);
    expect(p.env.rt!.server.stats().leases).toBe(0);
    await s1.cancel();
    await s2.cancel();
    await eventually(() => p.env.rt!.server.stats().topics === 0);
  });
});

describe("the transfer thread", () => {
  test("runs a job and brings back the kernel's errno (ENOTTY: not an I2C or SPI device)", async () => {
    const off = new Offload();
    const fd = openFile("/dev/null", O_RDWR);
    try {
      await expect(off.run({ op: "spi.transfer", fd, data: Uint8Array.of(1, 2), read: true, delayUsecs: 0 })).rejects.toMatchObject({ errno: 25 });
      await expect(off.run({ op: "smbus.readByteData", fd, reg: 0 })).rejects.toMatchObject({ errno: 25 });
      expect(off.stats.jobs).toBe(2);
    } finally {
      off.close();
      closeFd(fd);
    }
  });
});

describe.skipIf(!binaryBuilt())("access per protocol group, for another uid", () => {
  let p: PmEnv;
  let open: PmEnv;
  let dir: string;
  let app: string;
  beforeAll(async () => {
    p = await pmEnv({ serviceConfig: { peripheralmanager: { configFile: null, gpioGroup: "64101", i2cGroup: "64102", spiGroup: "64103", uartGroup: "64104" } } });
    // A board that widens every protocol to any caller ("*"; the virtual board as shipped does not).
    open = await pmEnv({ serviceConfig: { peripheralmanager: { configFile: null, gpioGroup: "*", i2cGroup: "*", spiGroup: "*", uartGroup: "*" } } });
    dir = mkdtempSync(join(tmpdir(), "devservices-pm-"));
    openBusToAll(p.env.bus.address);
    openBusToAll(open.env.bus.address);
    app = binaryForAnyUser(dir);
  });
  afterAll(async () => {
    await p?.stop();
    await open?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function asUser(uid: number, groups: string, method: string, payload: Json = {}, on = p) {
    const proc = spawn(["setpriv", `--reuid=${uid}`, `--regid=${uid}`, groups ? `--groups=${groups}` : "--clear-groups", app, "call", "--bus", on.env.bus.address, `${PM}/${method}`, JSON.stringify(payload)], {
      cwd: dir, stdout: "pipe", stderr: "pipe", env: { ...process.env, HOME: dir },
    });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    if (code !== 0) throw new Error(`call as ${uid} failed (${code}): ${err}`);
    return JSON.parse(out);
  }

  test("nobody without the group is refused every protocol; a member of one group reaches that protocol only", async () => {
    for (const m of ["gpio/list", "i2c/list", "spi/list", "uart/list"]) expect(await asUser(65534, "", m)).toEqual(E.denied);
    expect(await asUser(65534, "", "gpio/open", { pin: "gpio0" })).toEqual(E.denied);
    expect(await asUser(65534, "64101", "gpio/list")).toMatchObject({ returnValue: true, gpioList: expect.any(Array) });
    expect(await asUser(65534, "64101", "gpio/open", { pin: "gpio0" })).toEqual(OK);
    expect(await asUser(65534, "64101", "i2c/list")).toEqual(E.denied);
    expect(await asUser(65534, "64102,64103", "i2c/list")).toMatchObject({ returnValue: true });
    expect(await asUser(65534, "64102,64103", "spi/list")).toMatchObject({ returnValue: true });
    expect(await asUser(65534, "64102,64103", "uart/list")).toEqual(E.denied);
    expect(await asUser(65534, "64104", "uart/list")).toMatchObject({ returnValue: true });
    // Root always.
    const { call } = await p.client();
    expect(await call("spi/list")).toMatchObject({ returnValue: true });
  });

  test("a group option of * lets any caller in (a board's widening; the runtime logs it)", async () => {
    for (const m of ["gpio/list", "i2c/list", "spi/list", "uart/list"]) expect(await asUser(65534, "", m, {}, open)).toMatchObject({ returnValue: true });
  });
});
