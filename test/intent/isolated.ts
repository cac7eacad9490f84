// The intent service in its own process on a private bus (exec launcher), with
// callers run as other uids (setpriv): the setup of the tests about what a hostile
// caller can make the service's handler processes do.
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { eventually, openBusToAll, BUN, ROOT, childrenOf, spawnScript, ended } from "../helpers/harness";
import { installApp, tempDir } from "./apps";

export const INTENT = "com.vendor.service.intent";
export const HOSTILE = 65534;
// A second unprivileged uid the bus daemon knows (it refuses uids without a passwd entry): daemon.
export const OTHER = 1;
export const skip = process.getuid?.() !== 0 ? "needs root (setpriv)" : null;

/** `hold` runs until killed (the process is sleep itself); `quick` exits at once; `fork` and `threads` (below) start a child, threads. */
export const HOLD = { action: "hold" };
export const QUICK = { action: "quick" };

export interface Isolated {
  bus: PrivateBus;
  server: Subprocess;
  client: BusClient;
  /** The service's direct children (the handlers it launched and has not reaped). */
  children(): number[];
  /** Runs test/fixtures/<fixture> as uid with args; resolves with its output once a line matches until (20 s at most). */
  as(uid: number, fixture: string, args: string[], until: RegExp): Promise<{ proc: Subprocess; out: string }>;
  /** Kills the callers started with as(). */
  killCallers(): Promise<void>;
  stop(): Promise<void>;
}

export async function startIsolated(name: string, config: Record<string, unknown>): Promise<Isolated> {
  const bus = await startPrivateBus();
  openBusToAll(bus.address);
  const dir = mkdtempSync(join(tmpdir(), `devservices-${name}-`));
  chmodSync(dir, 0o755);
  const apps = tempDir();
  installApp(apps, { id: "com.example.holder", main: "holder", intentFilters: [{ actions: ["hold"] }] }, "#!/bin/sh\nexec sleep 600\n");
  installApp(apps, { id: "com.example.quick", main: "quick", intentFilters: [{ actions: ["quick"] }] }, "#!/bin/sh\nexit 0\n");
  // `fork` starts a process of its own and then waits: the handler with one child.
  installApp(apps, { id: "com.example.forker", main: "forker", intentFilters: [{ actions: ["fork"] }] }, "#!/bin/sh\nsleep 600 </dev/null >/dev/null 2>&1 &\nexec sleep 601\n");
  // `threads` is a Bun program (threads of its own from its first milliseconds) that waits.
  installApp(apps, { id: "com.example.threads", main: "threads", intentFilters: [{ actions: ["threads"] }] }, `#!/bin/sh\nexec ${JSON.stringify(BUN)} -e "setInterval(() => {}, 1 << 30)"\n`);
  const board = join(dir, "board.json");
  writeFileSync(
    board,
    JSON.stringify({ name, backend: "virtual", services: ["intent"], serviceConfig: { intent: { applicationDirs: [apps], launcher: "exec", ...config } } }),
  );
  const server = spawn([BUN, join(ROOT, "src/main.ts"), "serve", "--bus", bus.address, "--board", board, "--state-dir", join(dir, "state"), "--log-level", "error", "intent"], { env: { ...process.env },
    stdout: "ignore",
    stderr: "inherit",
  });
  let client: BusClient | undefined;
  try {
    client = await BusClient.connect(bus.address);
    await eventually(async () => ((await client!.call(INTENT, "query", {}).catch(() => ({}))) as { handlers?: unknown[] }).handlers?.length === 4, 15000, 50);
  } catch (e) {
    // A start that fails leaves nothing running.
    client?.close();
    await ended(server);
    await bus.stop();
    throw e;
  }
  const callers: Subprocess[] = [];

  const children = () => childrenOf(server.pid);

  const as: Isolated["as"] = async (uid, fixture, args, until) => {
    const caller = spawnScript(join("test/fixtures", fixture), args, { DEVSERVICES_BUS: bus.address, HOME: "/tmp", BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0" }, [
      "setpriv", `--reuid=${uid}`, `--regid=${uid}`, "--clear-groups",
    ]);
    callers.push(caller.proc);
    await caller.waitFor((l) => until.test(l), 20000);
    return { proc: caller.proc, out: caller.lines.join("\n") };
  };

  const killCallers = async () => {
    for (const c of callers.splice(0)) {
      c.kill("SIGKILL");
      await c.exited;
    }
  };

  return {
    bus,
    server,
    client,
    children,
    as,
    killCallers,
    async stop() {
      await killCallers();
      client.close();
      server.kill("SIGKILL");
      await server.exited;
      await bus.stop();
      rmSync(dir, { recursive: true, force: true });
      rmSync(apps, { recursive: true, force: true });
    },
  };
}

/** Field 19 of /proc/PID/stat: the process's (its main thread's) nice value. */
export function niceOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // pid (comm) state ppid ...: comm may hold spaces and parentheses; field 3 (state) follows the last ')'.
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19 - 3]);
}

/** The `ANSWER <json>` lines a caller printed. */
export const answersIn = (out: string) => out.split("\n").filter((l) => l.startsWith("ANSWER ")).map((l) => JSON.parse(l.slice("ANSWER ".length)));

/** What fn returns once it returns something (eventually, at most ms). */
export const found = async <T>(fn: () => T | null | undefined, ms = 5000): Promise<T> => (await eventually(fn, ms)) as T;
