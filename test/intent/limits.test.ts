// The bounds on handler processes (docs/services/intent.md, "Handler processes"):
// the service runs in its own process on a private bus with the exec launcher;
// hostile callers are other uids (setpriv) that ask for many launches at once over
// several connections. The excess is refused with "Failed to start intent", the
// service's children never exceed the bounds, another uid still gets its share,
// and handlers that exit or are SIGKILLed give back their places without leaving
// fds or zombies in the service.
import { test, expect, beforeAll, afterAll, afterEach } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { eventually, openBusToAll, BUN, ROOT, childrenOf, spawnScript } from "../helpers/harness";
import { installApp, tempDir } from "./apps";

const skip = process.getuid?.() !== 0 ? "needs root (setpriv)" : null;
const INTENT = "com.vendor.service.intent";
const PER_UID = 3;
const TOTAL = 5;
const HOSTILE = 65534;
// A second unprivileged uid the bus daemon knows (it refuses uids without a passwd entry): daemon.
const OTHER = 1;

let bus: PrivateBus;
let server: Subprocess;
let dir: string;
let apps: string;
let go: string;
let client: BusClient;
/** The service's open fds before it launched anything. */
let baseline: number;
const callers: Subprocess[] = [];
const watches: { stop(): number }[] = [];

// Handlers: `hold` runs until killed (the process is sleep itself); `wait` runs until the go-file appears.
const HOLD = { action: "hold" };
const WAIT = { action: "wait" };
// `leave` exits at once, leaving a background process that keeps its output open (and writes its pid to `leftBehind`).
const LEAVE = { action: "leave" };
let leftBehind: string;

beforeAll(async () => {
  if (skip) return;
  bus = await startPrivateBus();
  openBusToAll(bus.address);
  dir = mkdtempSync(join(tmpdir(), "devservices-intent-limits-"));
  chmodSync(dir, 0o755);
  apps = tempDir();
  go = join(dir, "go");
  installApp(apps, { id: "com.example.holder", main: "holder", intentFilters: [{ actions: ["hold"] }] }, "#!/bin/sh\nexec sleep 600\n");
  installApp(
    apps,
    { id: "com.example.waiter", main: "waiter", intentFilters: [{ actions: ["wait"] }] },
    `#!/bin/sh\nwhile [ ! -e ${JSON.stringify(go)} ]; do sleep 0.02 </dev/null >/dev/null 2>&1; done\nexit 0\n`,
  );
  leftBehind = join(dir, "left-behind");
  installApp(
    apps,
    { id: "com.example.leaver", main: "leaver", intentFilters: [{ actions: ["leave"] }] },
    `#!/bin/sh
sleep 600 &
echo $! >> ${JSON.stringify(leftBehind)}
exit 0
`,
  );
  const board = join(dir, "board.json");
  writeFileSync(
    board,
    JSON.stringify({
      name: "intent-limits",
      backend: "virtual",
      services: ["intent"],
      // The launch rate is rate.test.ts's: here only the bounds on processes running at once refuse.
      serviceConfig: { intent: { applicationDirs: [apps], launcher: "exec", maxHandlerProcessesPerUid: PER_UID, maxHandlerProcesses: TOTAL, maxLaunchesPerUidPerSecond: 100000 } },
    }),
  );
  server = spawn([BUN, join(ROOT, "src/main.ts"), "serve", "--bus", bus.address, "--board", board, "--state-dir", join(dir, "state"), "--log-level", "error", "intent"], { env: { ...process.env },
    stdout: "ignore",
    stderr: "inherit",
  });
  client = await BusClient.connect(bus.address);
  await eventually(async () => ((await client.call(INTENT, "query", {}).catch(() => ({}))) as { handlers?: unknown[] }).handlers?.length === 3, 15000, 50);
  baseline = fds();
}, 30000);

