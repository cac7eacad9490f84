// What one request may cost: payloads over the size or depth limit are answered with
// the method's schema error before they are parsed, a message far over the limit is
// dropped as it arrives, and a flood of hostile payloads leaves the other services of
// the process answering at once. Replies are readable by sd-bus (noncharacters).
import { test, expect, beforeAll, afterAll } from "bun:test";
import { readFileSync } from "node:fs";
import { spawn, type Subprocess } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { jsonDepth, nestsDeeper, parsePayload, stringifyJson, PAYLOAD_LIMITS } from "../../src/bus/json";
import { spawnScript, eventually, BINARY } from "../helpers/harness";

let bus: PrivateBus;
let server: Subprocess;
let dir: string;
let client: BusClient;
const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/status`, "utf8"))![1]) / 1024;

beforeAll(async () => {
  bus = await startPrivateBus();
  dir = mkdtempSync(join(tmpdir(), "devservices-limits-"));
  // The shipped binary in its own process, so its memory can be read alone.
  server = spawn([BINARY, "serve", "--bus", bus.address, "--state-dir", dir, "--log-level", "error", "testautomation", "power2"], { env: { ...process.env }, stdout: "ignore", stderr: "inherit" });
  client = await BusClient.connect(bus.address);
  await eventually(async () => (await client.call("power2", "getState", {}).catch(() => null)) !== null, 10000, 50);
});
afterAll(async () => {
  client?.close();
  server?.kill();
  await server?.exited;
  await bus?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("depth is measured in one pass that skips strings and stops past the limit", () => {
  expect(jsonDepth('{"a":[1,{"b":"[[[[{{{"}]}')).toBe(3);
  expect(jsonDepth('"\\"[["')).toBe(0);
  expect(jsonDepth("[".repeat(100000), 64)).toBe(65);
  expect(parsePayload("[".repeat(65) + "]".repeat(65))).toEqual({ problem: { kind: "limits", message: "payload nests deeper than 64 levels" } });
  expect(parsePayload("[".repeat(64) + "]".repeat(64))).toHaveProperty("value");
  expect(parsePayload("")).toEqual({ value: {} });
});

test("a text with no more brackets than the limit is not scanned; one with more is, strings skipped", () => {
  expect(nestsDeeper('{"a":[1,{"b":2}]}', 2)).toBe(true);
  expect(nestsDeeper('{"a":[1,{"b":2}]}', 3)).toBe(false);
  // More brackets than the limit, but inside a string or side by side: shallow.
  expect(nestsDeeper(JSON.stringify({ m: "[{".repeat(100) }), 64)).toBe(false);
  expect(nestsDeeper(JSON.stringify({ a: Array.from({ length: 100 }, () => []) }), 64)).toBe(false);
  expect(nestsDeeper("[".repeat(65) + "]".repeat(65), 64)).toBe(true);
  expect(nestsDeeper("{".repeat(33) + "[".repeat(32), 64)).toBe(true);
  expect(nestsDeeper("{".repeat(32) + "[".repeat(32), 64)).toBe(false);
});

test("noncharacters are written as escapes", () => {
  expect(stringifyJson({ m: "a\uFFFEb\uFDD0\u{1FFFF}" })).toBe('{"m":"a\\ufffeb\\ufdd0\\ud83f\\udfff"}');
  expect(JSON.parse(stringifyJson({ m: "a\uFFFEb" }))).toEqual({ m: "a\uFFFEb" });
});

test("a reply echoing a noncharacter is readable by busctl (sd-bus)", async () => {
  // JSON escapes in the request (sd-bus will not send the characters themselves); the
  // service decodes them and echoes the characters, which must come back escaped.
  const out = await Bun.$`busctl --address=${bus.address} call com.vendor.service.testautomation /com/vendor/service/testautomation com.vendor.service.testautomation ping s ${'{"Message":"\\ufffe\\uffff"}'}`.text();
  expect(out.trim()).toBe('s "{\\"returnValue\\":true,\\"Message\\":\\"\\\\ufffe\\\\uffff\\"}"');
});

test("over the size or depth limit: the method's schema error, and a log line", async () => {
  const big = JSON.stringify({ Message: "x".repeat(PAYLOAD_LIMITS.maxBytes) });
  expect(await client.call("testautomation", "ping", big)).toMatchObject({ returnValue: false, errorCode: 4, errorText: "Invalid JSON message" });
  const deep = '{"Message":' + "[".repeat(50000) + "]".repeat(50000) + "}";
  expect(await client.call("testautomation", "ping", deep)).toMatchObject({ returnValue: false, errorCode: 4 });
  expect(await client.call("power2", "getState", deep)).toMatchObject({ returnValue: false });
  // Just under the limits is served.
  expect(await client.call("testautomation", "ping", { Message: "y".repeat(1000) })).toEqual({ returnValue: true, Message: "y".repeat(1000) });
});

test("four callers of 30 MB requests: answered, and the service does not hold them", async () => {
  const before = rssMb();
  // The service's RSS through the floods, read every 5 ms: its peak is what it held.
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb())), 5);
  const floods = [0, 1, 2, 3].map(() => spawnScript("test/fixtures/flooder.ts", ["testautomation", "ping", "huge", "3"], { DEVSERVICES_BUS: bus.address }));
  const done = await Promise.all(floods.map((f) => f.waitFor("DONE", 60000)));
  clearInterval(sampler);
  for (const d of done) expect(d).toMatch(/^DONE \d+ \{"returnValue":false,"errorCode":4,"errorText":"Invalid JSON message"/);
  // Each message is dropped as it arrives: what grows is the read chunks' garbage until
  // the next collection (peaks of 34-43 MB measured, 29-47 at the end), never the
  // messages. A service that reads them whole grows by 290-420 MB here (measured with
  // the connection's limit on a message raised to the bus's 128 MB).
  expect(peak - before).toBeLessThan(100);
  expect(rssMb() - before).toBeLessThan(100);
}, 90000);

test("a flood of nested payloads from four processes: another service answers 99 % of calls within 100 ms, none over 400 ms", async () => {
  const floods = [0, 1, 2, 3].map(() => spawnScript("test/fixtures/flooder.ts", ["testautomation", "ping", "nested", "4"], { DEVSERVICES_BUS: bus.address }));
  await Promise.all(floods.map((f) => f.waitFor("STARTED")));
  await Bun.sleep(300);
  const latencies: number[] = [];
  const end = Date.now() + 3000;
  while (Date.now() < end) {
    const t = performance.now();
    expect((await client.call("power2", "getState", {})).returnValue).toBe(true);
    latencies.push(performance.now() - t);
  }
  const done = await Promise.all(floods.map((f) => f.waitFor("DONE", 30000)));
  const calls = done.reduce((n, d) => n + Number(d.split(" ")[1]), 0);
  latencies.sort((a, b) => a - b);
  console.log(`flood: ${calls} nested requests answered; getState p50 ${latencies[latencies.length >> 1]!.toFixed(2)} ms, worst ${latencies.at(-1)!.toFixed(2)} ms over ${latencies.length} calls`);
  expect(calls).toBeGreaterThan(100);
  // Four flooders and the service share this machine's 2 cores, so a call can wait for
  // the scheduler; what the bound tests is that no request holds the event loop: 99 %
  // within 100 ms, and none near the 0.65 s one nested payload used to cost.
  expect(latencies[Math.floor(latencies.length * 0.99)]!).toBeLessThan(100);
  expect(latencies.at(-1)!).toBeLessThan(400);
}, 60000);
