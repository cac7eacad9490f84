// UART through termios on pseudo-terminals: a `linux` board whose interfaces are pty
// slaves the test holds the masters of (baud rate readback, raw and canonical reads,
// binary round trips, the polling fd, the write queue), and the virtual board's
// cross-wired pair.
import { test, expect, beforeAll, afterAll, describe } from "bun:test";
import { eventually, staysTrue } from "../helpers/harness";
import { closeSync, constants, openSync } from "node:fs";
import * as termios from "../../src/ffi/termios";
import { closeFd, writeAll } from "../../src/ffi/libc";
import { eventfdRead, watchEventfd } from "../../src/ffi/shm";
import { pmEnv, serialLine, PM, E, OK, type PmEnv } from "./setup";
import type { Json } from "../../src/core/errors";

/**
 * What the serial line holds for its reader: FIONREAD on a momentary open of the tty
 * (the service's open keeps it in use); in canonical mode the bytes of whole lines.
 */
function pending(path: string): number {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOCTTY | constants.O_NONBLOCK);
  try {
    return termios.inputPending(fd);
  } finally {
    closeSync(fd);
  }
}

describe("on pseudo-terminals (linux board)", () => {
  let p: PmEnv;
  const lines = [serialLine(), serialLine(), serialLine()];
  const [a, b, slow] = lines as [ReturnType<typeof serialLine>, ReturnType<typeof serialLine>, ReturnType<typeof serialLine>];
  beforeAll(async () => {
    p = await pmEnv({
      name: "pty-board",
      backend: "linux",
      services: ["peripheralmanager"],
      serviceConfig: { peripheralmanager: { configFile: null, uartWriteTimeoutMs: 400 } },
      peripheralmanager: {
        uart: {
          ttyA: { device: a.path, baudrate: 9600 },
          ttyB: { device: b.path },
          slow: { device: slow.path },
          gone: { device: "/dev/pts/nonexistent-devservices" },
        },
      },
    });
  });
  afterAll(async () => {
    await p?.stop();
    for (const l of lines) l.close();
  });

  test("list, and a list subscription told of opens and closes", async () => {
    const { c, call } = await p.client();
    const list = (used: string[]) => ["ttyA", "ttyB", "slow", "gone"].map((interfaceId) => ({ interfaceId, status: used.includes(interfaceId) ? "used" : "available" }));
    expect(await call("uart/list")).toEqual({ returnValue: true, subscribed: false, uartList: list([]) });
    const got: Json[] = [];
    const sub = await c.subscribe(PM, "uart/list", {}, (m) => got.push(m));
    expect(sub.first).toEqual({ returnValue: true, subscribed: true, uartList: list([]) });
    const other = await p.client();
    await other.call("uart/open", { interfaceId: "ttyB" });
    await eventually(() => got.length === 1);
    expect(got[0]).toEqual({ returnValue: true, uartList: list(["ttyB"]) });
    await other.call("uart/close", { interfaceId: "ttyB" });
    await eventually(() => got.length === 2);
    expect(got[1]).toEqual({ returnValue: true, uartList: list([]) });
    await sub.cancel();
  });

  test("baud rate: the recipe's at open, then what setBaudrate set, as the tty reports it", async () => {
    const { call } = await p.client();
    expect(await call("uart/open", { interfaceId: "ttyA" })).toEqual(OK);
    expect(await call("uart/getBaudrate", { interfaceId: "ttyA" })).toEqual({ returnValue: true, baudrate: 9600 });
    expect(await call("uart/setBaudrate", { interfaceId: "ttyA", baudrate: 57600 })).toEqual(OK);
    expect(await call("uart/getBaudrate", { interfaceId: "ttyA" })).toEqual({ returnValue: true, baudrate: 57600 });
    // A termios rate (set through BOTHER), and the kernel's own view of the tty agrees; a rate
    // without a Bxxx code is refused (bounds.test.ts).
    expect(await call("uart/setBaudrate", { interfaceId: "ttyA", baudrate: 500000 })).toEqual(OK);
    const fd = termios.openTty(a.path);
    try {
      const t = termios.getAttr(fd);
      expect(termios.outputSpeed(t)).toBe(500000);
      expect(termios.inputSpeed(t)).toBe(500000);
      expect(t.lflag & termios.ICANON).toBe(0);
    } finally {
      termios.close(fd);
    }
    expect(await call("uart/setBaudrate", { interfaceId: "ttyA", baudrate: 0 })).toEqual(E.invalid);
    expect(await call("uart/close", { interfaceId: "ttyA" })).toEqual(OK);
  });

  test("raw: read never waits, returns what has arrived (size caps it), binary-safe as base64 and hex", async () => {
    const { call } = await p.client();
    await call("uart/open", { interfaceId: "ttyA" });
    expect(await call("uart/read", { interfaceId: "ttyA" })).toEqual({ returnValue: true, data: "", dataType: "text", size: 0 });
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    writeAll(a.master, bytes);
    await eventually(() => pending(a.path) === bytes.length);
    const first = await call("uart/read", { interfaceId: "ttyA", dataType: "hex", size: 16 });
    expect(first).toEqual({ returnValue: true, dataType: "hex", size: 16, data: bytes.subarray(0, 16).toString("hex") });
    const rest = await call("uart/read", { interfaceId: "ttyA", dataType: "base64" });
    expect(Buffer.from(rest.data as string, "base64")).toEqual(bytes.subarray(16));
    writeAll(a.master, Buffer.from("héllo\r\n"));
    await eventually(() => pending(a.path) === 8);
    // Raw: CR stays CR.
    expect(await call("uart/read", { interfaceId: "ttyA" })).toEqual({ returnValue: true, data: "héllo\r\n", dataType: "text", size: 8 });
    await call("uart/close", { interfaceId: "ttyA" });
  });

  test("canonical: whole lines only, CR taken as NL; output is sent as given", async () => {
    const { call } = await p.client();
    expect(await call("uart/open", { interfaceId: "ttyA", config: { canonical: true } })).toEqual(OK);
    writeAll(a.master, Buffer.from("partial"));
    await staysTrue(async () => (await call("uart/read", { interfaceId: "ttyA" })).size === 0, 50, "an unfinished line is not read");
    expect(await call("uart/read", { interfaceId: "ttyA" })).toMatchObject({ data: "", size: 0 });
    writeAll(a.master, Buffer.from(" line\rsecond\nthird"));
    await eventually(() => pending(a.path) === "partial line\nsecond\n".length); // canonical: whole lines only
    expect(await call("uart/read", { interfaceId: "ttyA" })).toMatchObject({ data: "partial line\nsecond\n" });
    expect(await call("uart/write", { interfaceId: "ttyA", data: "out\n", dataType: "text", size: 4 })).toEqual({ returnValue: true, size: 4 });
    expect((await a.received(4)).toString()).toBe("out\n");
    // Opened again by its holder: the new config applies (raw: the unfinished line is dropped with the mode change).
    expect(await call("uart/open", { interfaceId: "ttyA", config: { canonical: false } })).toEqual(OK);
    writeAll(a.master, Buffer.from("x"));
    await eventually(() => pending(a.path) === 1);
    expect(await call("uart/read", { interfaceId: "ttyA" })).toMatchObject({ data: "x" });
    await call("uart/close", { interfaceId: "ttyA" });
  });

  test("write: text, base64 and hex, the first size bytes; bytes reach the line unchanged", async () => {
    const { call } = await p.client();
    await call("uart/open", { interfaceId: "ttyB" });
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => 255 - i));
    expect(await call("uart/write", { interfaceId: "ttyB", data: bytes.toString("base64"), dataType: "base64", size: 256 })).toEqual({ returnValue: true, size: 256 });
    expect(await b.received(256)).toEqual(bytes);
    expect(await call("uart/write", { interfaceId: "ttyB", data: "00ff10", dataType: "hex", size: "2" })).toEqual({ returnValue: true, size: 2 });
    expect([...(await b.received(2))]).toEqual([0, 255]);
    expect(await call("uart/write", { interfaceId: "ttyB", data: "abc", dataType: "text", size: 4 })).toEqual(E.invalid);
    expect(await call("uart/write", { interfaceId: "ttyB", data: "abc", dataType: "hex", size: 1 })).toEqual(E.invalid);
    expect(await call("uart/write", { interfaceId: "ttyB", data: "a$==", dataType: "base64", size: 1 })).toEqual(E.invalid);
    expect(await call("uart/write", { interfaceId: "ttyB", data: "abc", dataType: "utf16", size: 1 })).toEqual(E.invalid);
    expect(await call("uart/write", { interfaceId: "ttyB", data: "abc", size: 1 })).toEqual(E.invalid);
    expect(await call("uart/read", { interfaceId: "ttyB", dataType: "binary" })).toEqual(E.invalid);
    // A large write waits for room in the tty, on the event source, while the line drains.
    const big = Buffer.alloc(60000, 0x5a);
    const [answer, got] = await Promise.all([
      call("uart/write", { interfaceId: "ttyB", data: big.toString("base64"), dataType: "base64", size: big.length }),
      b.received(big.length, 5000),
    ]);
    expect(answer).toEqual({ returnValue: true, size: big.length });
    expect(got.length).toBe(big.length);
    await call("uart/close", { interfaceId: "ttyB" });
  });

  test("a write the line never takes fails after the configured time", async () => {
    const { call } = await p.client();
    await call("uart/open", { interfaceId: "slow" });
    const big = Buffer.alloc(65536, 1).toString("base64");
    const t0 = performance.now();
    expect(await call("uart/write", { interfaceId: "slow", data: big, dataType: "base64", size: 65536 })).toEqual(E.ioError);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(350);
    await call("uart/close", { interfaceId: "slow" });
  });

  test("getPollingFd: signalled when input waits, again after a read while input remains", async () => {
    const { c, call } = await p.client();
    await call("uart/open", { interfaceId: "ttyA" });
    const { response, fd } = await c.callForFd(PM, "uart/getPollingFd", { id: "ttyA" });
    expect(response).toEqual({ returnValue: true, fd: 0 });
    expect(eventfdRead(fd!)).toBeNull();
    const signals: bigint[] = [];
    const w = watchEventfd(fd!, (n) => signals.push(n));
    writeAll(a.master, Buffer.from("ping"));
    await eventually(() => signals.length === 1);
    // Nothing more until the caller reads.
    writeAll(a.master, Buffer.from("more"));
    await staysTrue(() => signals.length === 1, 50, "no signal until the caller reads");
    expect(await call("uart/read", { interfaceId: "ttyA", size: 4 })).toMatchObject({ data: "ping" });
    await eventually(() => signals.length === 2);
    expect(await call("uart/read", { interfaceId: "ttyA" })).toMatchObject({ data: "more" });
    await staysTrue(() => signals.length === 2, 50, "no signal once everything is read");
    w.close();
    closeFd(fd!);
    await call("uart/close", { interfaceId: "ttyA" });
  });

  test("ownership (another application: uid 65534, group devservices-uart), unknown interfaces and a missing device", async () => {
    const x = await p.client();
    const y = await p.client();
    expect(await x.call("uart/open", { interfaceId: "ttyA" })).toEqual(OK);
    const onUart = [
      ["uart/read", {}], ["uart/write", { data: "a", dataType: "text", size: 1 }], ["uart/getBaudrate", {}],
      ["uart/setBaudrate", { baudrate: 9600 }], ["uart/close", {}],
    ] as const;
    const answers = await p.app(["uart"], [
      ["uart/open", { interfaceId: "ttyA" }],
      ...onUart.map(([m, extra]): [string, Json] => [m, { interfaceId: "ttyA", ...extra }]),
      ["uart/getPollingFd", { id: "ttyA" }],
    ]);
    expect(answers).toEqual([E.openedByOther, ...onUart.map(() => E.notOpened), E.notOpened]);
    expect(await x.call("uart/getBaudrate", { interfaceId: "ttyA" })).toEqual({ returnValue: true, baudrate: expect.any(Number) });
    expect(await y.call("uart/open", { interfaceId: "ttyZ" })).toEqual(E.unknownUart);
    expect(await y.call("uart/read", { interfaceId: "ttyZ" })).toEqual(E.unknownUart);
    expect(await y.call("uart/getPollingFd", { id: "ttyZ" })).toEqual(E.unknownUart);
    expect(await y.call("uart/open", { interfaceId: "gone" })).toEqual(E.unavailable);
    expect(await y.call("uart/list")).toMatchObject({ uartList: expect.arrayContaining([{ interfaceId: "gone", status: "available" }]) });
    expect(await y.call("uart/open", { interfaceId: "ttyA", config: { canonical: "yes" } })).toEqual(E.invalid);
    await x.call("uart/close", { interfaceId: "ttyA" });
  }, 30000);
});

