// bench/peripheral: GPIO toggle round trips per second and edge-to-subscriber
// latency (p50, p99) of the peripheral manager (the compiled binary serving it on
// a private bus, linux backend), against a C sd-bus service doing the same on the
// same gpio-sim lines through the same bus daemon (gpio-service.c: the same methods,
// message shapes and subscription pushes, so the client's code path is the same),
// in alternating rounds of one run; beside them the bare ioctl program
// (gpio-bench.c, no bus), for reference.
//
// On the host:  bun bench/peripheral/run.ts --build   (dist/bench/gpio-bench, gcc -static;
//               dist/bench/gpio-service, gcc -lsystemd: the guest's image has
//               libsystemd.so.0 and its libraries, dbus-daemon's)
// In the guest: scripts/vboard bench peripheral [TOGGLES] [EDGES] [ROUNDS]
//               (or scripts/vboard shell, then
//                cd /repo && node_modules/bun/bin/bun.exe bench/peripheral/run.ts [TOGGLES] [EDGES] [ROUNDS])
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { $, spawn } from "bun";
import { ensureSdBus } from "../sd-bus";

const ROOT = resolve(import.meta.dir, "../..");
const C_BIN = join(ROOT, "dist/bench/gpio-bench");
const C_SERVICE = join(ROOT, "dist/bench/gpio-service");

if (process.argv[2] === "--build") {
  mkdirSync(join(ROOT, "dist/bench"), { recursive: true });
  await ensureSdBus("bench/peripheral");
  await $`gcc -O2 -Wall -static -o ${C_BIN} ${join(import.meta.dir, "gpio-bench.c")}`;
  await $`gcc -O2 -Wall -o ${C_SERVICE} ${join(import.meta.dir, "gpio-service.c")} -lsystemd`;
  console.log(`built ${C_BIN} and ${C_SERVICE}; run this script in the guest (scripts/vboard bench peripheral)`);
  process.exit(0);
}

const SIM = "/sys/kernel/config/gpio-sim/vboard";
if (!existsSync(SIM)) throw new Error("bench/peripheral runs in the virtual-board guest (scripts/vboard shell), on its gpio-sim chip");
for (const f of [C_BIN, C_SERVICE]) if (!existsSync(f)) throw new Error(`no ${f}: run bun bench/peripheral/run.ts --build on the host first`);
const BIN = existsSync(join(ROOT, "dist/devservices")) ? join(ROOT, "dist/devservices") : "/usr/bin/devservices";

const { startPrivateBus } = await import("../../src/bus/daemon");
const { BusClient } = await import("../../src/bus/client");

const TOGGLES = Number(process.argv[2] ?? 2000);
const EDGES = Number(process.argv[3] ?? 200);
const ROUNDS = Number(process.argv[4] ?? 20);
const WARMUP = 200;
const PM = "com.vendor.service.peripheralmanager";
const CS = "com.vendor.bench.gpio";
const text = (p: string) => readFileSync(p, "utf8").trim();
const chipName = text(`${SIM}/bank0/chip_name`);
const chip = `/dev/${chipName}`;
const sysfs = `/sys/devices/platform/${text(`${SIM}/dev_name`)}/${chipName}`;
const TOGGLE_LINE = 2, EDGE_LINE = 5;
const pin = `gpio${TOGGLE_LINE}`, epin = `gpio${EDGE_LINE}`;
const pullFile = `${sysfs}/sim_gpio${EDGE_LINE}/pull`;
writeFileSync(pullFile, "pull-down");

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
const dir = mkdtempSync("/tmp/pm-bench-");
const recipe = join(dir, "board.json");
writeFileSync(recipe, JSON.stringify({
  name: "vboard-bench", backend: "linux", services: ["peripheralmanager"],
  serviceConfig: { peripheralmanager: { configFile: null } },
  peripheralmanager: { gpio: { [pin]: { chip, line: TOGGLE_LINE }, [epin]: { chip, line: EDGE_LINE } } },
}));
const bus = await startPrivateBus();
const serve = spawn([BIN, "serve", "--bus", bus.address, "--board", recipe, "--state-dir", join(dir, "state"), "--log-level", "warn", "peripheralmanager"], { stdout: "inherit", stderr: "inherit" });
const cService = spawn([C_SERVICE, bus.address, chip, `${pin}=${TOGGLE_LINE}`, `${epin}=${EDGE_LINE}`], { stdout: "ignore", stderr: "inherit" });
const client = await BusClient.connect(bus.address);
for (const name of [PM, CS])
  for (let i = 0; !(await client.hasOwner(name)); i++) {
    if (i > 200) throw new Error(`${name} did not come up`);
    await Bun.sleep(100);
  }

