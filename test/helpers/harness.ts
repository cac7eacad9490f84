// The test harness: a real private dbus-daemon, services started in-process (or as
// the compiled binary), clients in this process or in child processes.
import { chmodSync, chownSync, copyFileSync, existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { spawn, type Subprocess } from "bun";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { startRuntime, type Runtime } from "../../src/runtime";
import { loadBoard, parseBoard, type Board } from "../../src/core/board";
import { configureLogging } from "../../src/core/log";
import { testAccounts, type GroupName, type TestGroupName } from "../layer/accounts";

export const ROOT = resolve(import.meta.dir, "../..");
export const BINARY = join(ROOT, "dist/devservices");
export const BUN = process.execPath;

export interface Env {
  bus: PrivateBus;
  rt?: Runtime;
  stateDir: string;
  clients: BusClient[];
  /** A new client connection on the test bus (closed by stop()). */
  client(): Promise<BusClient>;
  /** (Re)starts services in this process. */
  start(services: string[], board?: Partial<Board> | Board, stateDir?: string): Promise<Runtime>;
  stopServices(): Promise<void>;
  stop(): Promise<void>;
}

const log = configureLogging(process.env.DEVSERVICES_LOG_LEVEL ?? "silent");

/** A private bus, and services on it (none until start()). */
export async function testEnv(): Promise<Env> {
  const bus = await startPrivateBus();
  let stateDir: string;
  try {
    stateDir = mkdtempSync(join(tmpdir(), "devservices-test-"));
  } catch (e) {
    await bus.stop();
    throw e;
  }
  const env: Env = {
    bus,
    stateDir,
    clients: [],
    async client() {
      const c = await BusClient.connect(bus.address);
      env.clients.push(c);
      return c;
    },
    async start(services, board, dir) {
      await env.stopServices();
      const base = loadBoard("virtual");
      const b = board ? parseBoard({ ...base, ...board }, "test") : base;
      env.rt = await startRuntime({ busAddress: bus.address, board: b, stateDir: dir ?? stateDir, services, log, checkResponses: true });
      return env.rt;
    },
    async stopServices() {
      if (env.rt) await env.rt.stop();
      env.rt = undefined;
    },
    async stop() {
      for (const c of env.clients.splice(0)) c.close();
      await env.stopServices();
      await bus.stop();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
  return env;
}

/**
 * Calls onLine with each line a child's output carries, as it comes; with `last`, also
 * with a final line that has no newline. Resolves when the stream ends.
 */
export async function eachLine(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void, opts: { last?: boolean } = {}): Promise<void> {
  const decoder = new TextDecoder();
  let buf = "";
  for await (const chunk of stream) {
    buf += decoder.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      onLine(line);
    }
  }
  if (opts.last && buf) onLine(buf);
}

/**
 * Runs a TypeScript file (test/fixtures/...) as a separate process with the bus
 * address in DEVSERVICES_BUS. Lines it prints are collected; waitFor() awaits one.
 * `prefix` runs it through another command (e.g. setpriv, as another uid).
 */
export function spawnScript(script: string, args: string[] = [], env: Record<string, string> = {}, prefix: string[] = []) {
  const proc: Subprocess<"ignore", "pipe", "inherit"> = spawn([...prefix, BUN, join(ROOT, script), ...args], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "inherit",
    env: { ...process.env, ...env },
  });
  const lines: string[] = [];
  const waiters: { pred: (l: string) => boolean; resolve: (l: string) => void }[] = [];
  void eachLine(proc.stdout, (line) => {
    lines.push(line);
    for (const w of [...waiters]) if (w.pred(line)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(line);
    }
  });
  return {
    proc,
    lines,
    waitFor(pred: string | ((l: string) => boolean), timeoutMs = 10000): Promise<string> {
      const p = typeof pred === "string" ? (l: string) => l.includes(pred) : pred;
      const found = lines.find(p);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const w = { pred: p, resolve };
        waiters.push(w);
        setTimeout(() => {
          const i = waiters.indexOf(w);
          if (i >= 0) {
            waiters.splice(i, 1);
            reject(new Error(`timed out waiting for output of ${script}; got:\n${lines.join("\n")}`));
          }
        }, timeoutMs);
      });
    },
    kill(signal: NodeJS.Signals | number = "SIGKILL") {
      proc.kill(signal);
      return proc.exited;
    },
  };
}

