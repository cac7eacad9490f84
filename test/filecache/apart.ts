// The file cache in a process of its own (`bun src/main.ts serve`, root) on a
// private bus every uid may reach, and callers of other uids: the shipped binary's
// `call` run through setpriv, with or without groups.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import type { Json } from "../../src/core/errors";
import { BUN, ROOT, binaryBuilt, binaryForAnyUser, callAsUser, eventually, openBusToAll, ended } from "../helpers/harness";
import { FC } from "./env";

/** Why these tests cannot run here, or null. */
export function cannotRun(): string | null {
  if (process.getuid?.() !== 0) return "needs root (setpriv)";
  if (!binaryBuilt()) return "dist/devservices is not built (bun run build)";
  return null;
}

export interface Apart {
  bus: PrivateBus;
  /** Holds the board file, the binary for other uids, and the state directory. */
  dir: string;
  stateDir: string;
  /** A root client in this process. */
  root: BusClient;
  /** Calls as root (this process). */
  call(method: string, payload?: Json): Promise<Json>;
  /** Calls as uid with exactly these supplementary groups (a separate process). */
  callAs(uid: number, groups: number[], method: string, payload?: Json): Promise<Json>;
  /** Stops the service (SIGTERM) and starts it again on the same state. */
  restart(): Promise<void>;
  /** Stops the service only. */
  stopService(): Promise<void>;
  startService(): Promise<void>;
  stop(): Promise<void>;
}

export async function apart(config: Json = {}): Promise<Apart> {
  const bus = await startPrivateBus();
  openBusToAll(bus.address);
  const dir = mkdtempSync(join(tmpdir(), "fc-apart-"));
  const stateDir = join(dir, "state");
  const board = join(dir, "board.json");
  writeFileSync(board, JSON.stringify({ name: "filecache-apart", backend: "virtual", services: ["filecache"], serviceConfig: { filecache: { configFile: null, ...config } } }));
  const app = binaryForAnyUser(dir);
  let service: Subprocess | undefined;
  const root = await BusClient.connect(bus.address);

  const startService = async () => {
    service = spawn([BUN, join(ROOT, "src/main.ts"), "serve", "--bus", bus.address, "--board", board, "--state-dir", stateDir, "--log-level", "warn", "filecache"], { env: { ...process.env },
      cwd: ROOT,
      stdout: "inherit",
      stderr: "inherit",
    });
    await eventually(async () => {
      if (service!.exitCode !== null) throw new Error(`the file cache exited (${service!.exitCode})`);
      return root.hasOwner(FC);
    }, 20000, 50);
  };
  const stopService = async () => {
    if (!service) return;
    service.kill("SIGTERM");
    await service.exited;
    service = undefined;
    await eventually(async () => !(await root.hasOwner(FC)), 5000);
  };
  try {
    await startService();
  } catch (e) {
    // A start that fails leaves nothing running.
    if (service) await ended(service);
    root.close();
    await bus.stop();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }

  return {
    bus,
    dir,
    stateDir,
    root,
    call: (method, payload = {}) => root.call(FC, method, payload),
    callAs: (uid, groups, method, payload = {}) => callAsUser({ app, bus: bus.address, cwd: dir, uid, groups }, `${FC}/${method}`, payload),
    async restart() {
      await stopService();
      await startService();
    },
    stopService,
    startService,
    async stop() {
      await stopService();
      root.close();
      await bus.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
