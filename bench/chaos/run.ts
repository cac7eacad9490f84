// bench/chaos: hostile local apps against one `devservices serve` (the compiled
// binary, every service of the virtual board, on a private dbus-daemon), all at once,
// while one well-behaved client (prober.ts, root) calls `power2 getState` one call at
// a time in a loop. Phases, in one run: quiet (the client alone: the reference),
// chaos (the agents below), settle (the agents gone).
//   bun bench/chaos/run.ts [SECONDS [QUIET SETTLE]]     (defaults 120, 20, 10; root)
// CHAOS_AGENTS=1,2,... runs only those agents (2 includes its root setter 2b);
// CHAOS_LOG=FILE keeps serve's log (level warn) there.
// Agents (agent.ts; each its own process, as uid 65534 unless it needs root):
//   1 big replies: 10 pipelined ~600 KB testautomation pings on a connection that
//     never reads, a new connection each round, the old one closed;
//   2 subscription storm: 4 connections x 5,000 getPowerOnReason subscriptions,
//     unread for 5 s, then read and closed; 2b root sets the reason every second;
//   3 intent launch flood: `intent start` of a `view` the installed viewer handles,
//     4 connections as fast as answers come;
//   4 media scans: requestMediaScan of /usr and parts of it, as fast as answers come;
//   5 file cache on a full disk: its directories on a 4 MB tmpfs; objects inserted
//     and written until no room, then expired, again;
//   6 malformed payloads: test/fixtures/flooder.ts, nested and huge, at 6 services;
//   7 bad peripheral inputs: i2c opens of unlisted and impossible addresses, uart
//     opens and setBaudrate with absurd rates.
// Prints the client's calls/s, p50, p99 without and with chaos and the ratio; the
// serve process's VmRSS, open fds, threads, inotify watches and children before the
// chaos, at the peak and after settling; one line per agent. Exits 1 when the
// process died, or did not answer the client for over 1 s (longest gap between two
// answers, or a call that took over 1 s), or refused the client.
import { spawn, type Subprocess } from "bun";
import { dlopen, FFIType } from "bun:ffi";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { DBUS } from "../../src/bus/connection";
import { loadBoard } from "../../src/core/board";
import { findService } from "../../src/services";

const ROOT = resolve(import.meta.dir, "../..");
const BIN = process.env.DEVSERVICES_BINARY ?? join(ROOT, "dist/devservices");
const BUN = process.execPath;
const CHAOS_S = Number(process.argv[2] ?? 120);
const QUIET_S = Number(process.argv[3] ?? 20);
const SETTLE_S = Number(process.argv[4] ?? 10);
const ONLY = process.env.CHAOS_AGENTS?.split(",").map((s) => s.trim());
/** setpriv to uid 65534 with these groups (created when missing, as the layer's tests do). */
function nobody(groups: string[] = []): string[] {
  const gids = groups.map((g) => {
    const find = () => Bun.spawnSync(["getent", "group", g]).stdout.toString().split(":")[2];
    let gid = find();
    if (!gid) {
      Bun.spawnSync(["groupadd", "--system", g]);
      gid = find();
    }
    if (!gid) throw new Error(`no group ${g}, and groupadd could not make it`);
    return gid.trim();
  });
  return ["setpriv", "--reuid=65534", "--regid=65534", gids.length ? `--groups=${gids.join(",")}` : "--clear-groups"];
}
const log = (s: string) => console.error(`bench/chaos: ${s}`);

if (process.getuid?.() !== 0) {
  console.error("bench/chaos: run as root (setpriv to uid 65534, mount of a tmpfs)");
  process.exit(2);
}
for (const [n, v] of [["SECONDS", CHAOS_S], ["QUIET", QUIET_S], ["SETTLE", SETTLE_S]] as const)
  if (!Number.isFinite(v) || v <= 0) {
    console.error(`bench/chaos: ${n} must be a positive number of seconds`);
    process.exit(2);
  }
if (!existsSync(BIN)) {
  log("building dist/devservices");
  const b = Bun.spawnSync(["flock", "/tmp/devservices-build.lock", BUN, "run", "build"], { cwd: ROOT, stdout: "inherit", stderr: "inherit" });
  if (b.exitCode !== 0) process.exit(1);
}

