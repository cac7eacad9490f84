// bench/bus: the same trivial method served by a C sd-bus service (the reference)
// and by devservices (testautomation/ping, the shipped binary), both called by the
// same C client on the same private dbus-daemon in one run.
//   bun bench/bus/run.ts [CALLS]      (default 20000)
import { $, spawn } from "bun";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startPrivateBus } from "../../src/bus/daemon";

const ROOT = resolve(import.meta.dir, "../..");
const CALLS = Number(process.argv[2] ?? 20000);
const INFLIGHT = 64;

if (!(await Bun.file("/usr/include/systemd/sd-bus.h").exists())) {
  console.error("bench/bus: installing gcc and libsystemd-dev");
  await $`apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libsystemd-dev pkg-config`.quiet();
}
const out = mkdtempSync(join(tmpdir(), "bench-bus-"));
await $`gcc -O2 -o ${out}/echo-service ${import.meta.dir}/echo-service.c -lsystemd`;
await $`gcc -O2 -o ${out}/client ${import.meta.dir}/client.c -lsystemd`;
if (!(await Bun.file(join(ROOT, "dist/devservices")).exists())) await $`cd ${ROOT} && bun run build`.quiet();

const bus = await startPrivateBus();
const waitReady = async (p: ReturnType<typeof spawn>, word: string) => {
  const reader = (p.stdout as ReadableStream<Uint8Array>).getReader();
  let text = "";
  while (!text.includes(word)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`exited before '${word}': ${text}`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
};
const c = spawn([`${out}/echo-service`, bus.address], { stdout: "pipe", stderr: "inherit" });
await waitReady(c, "ready");
const d = spawn([join(ROOT, "dist/devservices"), "serve", "--bus", bus.address, "--state-dir", out, "--log-level", "info", "testautomation"], {
  stdout: "pipe",
  stderr: "inherit",
});
await waitReady(d, "devservices ready");

const payload = '{"Message":"hi"}';
const measure = async (dest: string, path: string, iface: string) =>
  JSON.parse(await $`${out}/client ${bus.address} ${dest} ${path} ${iface} ping ${payload} ${CALLS} ${INFLIGHT}`.text());
const ref = await measure("com.vendor.bench.echo", "/com/vendor/bench/echo", "com.vendor.bench.echo");
const dev = await measure("com.vendor.service.testautomation", "/com/vendor/service/testautomation", "com.vendor.service.testautomation");
c.kill();
d.kill();
await bus.stop();

const rows = [
  ["sequential calls/s", "seq_calls_per_s"],
  ["sequential p50 (us)", "seq_p50_us"],
  ["sequential p99 (us)", "seq_p99_us"],
  [`${INFLIGHT} in flight calls/s`, "par_calls_per_s"],
  [`${INFLIGHT} in flight p50 (us)`, "par_p50_us"],
  [`${INFLIGHT} in flight p99 (us)`, "par_p99_us"],
] as const;
console.log(`bench/bus: ${CALLS} calls of ping '${payload}' per mode, one C sd-bus client, one private dbus-daemon`);
console.log(`${"metric".padEnd(26)}${"C sd-bus".padStart(12)}${"devservices".padStart(14)}${"devservices/C".padStart(16)}`);
for (const [label, key] of rows)
  console.log(`${label.padEnd(26)}${String(ref[key]).padStart(12)}${String(dev[key]).padStart(14)}${(dev[key] / ref[key]).toFixed(2).padStart(16)}`);