afterEach(async () => {
  if (skip) return;
  for (const w of watches.splice(0)) w.stop();
  for (const c of callers.splice(0)) {
    c.kill("SIGKILL");
    await c.exited;
  }
  // No handler outlives a test: SIGKILL what is left, and let the service reap it.
  for (const pid of children()) process.kill(pid, "SIGKILL");
  for (const pid of leftPids()) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* gone already */
    }
  }
  rmSync(leftBehind, { force: true });
  rmSync(go, { force: true });
  await eventually(() => children().length === 0, 5000);
  // Every handler's pipes are closed again: the next test starts from the baseline.
  await eventually(() => fds() === baseline, 5000);
});

afterAll(async () => {
  if (skip) return;
  client?.close();
  server?.kill("SIGKILL");
  await server?.exited;
  await bus?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
  if (apps) rmSync(apps, { recursive: true, force: true });
});

/** The service's direct children (every handler it launched and has not reaped yet). */
function children(): number[] {
  return childrenOf(server.pid);
}

/** Children that have exited but were not reaped. */
const zombies = () => children().filter((p) => {
  try {
    const stat = readFileSync(`/proc/${p}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return false;
  }
});

const leftPids = () => (existsSync(leftBehind) ? readFileSync(leftBehind, "utf8").trim().split("\n").filter(Boolean).map(Number) : []);

const fds = () => readdirSync(`/proc/${server.pid}/fd`).length;

/** The service's children sampled every 5 ms until stop() is called: the most seen. */
function watchChildren() {
  let most = 0;
  const timer = setInterval(() => (most = Math.max(most, children().length)), 5);
  const w = {
    stop() {
      clearInterval(timer);
      return most;
    },
  };
  watches.push(w);
  return w;
}

/** As `uid`: `connections` connections sending `perConnection` starts each at once. Answers once all are in. */
async function flood(uid: number, connections: number, perConnection: number, intent: object) {
  const caller = spawnScript("test/fixtures/intent-flood.ts", [String(connections), String(perConnection), JSON.stringify(intent)], {
    DEVSERVICES_BUS: bus.address, HOME: "/tmp", BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0",
  }, ["setpriv", `--reuid=${uid}`, `--regid=${uid}`, "--clear-groups"]);
  const proc = caller.proc;
  callers.push(proc);
  await caller.waitFor((l) => l.startsWith("DONE "), 20000);
  const out = caller.lines.join("\n");
  const answers = out.split("\n").filter((l) => l.startsWith("ANSWER ")).map((l) => JSON.parse(l.slice("ANSWER ".length)));
  return {
    proc,
    started: answers.filter((a) => a.returnValue === true),
    refused: answers.filter((a) => a.returnValue === false),
    answers,
  };
}

const refusal = (reason: RegExp) => ({ returnValue: false, errorText: "Failed to start intent", intentId: 0, reason: expect.stringMatching(reason) });

test.skipIf(!!skip)("one uid over 4 connections asks for 12 handlers at once: 3 start, 9 are refused, and never more than 3 run; a second uid gets the rest of the total", async () => {
  expect(children()).toEqual([]);
  expect(fds()).toBe(baseline);

  const watch = watchChildren();
  const hostile = await flood(HOSTILE, 4, 3, HOLD);
  expect(hostile.answers.length).toBe(12);
  expect(hostile.started.length).toBe(PER_UID);
  for (const a of hostile.started) expect(a).toEqual({ returnValue: true, intentId: expect.any(Number) });
  expect(hostile.refused.length).toBe(12 - PER_UID);
  for (const a of hostile.refused) expect(a).toEqual(refusal(new RegExp(`uid ${HOSTILE} .*${PER_UID} handler processes`)));
  // The refused launches started nothing.
  expect(children().length).toBe(PER_UID);

  // At its bound, the first uid's connections still open: another uid launches, up to the total.
  const other = await flood(OTHER, 1, 4, HOLD);
  expect(other.started.length).toBe(TOTAL - PER_UID);
  expect(other.refused.length).toBe(4 - (TOTAL - PER_UID));
  for (const a of other.refused) expect(a).toEqual(refusal(new RegExp(`${TOTAL} handler processes`)));
  expect(children().length).toBe(TOTAL);
  // The first uid is still refused from a new connection.
  const again = await flood(HOSTILE, 1, 1, HOLD);
  expect(again.refused).toEqual([refusal(new RegExp(`uid ${HOSTILE} `))]);
  expect(watch.stop()).toBe(TOTAL);

  // The handlers are SIGKILLed: reaped, their places and fds given back.
  for (const pid of children()) process.kill(pid, "SIGKILL");
  await eventually(() => children().length === 0, 5000);
  await eventually(() => fds() === baseline, 5000);
  expect(zombies()).toEqual([]);

  // The first uid launches again, as many as before and no more.
  const watch2 = watchChildren();
  const after = await flood(HOSTILE, 2, 3, HOLD);
  expect(after.started.length).toBe(PER_UID);
  expect(after.refused.length).toBe(6 - PER_UID);
  expect(watch2.stop()).toBe(PER_UID);
}, 60000);

test.skipIf(!!skip)("handlers that exit on their own give back their places, a caller that goes away does not (its handlers still run); no fds or zombies are left", async () => {
  const first = await flood(HOSTILE, 2, 2, WAIT);
  expect(first.started.length).toBe(PER_UID);
  expect(first.refused).toEqual([refusal(new RegExp(`uid ${HOSTILE} `))]);
  const running = children();
  expect(running.length).toBe(PER_UID);

  // The caller's connections go away: its handlers keep running and keep counting.
  first.proc.kill("SIGKILL");
  await first.proc.exited;
  const second = await flood(HOSTILE, 1, 1, WAIT);
  expect(second.refused).toEqual([refusal(new RegExp(`uid ${HOSTILE} `))]);
  expect(children().sort()).toEqual(running.sort());

  // The handlers exit: reaped, no fds kept, and the uid may launch again.
  writeFileSync(go, "");
  await eventually(() => children().length === 0, 5000);
  await eventually(() => fds() === baseline, 5000);
  expect(zombies()).toEqual([]);
  rmSync(go);
  const third = await flood(HOSTILE, 1, PER_UID, WAIT);
  expect(third.started.length).toBe(PER_UID);
  expect(existsSync(go)).toBe(false);
}, 60000);

test.skipIf(!!skip)("about 200 launches and SIGKILLs in rounds of the bound: the service ends with the fds and children it started with", async () => {
  for (let round = 0; round < Math.ceil(200 / PER_UID); round++) {
    // This client is one uid: PER_UID of each round start, the one more is refused.
    const answers = await Promise.all(Array.from({ length: PER_UID + 1 }, () => client.call(INTENT, "start", { intent: HOLD })));
    expect(answers.filter((a) => a.returnValue === true).length).toBe(PER_UID);
    expect(answers.filter((a) => a.returnValue === false)).toEqual([refusal(/handler processes/)]);
    for (const pid of children()) process.kill(pid, "SIGKILL");
    await eventually(() => children().length === 0, 5000);
  }
  await eventually(() => fds() === baseline, 5000);
  expect(zombies()).toEqual([]);
}, 60000);

test.skipIf(!!skip)("a handler that exits leaving a process behind with its output open still counts until that process is gone", async () => {
  const first = await flood(HOSTILE, 1, PER_UID, LEAVE);
  expect(first.started.length).toBe(PER_UID);
  await eventually(() => leftPids().length === PER_UID && children().length === 0, 5000);
  // The launched processes are gone, what they left runs on: the uid is still at its bound.
  const second = await flood(HOSTILE, 1, 1, LEAVE);
  expect(second.refused).toEqual([refusal(new RegExp(`uid ${HOSTILE} `))]);
  expect(fds()).toBeGreaterThan(baseline);

  for (const pid of leftPids()) process.kill(pid, "SIGKILL");
  await eventually(() => fds() === baseline, 5000);
  rmSync(leftBehind);
  const third = await flood(HOSTILE, 1, 1, LEAVE);
  expect(third.started.length).toBe(1);
}, 60000);
