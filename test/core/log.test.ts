// Logging never stalls the services: lines go out through a bounded buffer (a
// journal or pipe that stops reading costs dropped lines, not a blocked event loop),
// and what one client causes per call is logged once per interval.
import { test, expect } from "bun:test";
import { spawn } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, binaryBuilt, eventually } from "../helpers/harness";
import { startPrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { Throttle } from "../../src/core/log";

test("Throttle: the first at once, the rest counted and told once when the interval ends", async () => {
  const t = new Throttle(100);
  const out: [string, number][] = [];
  for (let i = 0; i < 500; i++) t.log("a", (n) => out.push(["a", n]));
  t.log("b", (n) => out.push(["b", n]));
  expect(out).toEqual([["a", 0], ["b", 0]]);
  await eventually(() => t.size === 0, 2000);
  expect(out).toEqual([["a", 0], ["b", 0], ["a", 499]]);
  t.log("a", (n) => out.push(["a", n]));
  expect(out.at(-1)).toEqual(["a", 0]);
});

test.skipIf(!binaryBuilt())("a log reader that stops reading does not stall the services", async () => {
  const bus = await startPrivateBus();
  const dir = mkdtempSync(join(tmpdir(), "log-"));
  // stdout is a pipe nobody reads (sleep never reads its stdin): 64 KiB fill it.
  const p = spawn(["sh", "-c", `${BINARY} serve --bus '${bus.address}' --state-dir '${dir}' --log-level debug power2 testautomation | sleep 120`], { stdout: "ignore", stderr: "ignore" });
  try {
    const c = await BusClient.connect(bus.address);
    await eventually(async () => (await c.call("power2", "getState", {}).catch(() => null)) !== null, 10000, 50);
    // Each client that comes and goes is a debug line or more: far more than the pipe holds.
    for (let round = 0; round < 10; round++) {
      const clients = await Promise.all(Array.from({ length: 100 }, () => BusClient.connect(bus.address)));
      await Promise.all(clients.map((k) => k.call("testautomation", "ping", { Message: "x".repeat(2000) })));
      for (const k of clients) k.close();
    }
    const t0 = performance.now();
    for (let i = 0; i < 20; i++) expect(await c.call("power2", "getState", {}, { timeoutMs: 3000 })).toMatchObject({ returnValue: true });
    expect(performance.now() - t0).toBeLessThan(2000);
    c.close();
  } finally {
    // The pipeline's two processes (serve and sleep) are the shell's children.
    Bun.spawnSync(["pkill", "-9", "-P", String(p.pid)]);
    p.kill(9);
    await bus.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 60000);

test("lines a stalled reader cannot take are dropped, never held past the buffer, and the next line that fits says how many", async () => {
  const { configureLogging, LOG_BUFFER_BYTES } = await import("../../src/core/log");
  const { libc, ptr } = await import("../../src/ffi/libc");
  const fds = new Int32Array(2);
  expect(libc.pipe2(ptr(fds), 0o4000 /* O_NONBLOCK */)).toBe(0);
  const [r, w] = [fds[0]!, fds[1]!];
  try {
    const log = configureLogging("info", w);
    const line = "x".repeat(1000);
    // Far more than the pipe (64 KiB) and the buffer hold, with nobody reading.
    const lines = Math.floor((3 * LOG_BUFFER_BYTES) / 1000);
    for (let i = 0; i < lines; i++) log.info({ i }, line);
    // Now read everything the buffer held; then one more line, which says how many were dropped.
    const buf = new Uint8Array(1 << 16);
    let text = "";
    let quiet = 0;
    const drain = () => {
      let got = false;
      for (;;) {
        const n = Number(libc.read(r, ptr(buf), buf.length));
        if (n <= 0) return got;
        got = true;
        text += Buffer.from(buf.subarray(0, n)).toString();
      }
    };
    await eventually(async () => {
      quiet = drain() ? 0 : quiet + 1;
      await Bun.sleep(5);
      return quiet > 20;
    }, 20000, 1);
    log.info("after the flood");
    await eventually(async () => {
      drain();
      await Bun.sleep(5);
      return text.includes("after the flood");
    }, 5000, 1);
    const last = JSON.parse(text.trim().split("\n").at(-1)!);
    expect(last.msg).toBe("after the flood");
    expect(last.droppedLines).toBeGreaterThan(LOG_BUFFER_BYTES / 1100);
    const kept = text.trim().split("\n").length;
    // Every line is either read or counted as dropped; the buffer never held more than its bound.
    expect(kept + last.droppedLines).toBe(lines + 1);
  } finally {
    configureLogging("silent");
    libc.close(r);
  }
}, 30000);

test("an exit after a fatal line waits for the lines before it: both are written, in order, and the exit status is kept", async () => {
  const { BUN, ROOT } = await import("../helpers/harness");
  // The reader starts late, so the first line is still being written (asynchronously)
  // when the fatal line is logged and the process asks to exit.
  const run = async (how: string) => {
    const p = spawn([BUN, join(ROOT, "test/fixtures/log-then-exit.ts"), how], { stdout: "pipe", stderr: "inherit" });
    await Bun.sleep(300);
    const out = await new Response(p.stdout).text();
    return { code: await p.exited, msgs: out.split("\n").filter(Boolean).map((l) => JSON.parse(l).msg) };
  };
  // Whether the first write has started when the fatal line comes is a race: twelve at once.
  const runs = await Promise.all(Array.from({ length: 12 }, () => run("exitAfterLog")));
  for (const r of runs) expect(r).toEqual({ code: 1, msgs: ["first", "last"] });
  // A reader that never reads holds the first line: the exit waits a bounded time, and
  // the fatal line never blocks the process.
  const p = spawn([BUN, join(ROOT, "test/fixtures/log-then-exit.ts"), "exitAfterLog"], { stdout: "pipe", stderr: "inherit" });
  const t0 = performance.now();
  expect(await p.exited).toBe(1);
  expect(performance.now() - t0).toBeLessThan(5000);
}, 15000);