/** One target's figures, summed over its rounds. */
interface Tally { service: string; toggles: number; toggleMs: number; idleCalls: number; idleMs: number; lat: number[]; roundRates: number[] }
const tally = (service: string): Tally => ({ service, toggles: 0, toggleMs: 0, idleCalls: 0, idleMs: 0, lat: [], roundRates: [] });
const dev = tally(PM), csd = tally(CS);

const call = async (service: string, method: string, payload: Record<string, unknown>) => {
  const r = await client.call(service, method, payload);
  if (r.returnValue !== true) throw new Error(`${service} ${method}: ${JSON.stringify(r)}`);
  return r;
};

/** n toggles (set a level, read it back: two calls), then 2n calls that touch no device (the bus's share). */
async function toggles(t: Tally, n: number, measure = true) {
  const s = t.service;
  await call(s, "gpio/open", { pin });
  await call(s, "gpio/setDirection", { pin, direction: "outLow" });
  let t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const value = i % 2 ? "low" : "high";
    await call(s, "gpio/setValue", { pin, value });
    if ((await call(s, "gpio/getValue", { pin })).value !== value) throw new Error(`${s}: read back differs`);
  }
  const toggleMs = performance.now() - t0;
  t0 = performance.now();
  for (let i = 0; i < 2 * n; i++) await call(s, "gpio/getDirection", { pin });
  const idleMs = performance.now() - t0;
  await call(s, "gpio/close", { pin });
  if (!measure) return;
  t.toggles += n;
  t.toggleMs += toggleMs;
  t.roundRates.push(n / (toggleMs / 1000));
  t.idleCalls += 2 * n;
  t.idleMs += idleMs;
}

/** n edges: the simulator's pull written, to the gpio/getValue push received. */
async function edges(t: Tally, n: number) {
  const s = t.service;
  writeFileSync(pullFile, "pull-down");
  await call(s, "gpio/open", { pin: epin });
  let resolveEdge: (() => void) | undefined;
  const sub = await client.subscribe(s, "gpio/getValue", { pin: epin, subscribe: true }, () => resolveEdge?.());
  if (sub.first.subscribed !== true) throw new Error(`${s}: not subscribed: ${JSON.stringify(sub.first)}`);
  for (let i = 0; i < n; i++) {
    const edge = new Promise<void>((r) => (resolveEdge = r));
    const t0 = performance.now();
    writeFileSync(pullFile, i % 2 === 0 ? "pull-up" : "pull-down");
    await edge;
    t.lat.push(performance.now() - t0);
    await Bun.sleep(20);
  }
  resolveEdge = undefined;
  await sub.cancel();
  await call(s, "gpio/close", { pin: epin });
  writeFileSync(pullFile, "pull-down");
  await Bun.sleep(20);
}

