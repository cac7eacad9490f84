// bench/peripheral: GPIO toggle round trips per second and edge-to-subscriber
// latency (p50, p99) of the peripheral manager (the compiled binary serving it on
// a private bus, linux backend), beside a C program on the same uAPI and the same
// gpio-sim line in the same run (gpio-bench.c), with the ratios.
//
// On the host:  bun bench/peripheral/run.ts --build   (gcc -static: dist/bench/gpio-bench)
// In the guest: scripts/vboard shell, then
//               cd /repo && node_modules/bun/bin/bun.exe bench/peripheral/run.ts [TOGGLES] [EDGES]
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { $, spawn } from "bun";

const ROOT = resolve(import.meta.dir, "../..");
const C_BIN = join(ROOT, "dist/bench/gpio-bench");

if (process.argv[2] === "--build") {
  mkdirSync(join(ROOT, "dist/bench"), { recursive: true });
  await $`gcc -O2 -static -o ${C_BIN} ${join(import.meta.dir, "gpio-bench.c")}`;
  console.log(`built ${C_BIN}; run this script in the guest (scripts/vboard shell)`);
  process.exit(0);
}

const SIM = "/sys/kernel/config/gpio-sim/vboard";
if (!existsSync(SIM)) throw new Error("bench/peripheral runs in the virtual-board guest (scripts/vboard shell), on its gpio-sim chip");
if (!existsSync(C_BIN)) throw new Error(`no ${C_BIN}: run bun bench/peripheral/run.ts --build on the host first`);
const BIN = existsSync(join(ROOT, "dist/devservices")) ? join(ROOT, "dist/devservices") : "/usr/bin/devservices";

const { startPrivateBus } = await import("../../src/bus/daemon");
const { BusClient } = await import("../../src/bus/client");

const TOGGLES = Number(process.argv[2] ?? 2000);
const EDGES = Number(process.argv[3] ?? 50);
const PM = "com.vendor.service.peripheralmanager";
const text = (p: string) => readFileSync(p, "utf8").trim();
const chipName = text(`${SIM}/bank0/chip_name`);
const chip = `/dev/${chipName}`;
const sysfs = `/sys/devices/platform/${text(`${SIM}/dev_name`)}/${chipName}`;
const TOGGLE_LINE = 2, EDGE_LINE = 5;
const pullFile = `${sysfs}/sim_gpio${EDGE_LINE}/pull`;
writeFileSync(pullFile, "pull-down");

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
const dir = mkdtempSync("/tmp/pm-bench-");
const recipe = join(dir, "board.json");
writeFileSync(recipe, JSON.stringify({
  name: "vboard-bench", backend: "linux", services: ["peripheralmanager"],
  serviceConfig: { peripheralmanager: { configFile: null } },
  peripheralmanager: { gpio: { [`gpio${TOGGLE_LINE}`]: { chip, line: TOGGLE_LINE }, [`gpio${EDGE_LINE}`]: { chip, line: EDGE_LINE } } },
}));
const bus = await startPrivateBus();
const serve = spawn([BIN, "serve", "--bus", bus.address, "--board", recipe, "--state-dir", join(dir, "state"), "--log-level", "warn", "peripheralmanager"], { stdout: "inherit", stderr: "inherit" });
const client = await BusClient.connect(bus.address);
for (let i = 0; !(await client.hasOwner(PM)); i++) {
  if (i > 200) throw new Error("the service did not come up");
  await Bun.sleep(100);
}
const call = async (method: string, payload: Record<string, unknown>) => {
  const r = await client.call(PM, method, payload);
  if (r.returnValue !== true) throw new Error(`${method}: ${JSON.stringify(r)}`);
  return r;
};

try {
  // ---- toggles: set a level and read it back, TOGGLES times ------------------
  const pin = `gpio${TOGGLE_LINE}`;
  await call("gpio/open", { pin });
  await call("gpio/setDirection", { pin, direction: "outLow" });
  let t0 = performance.now();
  for (let i = 0; i < TOGGLES; i++) {
    const value = i % 2 ? "low" : "high";
    await call("gpio/setValue", { pin, value });
    if ((await call("gpio/getValue", { pin })).value !== value) throw new Error("read back differs");
  }
  const serviceToggles = TOGGLES / ((performance.now() - t0) / 1000);
  // The same number of calls that touch no device (the direction is kept by the service): the bus's share.
  t0 = performance.now();
  for (let i = 0; i < 2 * TOGGLES; i++) await call("gpio/getDirection", { pin });
  const busCallMs = (performance.now() - t0) / (2 * TOGGLES);
  await call("gpio/close", { pin });
  const cToggleOut = (await $`${C_BIN} toggle ${chip} ${TOGGLE_LINE} ${TOGGLES * 10}`.text()).trim().split(" ");
  const cToggles = Number(cToggleOut[1]) / Number(cToggleOut[2]);

  // ---- edges: the simulator's pull to the subscriber ---------------------------
  const epin = `gpio${EDGE_LINE}`;
  await call("gpio/open", { pin: epin });
  let resolveEdge: (() => void) | undefined;
  const sub = await client.subscribe(PM, "gpio/getValue", { pin: epin, subscribe: true }, () => resolveEdge?.());
  const serviceLat: number[] = [];
  for (let i = 0; i < EDGES; i++) {
    const edge = new Promise<void>((r) => (resolveEdge = r));
    t0 = performance.now();
    writeFileSync(pullFile, i % 2 === 0 ? "pull-up" : "pull-down");
    await edge;
    serviceLat.push(performance.now() - t0);
    await Bun.sleep(20);
  }
  await sub.cancel();
  await call("gpio/close", { pin: epin });
  writeFileSync(pullFile, "pull-down");
  await Bun.sleep(20);
  const cLat = (await $`${C_BIN} edges ${chip} ${EDGE_LINE} ${pullFile} ${EDGES}`.text())
    .split("\n").filter((l) => l.startsWith("LATENCY_NS")).map((l) => Number(l.split(" ")[1]) / 1e6);
  writeFileSync(pullFile, "pull-down");

  serviceLat.sort((a, b) => a - b);
  cLat.sort((a, b) => a - b);
  const f = (n: number) => n.toFixed(3);
  console.log(`gpio toggle round trips (set + read back), per second: peripheral manager ${serviceToggles.toFixed(0)}, C ${cToggles.toFixed(0)}, C/service ${(cToggles / serviceToggles).toFixed(1)}x`);
  console.log(`a call that touches no device (gpio/getDirection) takes ${busCallMs.toFixed(3)} ms: a toggle is two calls, ${f(2 * busCallMs)} ms of its ${f(1000 / serviceToggles)} ms`);
  console.log(`edge to subscriber, ms:  peripheral manager p50 ${f(pct(serviceLat, 0.5))} p99 ${f(pct(serviceLat, 0.99))};  C (poll on the request fd) p50 ${f(pct(cLat, 0.5))} p99 ${f(pct(cLat, 0.99))};  service/C p50 ${(pct(serviceLat, 0.5) / pct(cLat, 0.5)).toFixed(1)}x p99 ${(pct(serviceLat, 0.99) / pct(cLat, 0.99)).toFixed(1)}x`);
} finally {
  client.close();
  serve.kill();
  await serve.exited;
  await bus.stop();
}
process.exit(0);