const AGENTS = [
  { id: "1", mode: "replies", label: "big replies (10 x 600 KB ping, unread)", root: false },
  { id: "2", mode: "subscriptions", label: "subscription storm (4 x 5,000)", root: false },
  { id: "2b", mode: "reason-setter", label: "setPowerOnReason every 1 s", root: true },
  { id: "3", mode: "intents", label: "intent launch flood (4 conns)", root: false },
  { id: "4", mode: "media", label: "media scans of /usr", root: false },
  { id: "5", mode: "filecache", label: "file cache on a 4 MB disk", root: false, groups: ["devservices-cache"] },
  { id: "6", mode: "malformed", label: "malformed payloads (flooder)", root: false },
  { id: "7", mode: "peripheral", label: "bad peripheral inputs", root: false, groups: ["devservices-i2c", "devservices-uart"] },
 ].map((a) => ({ groups: [] as string[], ...a })).filter((a) => !ONLY || ONLY.includes(a.id) || (a.id === "2b" && ONLY.includes("2")));

// Orphans of the processes started here (an agent's flooders, a handler's children)
// become this process's children, so the cleanup finds every one of them.
{
  const { symbols } = dlopen("libc.so.6", { prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 } });
  const PR_SET_CHILD_SUBREAPER = 36;
  if (symbols.prctl(PR_SET_CHILD_SUBREAPER, 1n, 0n, 0n, 0n) !== 0) log("cannot become a subreaper: orphans may outlive the bench");
}

// ---- cleanup: everything started here, on the way out whatever the way ----------
const tmp = mkdtempSync(join(tmpdir(), "bench-chaos-"));
chmodSync(tmp, 0o755);
const disk = join(tmp, "fcdisk");
let mounted = false;
let bus: PrivateBus | undefined;
let serve: Subprocess | undefined;
const procs: Subprocess[] = [];
let cleaned: Promise<void> | undefined;

/** Every process below these (children, their children, ...); default: below this one. */
function descendants(roots: number[] = [process.pid]): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      /* gone */
    }
  }
  const out: number[] = [];
  const walk = (pid: number) => {
    for (const [p, pp] of parent) if (pp === pid) {
      out.push(p);
      walk(p);
    }
  };
  for (const r of roots) walk(r);
  return out;
}
const kill = (pid: number, sig: NodeJS.Signals) => {
  try {
    process.kill(pid, sig);
  } catch {
    /* gone */
  }
};

function cleanup(): Promise<void> {
  cleaned ??= (async () => {
    const busPid = bus?.pid;
    // Agents, the client, their children, and serve's handler processes first;
    // serve and the bus after (serve is given SIGTERM, then SIGKILL).
    for (const p of descendants()) if (p !== busPid && p !== serve?.pid) kill(p, "SIGKILL");
    if (serve && serve.exitCode === null && serve.signalCode === null) {
      serve.kill("SIGTERM");
      const t = setTimeout(() => serve?.kill("SIGKILL"), 3000);
      await serve.exited;
      clearTimeout(t);
    }
    for (const p of descendants()) if (p !== busPid) kill(p, "SIGKILL");
    await bus?.stop().catch(() => {});
    if (mounted) {
      if (Bun.spawnSync(["umount", disk]).exitCode !== 0) Bun.spawnSync(["umount", "-l", disk]);
      mounted = false;
    }
    rmSync(tmp, { recursive: true, force: true });
  })();
  return cleaned;
}
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const)
  process.on(sig, () => {
    log(`${sig}: stopping everything`);
    void cleanup().then(() => process.exit(130));
  });

// ---- the serve process's resources ------------------------------------------------
interface Resources {
  rssMb: number;
  fds: number;
  threads: number;
  inotify: number;
  children: number;
}
const readStatus = (pid: number) => readFileSync(`/proc/${pid}/status`, "utf8");
const kb = (status: string, k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
function resources(pid: number, full: boolean): Resources {
  const status = readStatus(pid);
  const fdList = readdirSync(`/proc/${pid}/fd`);
  let inotify = NaN;
  let children = NaN;
  if (full) {
    inotify = 0;
    for (const fd of fdList) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) !== "anon_inode:inotify") continue;
        const info = readFileSync(`/proc/${pid}/fdinfo/${fd}`, "utf8");
        inotify += info.split("\ninotify wd:").length - 1;
      } catch {
        /* closed meanwhile */
      }
    }
    children = 0;
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      try {
        children += readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim().split(/\s+/).filter(Boolean).length;
      } catch {
        /* the thread ended */
      }
    }
  }
  return { rssMb: kb(status, "VmRSS") / 1024, fds: fdList.length, threads: kb(status, "Threads"), inotify, children };
}
const TICKS = 100;
/** CPU ticks of a process (own; reaped children's), and its main thread's wait for a CPU in ms. */
const cpuOf = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  const wait = Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ")[1]) / 1e6;
  return { own: Number(f[11]) + Number(f[12]), children: Number(f[13]) + Number(f[14]), waitMs: wait };
};