try {
  // Warm-up of both (not counted), then alternating rounds: the order flips each round.
  await toggles(dev, WARMUP, false);
  await toggles(csd, WARMUP, false);
  for (let r = 0; r < ROUNDS; r++) {
    for (const t of r % 2 ? [csd, dev] : [dev, csd]) {
      await toggles(t, Math.ceil(TOGGLES / ROUNDS));
      await edges(t, Math.ceil(EDGES / ROUNDS));
    }
  }

  // The bare ioctl program (no bus), for reference.
  const cToggleOut = (await $`${C_BIN} toggle ${chip} ${TOGGLE_LINE} ${TOGGLES * 10}`.text()).trim().split(" ");
  const bareToggles = Number(cToggleOut[1]) / Number(cToggleOut[2]);
  const bareLat = (await $`${C_BIN} edges ${chip} ${EDGE_LINE} ${pullFile} ${EDGES}`.text())
    .split("\n").filter((l) => l.startsWith("LATENCY_NS")).map((l) => Number(l.split(" ")[1]) / 1e6);
  writeFileSync(pullFile, "pull-down");

  const fig = (t: Tally) => {
    const lat = [...t.lat].sort((a, b) => a - b);
    return { rate: t.toggles / (t.toggleMs / 1000), p50: pct(lat, 0.5), p99: pct(lat, 0.99), idle: t.idleMs / t.idleCalls };
  };
  const d = fig(dev), c = fig(csd);
  bareLat.sort((a, b) => a - b);
  const b = { rate: bareToggles, p50: pct(bareLat, 0.5), p99: pct(bareLat, 0.99) };
  const f3 = (n: number) => n.toFixed(3), f2 = (n: number) => n.toFixed(2);
  const row = (label: string, cells: string[]) => console.log(`| ${label.padEnd(44)} | ${cells.map((c, i) => c.padStart([11, 13, 13, 20][i]!)).join(" | ")} |`);
  console.log(`\nGPIO, ${dev.toggles} toggles and ${dev.lat.length} edges each, ${ROUNDS} alternating rounds; bare program ${TOGGLES * 10} toggles, ${bareLat.length} edges`);
  row("", ["toggles/s", "edge p50 ms", "edge p99 ms", "no-device call ms"]);
  console.log(`|${"-".repeat(46)}|${"-".repeat(13)}|${"-".repeat(15)}|${"-".repeat(15)}|${"-".repeat(22)}|`);
  row("C sd-bus service (same bus, same client)", [c.rate.toFixed(0), f3(c.p50), f3(c.p99), f3(c.idle)]);
  row("devservices (peripheral manager)", [d.rate.toFixed(0), f3(d.p50), f3(d.p99), f3(d.idle)]);
  row("devservices / C sd-bus service", [f2(d.rate / c.rate), f2(d.p50 / c.p50), f2(d.p99 / c.p99), f2(d.idle / c.idle)]);
  row("  goal (rate: >= 1/1.5; latency: <= 1.5)", [d.rate / c.rate >= 1 / 1.5 ? "met" : "NOT met", d.p50 / c.p50 <= 1.5 ? "met" : "NOT met", d.p99 / c.p99 <= 1.5 ? "met" : "NOT met", ""]);
  row("bare ioctl program (no bus), reference", [b.rate.toFixed(0), f3(b.p50), f3(b.p99), ""]);
  row("devservices / bare", [(d.rate / b.rate).toPrecision(2), f2(d.p50 / b.p50), f2(d.p99 / b.p99), ""]);
  console.log(`toggles/s devservices / C sd-bus service, each round: ${dev.roundRates.map((r, i) => f2(r / csd.roundRates[i]!)).join(" ")}`);
  console.log(`a call that touches no device (gpio/getDirection) takes ${f3(d.idle)} ms on devservices (${f3(c.idle)} ms on the C service): a toggle is two calls, ${f3(2 * d.idle)} ms of its ${f3(1000 / d.rate)} ms`);
} finally {
  client.close();
  serve.kill();
  cService.kill();
  await serve.exited;
  const cExit = await cService.exited;
  if (cExit !== 0) console.error(`gpio-service exited ${cExit} on SIGTERM`);
  await bus.stop();
}
process.exit(0);
