// bench/bus daemon-share: where the CPU goes while 64 calls are in flight. The same C
// sd-bus client calls `ping` on the C sd-bus service (the reference), on bound.c (the
// least any service can do) and on devservices (testautomation), in alternating
// rounds on one private dbus-daemon; during each round's in-flight phase the CPU of
// the daemon, the service and the client is read from /proc every 10 ms. When the
// daemon (one thread) is at one core whatever the service, the calls/s are the
// daemon's and no service can raise them (docs/performance.md, "The bus's reach").
//   bun bench/bus/daemon-share.ts [ROUNDS] [CALLS]      (defaults 3, 60000)
import { $, spawn } from "bun";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startPrivateBus } from "../../src/bus/daemon";
import { ensureSdBus } from "../sd-bus";
import { startReady } from "./ready";

const ROOT = resolve(import.meta.dir, "../..");
const ROUNDS = Number(process.argv[2] ?? 3);
const CALLS = Number(process.argv[3] ?? 60000);
const BIN = process.env.DEVSERVICES_BINARY ?? join(ROOT, "dist/devservices");

await ensureSdBus("bench/bus");
const out = mkdtempSync(join(tmpdir(), "bench-share-"));
for (const c of ["echo-service", "client"]) await $`gcc -O2 -o ${out}/${c} ${import.meta.dir}/${c}.c -lsystemd`;
await $`gcc -O2 -o ${out}/bound ${import.meta.dir}/bound.c`;
if (!(await Bun.file(BIN).exists())) await $`cd ${ROOT} && bun run build`.quiet();
const bus = await startPrivateBus();
const socketPath = /unix:path=([^,;]+)/.exec(bus.address)![1]!;
const children: ReturnType<typeof spawn>[] = [];
const start = (argv: string[], word: string) => startReady(argv, word, children);
const services: [string, string[], number][] = [
  ["C sd-bus", ["com.vendor.bench.echo", "/com/vendor/bench/echo", "com.vendor.bench.echo"], (await start([`${out}/echo-service`, bus.address], "ready")).pid],
  ["bound", ["com.vendor.bench.bound", "/com/vendor/bench/echo", "com.vendor.bench.echo"], (await start([`${out}/bound`, socketPath, "com.vendor.bench.bound"], "ready")).pid],
  [
    "devservices",
    ["com.vendor.service.testautomation", "/com/vendor/service/testautomation", "com.vendor.service.testautomation"],
    (await start([BIN, "serve", "--bus", bus.address, "--state-dir", mkdtempSync(join(out, "state-")), "testautomation"], "devservices ready")).pid,
  ],
];
/** CPU time of a process so far, in clock ticks (user + system; 100 a second). */
const ticks = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return Number(f[11]) + Number(f[12]);
};
const HZ = 100;
console.log(`64 calls in flight, ${CALLS} calls a round; CPU in % of one core over the middle 80 % of the in-flight phase`);
console.log(`${"service".padEnd(13)}${"calls/s".padStart(9)}${"ratio/C".padStart(9)}${"daemon".padStart(8)}${"service".padStart(9)}${"client".padStart(8)}`);
for (let r = 0; r < ROUNDS; r++) {
  const lines = new Map<string, { calls: number; line: (reference: number) => string }>();
  for (const [label, dest, pid] of r % 2 ? [...services].reverse() : services) {
    const client = spawn([`${out}/client`, bus.address, ...dest, "ping", '{"Message":"hi"}', String(CALLS), "64", "2000"], { stdout: "pipe" });
    const samples: { t: number; daemon: number; service: number; client: number }[] = [];
    let done = false;
    const text = new Response(client.stdout).text().finally(() => (done = true));
    while (!done) {
      try {
        samples.push({ t: performance.now(), daemon: ticks(bus.pid), service: ticks(pid), client: ticks(client.pid) });
      } catch {
        // The client has just exited.
      }
      await Bun.sleep(10);
    }
    const res = JSON.parse(await text);
    // The client's in-flight phase is its last one: it ends when the client does.
    const phaseMs = (CALLS / res.par_calls_per_s) * 1000;
    const end = samples[samples.length - 1]!.t;
    const a = samples.find((s) => s.t >= end - phaseMs * 0.9)!;
    const b = samples.find((s) => s.t >= end - phaseMs * 0.1)!;
    const pct = (k: "daemon" | "service" | "client") => (((b[k] - a[k]) / HZ / ((b.t - a.t) / 1000)) * 100).toFixed(0).padStart(k === "service" ? 9 : 8);
    const cpu = `${pct("daemon")}${pct("service")}${pct("client")}`;
    lines.set(label, { calls: res.par_calls_per_s, line: (reference) => `${label.padEnd(13)}${String(Math.round(res.par_calls_per_s)).padStart(9)}${(res.par_calls_per_s / reference).toFixed(2).padStart(9)}${cpu}` });
  }
  const reference = lines.get("C sd-bus")!.calls;
  for (const [label] of services) console.log(lines.get(label)!.line(reference));
}
for (const c of children) c.kill();
await bus.stop();