/** A line reader over a child's stdout: every line kept, waiters for a matching one. */
function lines(stream: ReadableStream<Uint8Array>) {
  const all: string[] = [];
  const waiters: { pred: (l: string) => boolean; resolve: (l: string) => void }[] = [];
  const done = (async () => {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of stream) {
      buf += dec.decode(chunk, { stream: true });
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const l = buf.slice(0, i);
        buf = buf.slice(i + 1);
        all.push(l);
        if (all.length > 2000) all.splice(0, 1000);
        for (const w of [...waiters]) if (w.pred(l)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(l);
        }
      }
    }
  })().catch(() => {});
  return {
    all,
    done,
    wait(pred: (l: string) => boolean, ms: number): Promise<string | undefined> {
      const found = all.find(pred);
      if (found) return Promise.resolve(found);
      return new Promise((res) => {
        const w = { pred, resolve: res };
        waiters.push(w);
        setTimeout(() => {
          const i = waiters.indexOf(w);
          if (i >= 0) {
            waiters.splice(i, 1);
            res(undefined);
          }
        }, ms);
      });
    },
  };
}

const fmt = (v: number, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : "-");
const failures: string[] = [];

async function main() {
  // ---- the board: the virtual board, its file cache on a small tmpfs --------------
  mkdirSync(disk);
  const m = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0755", "tmpfs", disk]);
  if (m.exitCode !== 0) throw new Error(`mount of a tmpfs at ${disk}: ${m.stderr.toString().trim()}`);
  mounted = true;
  const state = join(tmp, "state");
  // The demo's handler application, where the intent service looks (<state>/applications).
  const app = join(state, "applications", "com.vendor.demo.viewer");
  mkdirSync(app, { recursive: true });
  for (const f of ["viewer", "appinfo.json"]) copyFileSync(join(ROOT, "recipes/apps/com.vendor.demo.viewer", f), join(app, f));
  chmodSync(join(app, "viewer"), 0o755);
  const recipe = JSON.parse(readFileSync(join(ROOT, "recipes/boards/virtual.json"), "utf8"));
  recipe.name = "virtual-chaos";
  recipe.serviceConfig.filecache = {
    configFile: null,
    cacheDirectory: join(disk, "cache"),
    metadataFile: join(disk, "filecache.db"),
    copyDirectory: join(disk, "copies"),
  };
  const boardPath = join(tmp, "board.json");
  writeFileSync(boardPath, JSON.stringify(recipe, null, 2));
  const board = loadBoard(boardPath);
  const names = board.services.flatMap((s) => {
    const mod = findService(s)!;
    return (mod.instances ? mod.instances(board) : [mod]).map((i) => i.spec.busName);
  });

  // ---- the bus and serve ------------------------------------------------------------
  bus = await startPrivateBus();
  const address = bus.address;
  const busSocket = /path=([^,]+)/.exec(address)![1]!;
  chmodSync(bus.dir, 0o755);
  chmodSync(busSocket, 0o777);
  const logPath = join(tmp, "serve.log");
  const logFd = openSync(logPath, "w");
  serve = spawn([BIN, "serve", "--bus", address, "--board", boardPath, "--state-dir", state, "--log-level", "warn"], {
    stdin: "ignore",
    stdout: logFd,
    stderr: logFd,
    // The viewer answers through this binary (as the demo sets it).
    env: { ...process.env, DEVSERVICES: BIN },
  });
  closeSync(logFd);
  const pid = serve.pid;
  const root = await BusClient.connect(address);
  const t0 = performance.now();
  let owned: string[] = [];
  while (performance.now() - t0 < 30000) {
    if (serve.exitCode !== null) throw new Error(`serve exited with ${serve.exitCode} while starting:\n${readFileSync(logPath, "utf8").slice(-2000)}`);
    const r = await root.callRaw({ ...DBUS, member: "ListNames" }).catch(() => null);
    owned = ((r?.body[0] ?? []) as string[]).filter((n) => names.includes(n));
    if (owned.length === names.length) break;
    await Bun.sleep(100);
  }
  const missing = names.filter((n) => !owned.includes(n));
  if (missing.length) log(`WARNING: not on the bus after 30 s: ${missing.join(", ")} (see the log below)`);
  log(`serve pid ${pid}: ${owned.length} of ${names.length} names owned in ${fmt((performance.now() - t0) / 1000)} s`);
  root.close();

  // ---- sampling -----------------------------------------------------------------------
  let serveGoneAt: number | undefined;
  let phaseName = "quiet";
  const peak: Resources = { rssMb: 0, fds: 0, threads: 0, inotify: 0, children: 0 };
  let tick = 0;
  const sampler = setInterval(() => {
    if (serve!.exitCode !== null || serve!.signalCode !== null) {
      serveGoneAt ??= performance.now();
      return;
    }
    try {
      const r = resources(pid, tick++ % 5 === 0);
      if (phaseName === "chaos" || phaseName === "settle")
        for (const k of Object.keys(peak) as (keyof Resources)[]) if (Number.isFinite(r[k])) peak[k] = Math.max(peak[k], r[k]);
    } catch {
      serveGoneAt ??= performance.now();
    }
  }, 200);

  // ---- the well-behaved client ------------------------------------------------------------
  const prober = spawn([BUN, join(import.meta.dir, "prober.ts")], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
    env: { ...process.env, DEVSERVICES_BUS: address },
  });
  procs.push(prober);
  const proberOut = lines(prober.stdout);
  if (!(await proberOut.wait((l) => l === "READY", 15000))) throw new Error("the well-behaved client did not start");
  const tell = (s: string) => {
    try {
      prober.stdin.write(`${s}\n`);
      prober.stdin.flush();
    } catch {
      /* it died: reported below */
    }
  };
  // CPU per phase: serve's (its own, and its reaped children's: the intent handlers),
  // the bus daemon's and the client's, the time their main threads waited for a CPU
  // (runnable, not running), and the machine's busy share of all its cores.
  const machine = () => {
    const f = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
    const all = f.reduce((x, y) => x + y, 0);
    return { busy: all - f[3]! - f[4]!, all };
  };
  const cpuNow = () => {
    const c = (p: number) => {
      try {
        return cpuOf(p);
      } catch {
        return { own: NaN, children: NaN, waitMs: NaN };
      }
    };
    const sv = c(pid), b = c(bus!.pid), pr = c(prober.pid);
    // Every process of this bench (this one, and all below it, with their reaped children).
    let tree = 0;
    for (const p of [process.pid, ...descendants()]) {
      const x = c(p);
      if (Number.isFinite(x.own)) tree += x.own + x.children;
    }
    return { serve: sv.own, handlers: sv.children, serveWait: sv.waitMs, bus: b.own, busWait: b.waitMs, client: pr.own, clientWait: pr.waitMs, tree, ...machine() };
  };
  type Cpu = ReturnType<typeof cpuNow>;
  const phases: Record<string, { cpu: Cpu; seconds: number }> = {};
  let phaseT = performance.now();
  let phaseCpu = cpuNow();
  const phase = (name: string) => {
    const now = performance.now();
    const cpu = cpuNow();
    phases[phaseName] = {
      cpu: Object.fromEntries(Object.keys(cpu).map((k) => [k, cpu[k as keyof Cpu] - phaseCpu[k as keyof Cpu]])) as Cpu,
      seconds: (now - phaseT) / 1000,
    };
    phaseName = name;
    phaseT = now;
    phaseCpu = cpu;
    tell(`phase ${name}`);
  };
  await Bun.sleep(2000);
  phase("quiet");
  log(`quiet phase, ${QUIET_S} s`);
  await Bun.sleep(QUIET_S * 1000);
  const before = resources(pid, true);

  // ---- chaos ------------------------------------------------------------------------------
  phase("chaos");
  log(`chaos phase, ${CHAOS_S} s, agents ${AGENTS.map((a) => a.id).join(", ")}`);
  const env = {
    ...process.env,
    DEVSERVICES_BUS: address,
    HOME: "/tmp",
    BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0",
    CHAOS_MAX_SECONDS: String(CHAOS_S + 30),
  };
  const running = AGENTS.map((a) => {
    const proc = spawn([...(a.root ? [] : nobody(a.groups)), BUN, join(import.meta.dir, "agent.ts"), a.mode, ...(a.mode === "filecache" ? [disk] : [])], {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env,
    });
    procs.push(proc);
    return { ...a, proc, out: lines(proc.stdout), err: lines(proc.stderr), exitedAt: undefined as number | undefined, cpuS: NaN };
  });
  for (const r of running) void r.proc.exited.then(() => (r.exitedAt = performance.now()));
  const chaosStart = performance.now();
  while (performance.now() - chaosStart < CHAOS_S * 1000 && serveGoneAt === undefined) await Bun.sleep(250);
  // Stop: SIGTERM makes an agent print its summary and exit; what is left after 5 s is killed.
  for (const r of running) {
    try {
      const c = cpuOf(r.proc.pid);
      r.cpuS = (c.own + c.children) / TICKS;
    } catch {
      /* it ended: its CPU is unknown */
    }
    r.proc.kill("SIGTERM");
  }
  await Promise.race([Promise.all(running.map((r) => r.proc.exited)), Bun.sleep(5000)]);
  for (const r of running) if (r.proc.exitCode === null && r.proc.signalCode === null) r.proc.kill("SIGKILL");
  await Promise.all(running.map((r) => Promise.all([r.proc.exited, r.out.done, r.err.done])));
  // Their own children (flooders) too, if any outlived them (serve's handler
  // processes are serve's to reap).
  // This process is their subreaper, so orphans are found below it.
  const keep = new Set([bus.pid, prober.pid, pid, ...descendants([pid])]);
  for (const p of descendants()) if (!keep.has(p)) kill(p, "SIGKILL");

  // ---- settle --------------------------------------------------------------------------------
  if (serveGoneAt === undefined) {
    phase("settle");
    log(`settle phase, ${SETTLE_S} s`);
    const s0 = performance.now();
    while (performance.now() - s0 < SETTLE_S * 1000 && serveGoneAt === undefined) await Bun.sleep(250);
  }
  const alive = serveGoneAt === undefined && serve.exitCode === null && serve.signalCode === null;
  const after = alive ? resources(pid, true) : undefined;
  let scanning = "-";
  if (alive) {
    const c = await BusClient.connect(address);
    const d = (await c.call("mediaindexer", "getDeviceList", {}, { timeoutMs: 10000 }).catch(() => null)) as {
      pluginList?: { deviceList?: { uri?: string; state?: string }[] }[];
    } | null;
    const devices = (d?.pluginList ?? []).flatMap((p) => p.deviceList ?? []);
    scanning = `${devices.filter((x) => x.state === "scanning").length} of ${devices.length} media devices still scanning`;
    c.close();
  }
  phase("end");
  clearInterval(sampler);
  tell("stop");
  const reportLine = await proberOut.wait((l) => l.startsWith("REPORT "), 15000);

  // ---- the report ------------------------------------------------------------------------------
  type P = { calls: number; seconds: number; p50: number; p99: number; max: number; over1s: number; gap: number; gapAt: number; gapWall: number; errors: number; firstError?: string };
  const rep = reportLine ? (JSON.parse(reportLine.slice(7)) as Record<string, P>) : undefined;
  const shown = ["quiet", "chaos", "settle"].filter((p) => rep?.[p]);
  const cps = (p: P) => p.calls / p.seconds;
  console.log(`\nchaos: devservices serve (${BIN.replace(ROOT + "/", "")}, board '${board.name}', ${owned.length} bus names) on a private dbus-daemon; ${AGENTS.length} agents; quiet ${QUIET_S} s, chaos ${CHAOS_S} s, settle ${SETTLE_S} s`);
  console.log(`\nwell-behaved client (root, one connection): power2 getState, one call at a time`);
  console.log(`${"metric".padEnd(24)}${shown.map((p) => p.padStart(12)).join("")}${"chaos/quiet".padStart(14)}`);
  if (rep) {
    const row = (label: string, f: (p: P) => number, d: number, ratio = true) => {
      const q = rep.quiet ? f(rep.quiet) : NaN;
      const c = rep.chaos ? f(rep.chaos) : NaN;
      console.log(`${label.padEnd(24)}${shown.map((p) => fmt(f(rep[p]!), d).padStart(12)).join("")}${(ratio ? fmt(c / q, 2) : "").padStart(14)}`);
    };
    row("calls/s", cps, 0);
    row("p50 (ms)", (p) => p.p50, 3);
    row("p99 (ms)", (p) => p.p99, 3);
    row("max (ms)", (p) => p.max, 1);
    row("longest gap (ms)", (p) => p.gap, 1);
    row("calls over 1 s", (p) => p.over1s, 0, false);
    row("errors", (p) => p.errors, 0, false);
    const cpuRow = (label: string, f: (c: Cpu, seconds: number) => number) =>
      console.log(`${label.padEnd(24)}${shown.map((p) => (phases[p] ? fmt(f(phases[p]!.cpu, phases[p]!.seconds), 0) : "-").padStart(12)).join("")}`);
    console.log(`CPU, % of a core (main thread's wait for a CPU, ms per s)`);
    const both = (label: string, own: (c: Cpu) => number, wait: (c: Cpu) => number) =>
      console.log(
        `${label.padEnd(24)}${shown.map((p) => {
          const ph = phases[p];
          return (ph ? `${fmt((100 * own(ph.cpu)) / TICKS / ph.seconds, 0)} (${fmt(wait(ph.cpu) / ph.seconds, 0)})` : "-").padStart(12);
        }).join("")}`,
      );
    both("  serve", (c) => c.serve, (c) => c.serveWait);
    cpuRow("  serve's handlers", (c, s) => (100 * c.handlers) / TICKS / s);
    both("  bus daemon", (c) => c.bus, (c) => c.busWait);
    both("  this client", (c) => c.client, (c) => c.clientWait);
    cpuRow("  all of this bench", (c, s) => (100 * c.tree) / TICKS / s);
    cpuRow("  others on the machine", (c, s) => (100 * (c.busy - c.tree)) / TICKS / s);
    cpuRow(`  machine busy (% of ${navigator.hardwareConcurrency})`, (c) => (100 * c.busy) / c.all);
    for (const name of shown) {
      const p = rep[name]!;
      if (p.errors) console.log(`  ${name}: first error: ${p.firstError}`);
    }
    const others = shown.filter((p) => phases[p] && (phases[p]!.cpu.busy - phases[p]!.cpu.tree) / TICKS / phases[p]!.seconds > 0.2);
    if (others.length) console.log(`  NOTE: other processes on this machine used over 20 % of a core in the ${others.join(", ")} phase(s): the figures are not this bench's alone`);
  }

  console.log(`\nserve process (pid ${pid})`);
  console.log(`${"".padEnd(24)}${"before".padStart(10)}${"peak".padStart(10)}${"after".padStart(10)}${"after-before".padStart(14)}`);
  const res = (label: string, k: keyof Resources, d: number) =>
    console.log(
      `${label.padEnd(24)}${fmt(before[k], d).padStart(10)}${fmt(peak[k], d).padStart(10)}${fmt(after?.[k] ?? NaN, d).padStart(10)}${fmt((after?.[k] ?? NaN) - before[k], d).padStart(14)}`,
    );
  res("VmRSS (MB)", "rssMb", 1);
  res("open fds", "fds", 0);
  res("threads", "threads", 0);
  res("inotify watches", "inotify", 0);
  res("child processes", "children", 0);
  console.log(`  before: end of the quiet phase; peak: during chaos and settle (every 200 ms; watches and children every 1 s); after: ${SETTLE_S} s after the agents stopped; ${scanning}`);

  console.log(`\nagents`);
  console.log(`${"".padEnd(50)}${"CPU s".padStart(7)}${"actions".padStart(10)}${"refused".padStart(10)}${"errors".padStart(8)}  notes`);
  for (const r of running) {
    const line = r.out.all.find((l) => l.startsWith("SUMMARY "));
    const s = line ? (JSON.parse(line.slice(8)) as { actions: number; refused: number; errors: number; notes: Record<string, unknown> }) : undefined;
    const who = `${r.id} ${r.label} (${r.root ? "root" : `65534${r.groups.length ? "+" + r.groups.map((g) => g.replace("devservices-", "")).join(",") : ""}`})`;
    if (!s) {
      console.log(`${who.padEnd(50)}${fmt(r.cpuS, 1).padStart(7)}  no summary (exit ${r.proc.exitCode ?? r.proc.signalCode}): ${r.err.all.slice(-3).join(" | ")}`);
      continue;
    }
    const early = r.exitedAt !== undefined && r.exitedAt < chaosStart + CHAOS_S * 1000 - 1000 ? ` [ended after ${fmt((r.exitedAt - chaosStart) / 1000, 0)} s]` : "";
    console.log(`${who.padEnd(50)}${fmt(r.cpuS, 1).padStart(7)}${String(s.actions).padStart(10)}${String(s.refused).padStart(10)}${String(s.errors).padStart(8)}  ${JSON.stringify(s.notes)}${early}`);
  }

  // The service log: warnings and errors by message.
  const text = readFileSync(logPath, "utf8");
  const counts = new Map<string, number>();
  let logLines = 0;
  for (const l of text.split("\n")) {
    if (!l) continue;
    logLines++;
    let key = l.slice(0, 100);
    try {
      const j = JSON.parse(l.replace(/^<\d>/, ""));
      key = `${j.level >= 50 ? "error" : j.level >= 40 ? "warn" : j.level} ${j.service ?? ""} ${String(j.msg ?? "").slice(0, 80)}`;
    } catch {
      /* not JSON: kept as it is */
    }
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  console.log(`\nserve log (warn and above): ${logLines} lines, ${fmt(text.length / 1024, 0)} KB`);
  for (const [k, n] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(`  ${String(n).padStart(7)}  ${k}`);

  // ---- verdict -------------------------------------------------------------------------------------
  if (!alive) failures.push(`serve died (${serve.exitCode !== null ? `exit ${serve.exitCode}` : `signal ${serve.signalCode}`}) during the ${phaseName} phase`);
  if (!rep) failures.push("the well-behaved client gave no report (it died or hung)");
  else {
    const all = shown.map((n) => ({ n, p: rep[n]! }));
    const worst = all.reduce((a, b) => (b.p.gap > a.p.gap ? b : a));
    console.log(`\nlongest gap between two answers: ${fmt(worst.p.gap, 1)} ms (${worst.n} phase, ending ${fmt(worst.p.gapAt, 1)} s into it)`);
    // What serve logged (warn and above) while the client waited.
    const during = new Map<string, number>();
    for (const l of text.split("\n")) {
      try {
        const j = JSON.parse(l.replace(/^<\d>/, ""));
        if (j.time >= worst.p.gapWall - worst.p.gap - 200 && j.time <= worst.p.gapWall) {
          const k = `${j.service ?? j.component ?? ""} ${String(j.msg ?? "").slice(0, 70)}`;
          during.set(k, (during.get(k) ?? 0) + 1);
        }
      } catch {
        /* not a log line */
      }
    }
    if (during.size) console.log(`  serve logged meanwhile: ${[...during].map(([k, n]) => `${n} x ${k}`).join("; ")}`);
    if (worst.p.gap > 1000) failures.push(`serve did not answer the well-behaved client for ${fmt(worst.p.gap, 0)} ms (${worst.n} phase, ${fmt(worst.p.gapAt, 1)} s in)`);
    for (const { n, p } of all) {
      if (p.over1s) failures.push(`${p.over1s} calls of the well-behaved client took over 1 s in the ${n} phase (max ${fmt(p.max, 0)} ms)`);
      if (p.errors) failures.push(`${p.errors} calls of the well-behaved client failed in the ${n} phase: ${p.firstError}`);
    }
  }
  if (process.env.CHAOS_LOG) copyFileSync(logPath, process.env.CHAOS_LOG);
  if (failures.length) console.log(`\nserve log, last lines:\n${text.split("\n").slice(-12).join("\n")}`);
}

let code = 0;
try {
  await main();
} catch (e) {
  failures.push(`the bench failed: ${(e as Error).stack ?? e}`);
}
if (failures.length) {
  console.log(`\nFAIL:\n${failures.map((f) => `  - ${f}`).join("\n")}`);
  code = 1;
} else console.log(`\nPASS: serve answered throughout and is alive`);
await cleanup();
process.exit(code);
