// systemd may stop a unit that is still starting (a stop job during activation, a
// shutdown during boot): serve takes SIGTERM at any time from its first instruction,
// lets the services finish starting, stops them, and exits with status 0 (not
// killed by the signal), in well under systemd's stop timeout.
import { test, expect, afterAll } from "bun:test";
import { spawn } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPrivateBus } from "../../src/bus/daemon";
import { BINARY, binaryBuilt } from "../helpers/harness";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** Resolves once `text` has been written to the stream (the rest is still read on). */
function readUntil(stream: ReadableStream<Uint8Array>, text: string): { seen: Promise<void>; all: Promise<string> } {
  let out = "";
  let mark!: () => void;
  const seen = new Promise<void>((r) => (mark = r));
  const all = (async () => {
    const dec = new TextDecoder();
    for await (const chunk of stream) {
      out += dec.decode(chunk, { stream: true });
      if (out.includes(text)) mark();
    }
    mark();
    return out;
  })();
  return { seen, all };
}

test.skipIf(!binaryBuilt())("SIGTERM while every service of the board starts: exit status 0, JSON log lines only", async () => {
  const bus = await startPrivateBus();
  try {
    for (const delayMs of [0, 30, 120, 300]) {
      const dir = mkdtempSync(join(tmpdir(), "devservices-stopstart-"));
      dirs.push(dir);
      const p = spawn([BINARY, "serve", "--bus", bus.address, "--state-dir", dir, "--log-level", "info"], { env: { ...process.env }, stdout: "pipe", stderr: "pipe" });
      // From its first line on (before it, the runtime itself is still loading).
      const stdout = readUntil(p.stdout, '"msg":"starting"');
      await stdout.seen;
      await Bun.sleep(delayMs);
      const t0 = performance.now();
      p.kill("SIGTERM");
      const code = await p.exited;
      const [out, err] = await Promise.all([stdout.all, new Response(p.stderr).text()]);
      expect(out).toContain('"msg":"starting"');
      expect({ delayMs, code, signal: p.signalCode, err }).toEqual({ delayMs, code: 0, signal: null, err: "" });
      expect(performance.now() - t0).toBeLessThan(3000);
      for (const line of out.split("\n").filter(Boolean)) expect(() => JSON.parse(line)).not.toThrow();
    }
  } finally {
    await bus.stop();
  }
}, 30000);

test.skipIf(!binaryBuilt())("a bus that cannot be reached: one fatal JSON line and exit status 1", async () => {
  const dir = mkdtempSync(join(tmpdir(), "devservices-nobus-"));
  dirs.push(dir);
  const p = spawn([BINARY, "serve", "--bus", `unix:path=${dir}/no-such-socket`, "--state-dir", dir], { env: { ...process.env }, stdout: "pipe", stderr: "pipe" });
  const code = await p.exited;
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  expect(code).toBe(1);
  expect(err).toBe("");
  const lines = out.split("\n").filter(Boolean).map((l) => JSON.parse(l));
  expect(lines.at(-1)).toMatchObject({ level: 60, msg: "cannot start" });
  expect(JSON.stringify(lines.at(-1).err)).toContain("no-such-socket");
}, 15000);

test.skipIf(!binaryBuilt())("SIGTERM while the log's reader is not reading: the stop exits with status 0 in a bounded time (the log's last lines are waited for, never blocked on)", async () => {
  const { libc, ptr } = await import("../../src/ffi/libc");
  const { BusClient } = await import("../../src/bus/client");
  const { eventually } = await import("../helpers/harness");
  const bus = await startPrivateBus();
  const dir = mkdtempSync(join(tmpdir(), "devservices-stopslow-"));
  dirs.push(dir);
  // stdout is a full pipe of one page that nobody reads: the log's writes are still in
  // flight when the stop ends, so the exit waits for the log (a bounded time), while
  // the bus connection the stop closed reports its end.
  const fds = new Int32Array(2);
  expect(libc.pipe2(ptr(fds), 0o2000000 /* O_CLOEXEC */)).toBe(0);
  const [r, w] = [fds[0]!, fds[1]!];
  expect(libc.fcntl(w, 1031 /* F_SETPIPE_SZ */, 4096)).toBe(4096);
  // Full before the service writes its first line.
  const fill = new Uint8Array(4096).fill(0x0a);
  expect(Number(libc.write(w, ptr(fill), fill.length))).toBe(4096);
  const client = await BusClient.connect(bus.address);
  try {
    const p = spawn([BINARY, "serve", "--bus", bus.address, "--state-dir", dir, "--log-level", "debug", "testautomation", "power2"], { stdout: w, stderr: "pipe" });
    libc.close(w);
    await eventually(async () => (await client.call("testautomation", "ping", {}, { timeoutMs: 1000 }).catch(() => ({ returnValue: false }))).returnValue === true, 20000);
    const t0 = performance.now();
    p.kill("SIGTERM");
    expect(await p.exited).toBe(0);
    expect(p.signalCode).toBeNull();
    expect(performance.now() - t0).toBeLessThan(3500);
  } finally {
    client.close();
    libc.close(r);
    await bus.stop();
  }
}, 30000);