/** Polls until fn() is truthy or the time is up. */
export async function eventually<T>(fn: () => T | Promise<T>, timeoutMs = 2000, stepMs = 20): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`);
    await Bun.sleep(stepMs);
  }
}

/**
 * Asserts that something does NOT happen for `ms`: cond() is checked every `stepMs` and
 * must hold each time (e.g. "no push arrives after Cancel", "the lock is still held").
 * Throws, naming `what`, the first time it does not. The only fixed wait the tests
 * make, bounded and named for what it shows.
 */
export async function staysTrue(cond: () => unknown | Promise<unknown>, ms: number, what: string, stepMs = 10): Promise<void> {
  const end = performance.now() + ms;
  for (;;) {
    if (!(await cond())) throw new Error(`no longer true after ${Math.round(ms - (end - performance.now()))} ms: ${what}`);
    const left = end - performance.now();
    if (left <= 0) return;
    await Bun.sleep(Math.min(stepMs, left));
  }
}

/**
 * Lets `ms` pass in which `what` must not happen, where the only check is one the
 * caller makes afterwards (a call with effects, not a condition to poll): e.g. a
 * refused renewal's time running out without ending a lock. Bounded and named, like
 * staysTrue; prefer staysTrue where the condition can be polled.
 */
export async function quietFor(ms: number, what: string): Promise<void> {
  if (!what) throw new Error("quietFor: say what must not happen");
  await Bun.sleep(ms);
}

/** The inodes a process watches with inotify (every inotify fd of it, from /proc/PID/fdinfo). */
export function inotifyWatches(pid = process.pid): Set<number> {
  const out = new Set<number>();
  for (const fd of readdirSync(`/proc/${pid}/fdinfo`)) {
    let info: string;
    try {
      info = readFileSync(`/proc/${pid}/fdinfo/${fd}`, "utf8");
    } catch {
      continue; // closed meanwhile
    }
    for (const m of info.matchAll(/^inotify wd:\S+ ino:([0-9a-f]+)/gm)) out.add(parseInt(m[1]!, 16));
  }
  return out;
}

export function binaryBuilt(): boolean {
  return existsSync(BINARY);
}

/** Lets every uid reach a private bus (its directory and socket): the access tests call as other users. */
export function openBusToAll(address: string): void {
  const socket = address.match(/path=([^,]+)/)![1]!;
  chmodSync(dirname(socket), 0o755);
  chmodSync(socket, 0o777);
}

/**
 * The gid of one of the tests' groups (test/layer/accounts.ts): in the run's own group
 * file, which services find through DEVSERVICES_GROUP_FILE; the host's is not touched.
 */
export function groupGid(name: GroupName | TestGroupName): number {
  const gid = testAccounts().gids[name];
  if (gid === undefined) throw new Error(`${name} is not one of the tests' groups (test/layer/accounts.ts)`);
  return gid;
}

/** Services run from source (`serve ARGS`) on a private bus every uid may reach, with a client of the test's own. */
export interface Served {
  bus: PrivateBus;
  service: Subprocess;
  control: BusClient;
  /** Ends the service (SIGKILL), the client and the bus. */
  stop(): Promise<void>;
}

/**
 * Starts `serve ARGS --bus <its own>` from source in `cwd` and waits (up to `timeoutMs`)
 * until each of `names` is owned; a service that exits first fails the start at once.
 * A start that fails leaves nothing running.
 */
