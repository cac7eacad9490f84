// The hosting connection's write path under load from hostile clients (uid 65534):
// replies and pushes far over the socket's buffer, from callers that read nothing,
// are written as the socket takes them (waiting on writability, never spinning); the
// other services keep answering, and SIGTERM stops the process at once.
import { test, expect, beforeEach, afterEach } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { spawnScript, eventually, BINARY, BUN, ROOT, openBusToAll, binaryBuilt } from "../helpers/harness";

const skip = process.getuid?.() !== 0 ? "needs root (setpriv)" : !binaryBuilt() ? "dist/devservices is not built" : null;

let bus: PrivateBus;
let server: Subprocess;
let dir: string;
let client: BusClient;
const hostile: ReturnType<typeof spawnScript>[] = [];

/** CPU time (user + system, in clock ticks) the server has used so far. */
const cpuTicks = () => {
  const f = readFileSync(`/proc/${server.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return Number(f[11]) + Number(f[12]);
};

beforeEach(async () => {
  bus = await startPrivateBus();
  openBusToAll(bus.address);
  dir = mkdtempSync(join(tmpdir(), "devservices-writepath-"));
  server = spawn([BINARY, "serve", "--bus", bus.address, "--state-dir", dir, "--log-level", "error", "testautomation", "power2"], { env: { ...process.env }, stdout: "ignore", stderr: "inherit" });
  client = await BusClient.connect(bus.address);
  await eventually(async () => (await client.call("power2", "getState", {}).catch(() => null)) !== null, 10000, 50);
});
afterEach(async () => {
  for (const h of hostile.splice(0)) h.proc.kill(9);
  client.close();
  server.kill(9);
  await server.exited;
  await bus.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A client as uid 65534 that sends COUNT calls at once and never reads a reply. */
function pipeliner(service: string, method: string, payload: string, count: number, mode = "") {
  const p = spawnScript(
    "test/fixtures/pipeliner.ts",
    [service, method, payload, String(count), mode],
    { DEVSERVICES_BUS: bus.address, HOME: "/tmp", BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0" },
    ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"],
  );
  hostile.push(p);
  return p;
}

const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/status`, "utf8"))![1]) / 1024;

/** What the server keeps: the least RSS seen over `ms` (garbage of a burst is collected
 *  on the engine's own timer, so one reading right after a burst counts it too). */
async function settledRssMb(ms: number) {
  let least = rssMb();
  for (const end = performance.now() + ms; performance.now() < end; ) {
    await Bun.sleep(100);
    least = Math.min(least, rssMb());
  }
  return least;
}

/** The server answers another service's call within 2 s, and is not spinning. */
async function stillServing() {
  const t0 = performance.now();
  expect(await client.call("power2", "getState", {}, { timeoutMs: 5000 })).toMatchObject({ returnValue: true });
  expect(performance.now() - t0).toBeLessThan(2000);
  // Idle once the bursts are written: under 30 % of a core over one second.
  const before = cpuTicks();
  await Bun.sleep(1000);
  expect(cpuTicks() - before).toBeLessThan(30);
}

async function stopsOnSigterm() {
  const t0 = performance.now();
  server.kill("SIGTERM");
  const exited = await Promise.race([server.exited.then(() => true), Bun.sleep(3000).then(() => false)]);
  expect(exited).toBe(true);
  expect(performance.now() - t0).toBeLessThan(3000);
}

test.skipIf(!!skip)("10 pipelined 600 KB pings on one connection: written as the socket takes them; SIGTERM stops it", async () => {
  const p = pipeliner("testautomation", "ping", "message:600000", 10);
  await p.waitFor("FLUSHED", 20000);
  await stillServing();
  await stopsOnSigterm();
}, 40000);

test.skipIf(!!skip)("3 connections with 4 pipelined 600 KB pings each, then 8 with 10: what is not read costs the service no memory", async () => {
  const ps = [0, 1, 2].map(() => pipeliner("testautomation", "ping", "message:600000", 4));
  await Promise.all(ps.map((p) => p.waitFor("FLUSHED", 20000)));
  const before = await settledRssMb(1000);
  // 48 MB of replies nobody reads: the daemon holds them for their receivers (up to
  // its own limits), the service only while the daemon takes them.
  const more = Array.from({ length: 8 }, () => pipeliner("testautomation", "ping", "message:600000", 10));
  await Promise.all(more.map((p) => p.waitFor("FLUSHED", 30000)));
  await stillServing();
  const after = await settledRssMb(2000);
  expect(after - before).toBeLessThan(40);
  await stillServing();
  await stopsOnSigterm();
}, 40000);

test.skipIf(!!skip)("4 connections with many getPowerOnReason subscriptions, then one change pushed to all", async () => {
  const ps = [0, 1, 2, 3].map(() => pipeliner("power2", "getPowerOnReason", "{}", 5000, "subscribe"));
  await Promise.all(ps.map((p) => p.waitFor("FLUSHED", 20000)));
  const got: string[] = [];
  await client.subscribe("power2", "getPowerOnReason", { subscribe: true }, (m) => got.push((m as { reason: string }).reason));
  expect(await client.call("power2", "setPowerOnReason", { reason: "r".repeat(100) })).toMatchObject({ returnValue: true });
  // The push reaches a well-behaved subscriber behind the ones that read nothing.
  await eventually(() => got.includes("r".repeat(100)), 10000);
  await stillServing();
  await stopsOnSigterm();
}, 60000);
