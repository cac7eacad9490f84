// Starts services on a bus: one connection, one BusServer, each service created
// with its context (board, state directory, logger, configuration).
import { StoreTooNew } from "./core/store";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { BusServer } from "./bus/server";
import { BusClient } from "./bus/client";
import type { Board } from "./core/board";
import type { ServiceInstance, ServiceModule } from "./core/service";
import { logger, type Logger } from "./core/log";
import { findService } from "./services";
import { callerFiles } from "./files";
import { describeRule } from "./core/access";

export interface RuntimeOptions {
  busAddress: string;
  board: Board;
  stateDir: string;
  /** Short or bus names; empty means the board's list. */
  services?: string[];
  log?: Logger;
  checkResponses?: boolean;
}

export interface Runtime {
  server: BusServer;
  client: BusClient;
  services: { module: ServiceModule<any>; instance: ServiceInstance<any> }[];
  /** Services that could not start (each logged once); the rest serve. */
  failed: FailedService[];
  stop(): Promise<void>;
}

export async function startRuntime(opts: RuntimeOptions): Promise<Runtime> {
  const log = opts.log ?? logger();
  const names = opts.services?.length ? opts.services : opts.board.services;
  const modules = names.flatMap((n) => {
    const m = findService(n);
    if (!m) throw new Error(`unknown service: ${n}`);
    // A service with several bus names is hosted as its instances (ServiceModule.instances).
    return m.instances ? m.instances(opts.board) : [m];
  });
  // A state directory that cannot be made is told by each service that needs it.
  try {
    mkdirSync(opts.stateDir, { recursive: true });
  } catch {}
  // Calls to peers (other services, logind) go over a connection of their own, read
  // like the hosting one by Bun's socket; a call whose reply carries fds says so and
  // takes a recvmsg connection opened when first needed (docs/decisions.md, "The bus stack").
  // The two connections are opened side by side: their handshakes overlap.
  const [server, client] = (await allOrUndo<BusServer | BusClient>(
    [
      BusServer.connect(opts.busAddress, { log: log.child({ component: "bus" }), checkResponses: opts.checkResponses, limits: opts.board.limits }),
      BusClient.connect(opts.busAddress, { receiveFds: false }),
    ],
    async (opened) => void (await Promise.allSettled(opened.map(async (c) => c.close()))),
  )) as [BusServer, BusClient];
  const stop = async () => {
    await server.close();
    client.close();
  };
  // The services start side by side: each one's awaits (its bus name, a peer, a
  // database) overlap the others' work; `services` keeps the board's order. One that
  // cannot start (an unusable state directory, its name held elsewhere) fails alone:
  // its name is not owned, one log line names it, the path and the errno, and the
  // others serve. Only when none could start does the runtime fail.
  const files = callerFiles([opts.stateDir]);
  const start = async (module: ServiceModule<any>) => {
    const name = module.spec.name;
    const stateDir = join(opts.stateDir, name);
    mkdirSync(stateDir, { recursive: true });
    const instance = await module.create({
      board: opts.board,
      stateDir,
      log: log.child({ service: name }),
      busAddress: opts.busAddress,
      peers: client,
      leases: server.leases.scope(name),
      topics: server.topics.scope(name),
      config: (opts.board.serviceConfig?.[name] ?? {}) as Record<string, unknown>,
      files,
    });
    // A rule the board recipe or configuration made other than the table's is said, never silent.
    for (const [method, rule] of Object.entries(instance.access ?? {})) {
      const table = describeRule(module.spec.api[method]?.access);
      const now = describeRule(rule);
      if (now !== table) log.warn({ service: name, method, rule: now, default: table }, "access rule widened by the board recipe");
    }
    try {
      await server.host(module.spec, instance);
    } catch (e) {
      await Promise.resolve(instance.stop?.()).catch(() => {});
      server.leases.releasePrefix(`${name}/`);
      throw e;
    }
    return { module, instance };
  };
  const results = await Promise.allSettled(modules.map(start));
  const started: Runtime["services"] = [];
  const failed: FailedService[] = [];
  results.forEach((r, i) => {
    if (r.status === "fulfilled") return started.push(r.value);
    const e = r.reason as NodeJS.ErrnoException;
    const f: FailedService = { name: modules[i]!.spec.name, busName: modules[i]!.spec.busName, error: e, path: e?.path, errno: e?.code };
    failed.push(f);
    log.error({ service: f.name, busName: f.busName, path: f.path, errno: f.errno, err: e }, `${f.name} cannot start: ${describeFailure(f)}; the other services serve`);
  });
  // The executable starts with the JIT reluctant to compile (scripts/compile-flags.ts:
  // start-up code runs once); the first calls keep that policy (core/engine.ts,
  // JIT_SETTLE_CALLS), then the JIT's normal thresholds apply.
  if (!started.length) {
    await stop().catch(() => {});
    // A store newer than this binary (a rollback) is reported only when it is the
    // reason for every failure: serve then exits 78, which the units do not restart.
    throw (failed.find((f) => !(f.error instanceof StoreTooNew)) ?? failed[0]!).error;
  }
  return { server, client, services: started, failed, stop };
}

/** One service that could not start. */
export interface FailedService {
  name: string;
  busName: string;
  error: unknown;
  /** The file or directory it failed on, and the errno's name, when the error says. */
  path?: string;
  errno?: string;
}

/** "EROFS on /var/lib/devservices/filecache/copies", or the error's message. */
export function describeFailure(f: FailedService): string {
  if (f.errno && f.path) return `${f.errno} on ${f.path}`;
  return (f.error as Error)?.message ?? String(f.error);
}

/**
 * Every result, in order, once all have settled; when one failed, `undo` gets the
 * ones that succeeded and the first failure is thrown.
 */
async function allOrUndo<T>(work: Promise<T>[], undo: (succeeded: T[]) => Promise<void>): Promise<T[]> {
  const results = await Promise.allSettled(work);
  const succeeded = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (!failed) return succeeded;
  await undo(succeeded).catch(() => {});
  throw failed.reason;
}