export async function serveFromSource(args: string[], names: string[], cwd: string, timeoutMs = 20000): Promise<Served> {
  return startOrUndo(async (onFail) => {
    const bus = await startPrivateBus();
    onFail(() => bus.stop());
    openBusToAll(bus.address);
    const service = spawn([BUN, join(ROOT, "src/main.ts"), "serve", ...args, "--bus", bus.address], {
      cwd,
      stdin: "ignore",
      stdout: "ignore",
      stderr: "inherit",
      env: { ...process.env }, // with what the preload set (DEVSERVICES_GROUP_FILE): Bun passes the start-up environment otherwise
    });
    onFail(() => ended(service));
    const control = await BusClient.connect(bus.address);
    onFail(() => control.close());
    await eventually(async () => {
      if (service.exitCode !== null || service.signalCode !== null) throw new Error(`serve ${args.join(" ")} exited (${service.exitCode ?? service.signalCode}) before its names were owned`);
      return (await Promise.all(names.map((n) => control.hasOwner(n)))).every(Boolean);
    }, timeoutMs, 50);
    return {
      bus,
      service,
      control,
      async stop() {
        control.close();
        await ended(service);
        await bus.stop();
      },
    };
  });
}

/**
 * Runs a starter that tells, as it goes, how to undo each thing it started (a process,
 * a bus, a directory): when it fails before returning, those are undone, newest first,
 * and its error is thrown on. Test set-ups start through it, so a failed beforeAll
 * leaves no service running.
 */
export async function startOrUndo<T>(start: (onFail: (undo: () => unknown) => void) => Promise<T>): Promise<T> {
  const undos: (() => unknown)[] = [];
  try {
    return await start((undo) => void undos.push(undo));
  } catch (e) {
    for (const undo of undos.reverse()) {
      try {
        await undo();
      } catch {
        /* the rest is undone all the same */
      }
    }
    throw e;
  }
}

/** Ends a process (SIGKILL unless told) and waits until it has exited. */
export async function ended(proc: Subprocess, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
  if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
  await proc.exited;
}

/**
 * The shipped binary in `dir` (made enterable by every uid), hard-linked or else
 * copied, for callers run as other users: the checkout itself may sit in a
 * directory only root may enter. Returns its path.
 */
export function binaryForAnyUser(dir: string): string {
  chmodSync(dir, 0o755);
  const app = join(dir, "devservices");
  try {
    linkSync(BINARY, app);
  } catch {
    copyFileSync(BINARY, app);
  }
  return app;
}

/**
 * One call from a separate process of another user: the shipped binary's `call`
 * (`app`: see binaryForAnyUser) run through setpriv as `uid` with `groups` (none:
 * --clear-groups). Resolves with the first response; `extra` are call options.
 */
export async function callAsUser(
  who: { app: string; bus: string; cwd: string; uid: number; groups?: number[] },
  uri: string,
  payload: unknown,
  extra: string[] = [],
): Promise<any> {
  const groups = who.groups?.length ? `--groups=${who.groups.join(",")}` : "--clear-groups";
  const p = spawn(["setpriv", `--reuid=${who.uid}`, `--regid=${who.uid}`, groups, who.app, "call", "--bus", who.bus, ...extra, uri, JSON.stringify(payload)], {
    cwd: who.cwd,
    stdout: "pipe",
    stderr: "pipe",
    env: { HOME: who.cwd, PATH: "/usr/bin:/bin" },
  });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (!out.trim()) throw new Error(`call as ${who.uid} failed (${code}): ${err}`);
  return JSON.parse(out.trim().split("\n")[0]!);
}

/** A process's direct children (those of every thread), e.g. the handlers a service launched and has not reaped. */
export function childrenOf(pid: number): number[] {
  const pids: number[] = [];
  if (!existsSync(`/proc/${pid}/task`)) throw new Error(`process ${pid} is gone`);
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      for (const c of readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim().split(/\s+/)) if (c) pids.push(Number(c));
    } catch {
      /* the thread ended */
    }
  }
  return pids;
}

/**
 * A process of uid (no groups) that makes `name` in turn a directory of its own and a
 * symlink to `target`, `holdMs` each (test/fixtures/swapper.ts), until killed: a
 * client racing a service's use of a path.
 */
export function swapAs(uid: number, name: string, target: string, holdMs: number): Subprocess {
  mkdirSync(`${name}.dir`);
  chownSync(`${name}.dir`, uid, uid);
  symlinkSync(target, `${name}.link`);
  return spawn(["setpriv", `--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", BUN, join(ROOT, "test/fixtures/swapper.ts"), name, `${name}.dir`, `${name}.link`, String(holdMs)], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "inherit",
    env: { ...process.env, HOME: "/tmp" },
  });
}
