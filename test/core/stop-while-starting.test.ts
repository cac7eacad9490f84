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