describe("the virtual board's cross-wired pair", () => {
  let p: PmEnv;
  beforeAll(async () => {
    p = await pmEnv();
  });
  afterAll(() => p.stop());

  test("what one interface writes the other reads, both ways, lines and all", async () => {
    const one = await p.client();
    const two = await p.client();
    await one.call("uart/open", { interfaceId: "uart0" });
    await two.call("uart/open", { interfaceId: "uart1", config: { canonical: true } });
    expect(await one.call("uart/write", { interfaceId: "uart0", data: "hello\nwor", dataType: "text", size: 9 })).toEqual({ returnValue: true, size: 9 });
    await eventually(async () => ((await two.call("uart/read", { interfaceId: "uart1" })).data as string) === "hello\n");
    const bytes = Buffer.from([0, 1, 2, 0xfe, 0xff]);
    expect(await two.call("uart/write", { interfaceId: "uart1", data: bytes.toString("base64"), dataType: "base64", size: 5 })).toEqual({ returnValue: true, size: 5 });
    let got = "";
    await eventually(async () => (got += (await one.call("uart/read", { interfaceId: "uart0", dataType: "hex" })).data as string).length === 10);
    expect(got).toBe("000102feff");
    await one.call("uart/close", { interfaceId: "uart0" });
    await two.call("uart/close", { interfaceId: "uart1" });
  });
});
