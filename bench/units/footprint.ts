// Memory of the two unit layouts (meta-devservices): `dist/devservices serve` hosting
// every service of the virtual board in one process (devservices.service), against
// one process per service (devservices@NAME.service), all on one private bus. Each
// process is measured once it has said READY=1 (as systemd would start it) and has
// idled for a moment: VmRSS and RssAnon from /proc/PID/status, Pss from
// /proc/PID/smaps_rollup (shared pages of the executable counted once across processes).
// Each service's share of the all-in-one process: the all-in-one's RssAnon less that
// of the all-in-one without that service (what hosting it adds: its objects, stores,
// watches and threads; the code of every service is loaded either way).
//   bun bench/units/footprint.ts [ROUNDS]
import { spawn } from "bun";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPrivateBus } from "../../src/bus/daemon";
import { loadBoard } from "../../src/core/board";
import { NotifySocket } from "../../test/packaging/notify-socket";

const BINARY = process.env.DEVSERVICES_BINARY ?? join(import.meta.dir, "../../dist/devservices");
const rounds = Number(process.argv[2] ?? 3);
const services = loadBoard("virtual").services;
const bus = await startPrivateBus();
const dir = mkdtempSync(join(tmpdir(), "footprint-"));

interface Mem { rss: number; anon: number; pss: number }
const kb = (text: string, key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN);
function mem(pid: number): Mem {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return { rss: kb(status, "VmRSS"), anon: kb(status, "RssAnon"), pss: kb(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"), "Pss") };
}

/** Starts one serve per entry (concurrently), waits for each READY=1, idles, measures, stops. */
async function run(sets: string[][]): Promise<Mem[]> {
  const procs = sets.map((names, i) => {
    const sock = new NotifySocket(join(dir, `n${i}-${Date.now()}.sock`));
    const p = spawn([BINARY, "serve", "--bus", bus.address, "--state-dir", join(dir, "state"), "--log-level", "warn", ...names], {
      stdout: "ignore",
      stderr: "inherit",
      env: { ...process.env, NOTIFY_SOCKET: sock.address },
    });
    return { p, sock };
  });
  await Promise.all(procs.map(({ sock }) => sock.next("READY")));
  await Bun.sleep(2000);
  const out = procs.map(({ p }) => mem(p.pid));
  for (const { p, sock } of procs) {
    p.kill("SIGTERM");
    await p.exited;
    sock.close();
  }
  return out;
}

const sum = (ms: Mem[]): Mem => ms.reduce((a, m) => ({ rss: a.rss + m.rss, anon: a.anon + m.anon, pss: a.pss + m.pss }), { rss: 0, anon: 0, pss: 0 });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const mb = (k: number) => (k / 1024).toFixed(1);

const ALL = `all-in-one (${services.join(" ")})`;
const rows: Record<string, Mem[]> = { [ALL]: [] };
for (const s of services) rows[`one process: ${s}`] = [];
rows[`per-service, ${services.length} processes together`] = [];
const without: Record<string, Mem[]> = Object.fromEntries(services.map((s) => [s, []]));
for (let r = 0; r < rounds; r++) {
  rows[ALL]!.push((await run([services]))[0]!);
  for (const s of services) rows[`one process: ${s}`]!.push((await run([[s]]))[0]!);
  rows[`per-service, ${services.length} processes together`]!.push(sum(await run(services.map((s) => [s]))));
  for (const s of services) without[s]!.push((await run([services.filter((x) => x !== s)]))[0]!);
}
console.log(`dist/devservices serve, virtual board, median of ${rounds} rounds (MB)`);
console.log(`${"".padEnd(52)} ${"VmRSS".padStart(7)} ${"RssAnon".padStart(8)} ${"Pss".padStart(7)}`);
for (const [name, ms] of Object.entries(rows)) {
  console.log(`${name.padEnd(52)} ${mb(median(ms.map((m) => m.rss))).padStart(7)} ${mb(median(ms.map((m) => m.anon))).padStart(8)} ${mb(median(ms.map((m) => m.pss))).padStart(7)}`);
}
const allAnon = median(rows[ALL]!.map((m) => m.anon));
console.log(`\neach service's share of the all-in-one's RssAnon (${mb(allAnon)} MB): the all-in-one less the all-in-one without it (MB)`);
for (const s of services) {
  const w = median(without[s]!.map((m) => m.anon));
  console.log(`${s.padEnd(52)} ${mb(allAnon - w).padStart(7)}`);
}
await bus.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
