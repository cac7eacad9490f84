// Launching a handler application with the intent in its launch parameters:
// through the application manager on the bus, or, where there is none, by running
// the descriptor's `main` directly (no shell) with the parameters as one JSON argument.
import { isAbsolute, join } from "node:path";
import type { Subprocess } from "bun";
import type { Json } from "../../../core/errors";
import type { Logger } from "../../../core/log";
import type { Peers } from "../../../core/service";
import type { HandlerEntry } from "../match";
import { threadNice } from "../../../ffi/sched";
import { niceTree } from "./priority";

export interface Launched {
  /** The process started for the intent, when the launcher knows it (sendResult is then accepted from it and its children only). */
  pid?: number;
  /**
   * Resolves when the process the service started is gone: exited, reaped, and its
   * output pipes closed (a descendant that keeps them open keeps it alive). Absent
   * when the process is not the service's own (launched by the application manager).
   */
  ended?: Promise<void>;
}

export interface Launcher {
  /** Resolves when the application was launched; rejects with the reason it was not (LaunchRefused: a reason for the caller). */
  launch(handler: HandlerEntry, params: Json): Promise<Launched>;
  stop(): void;
}

/** A launch refused for a reason the requester should hear (answered as `reason` with "Failed to start intent"). */
export class LaunchRefused extends Error {}

/**
 * MAX_ARG_STRLEN (linux/binfmts.h: 32 pages of 4 KiB): the longest single argument
 * execve(2) takes, its NUL included; a longer one fails with E2BIG.
 */
export const MAX_ARG_STRLEN = 32 * 4096;

/** When a handler's priority is set a second time after its start (ExecLauncher.lowerPriority). */
const RESWEEP_MS = 20;

export type LauncherKind = "auto" | "applicationmanager" | "exec";

/** `<applicationManager>/launch` with `{id, params}` (plus `sessionId` for a session's handler). */
export class AppManagerLauncher implements Launcher {
  constructor(
    private peers: Peers,
    private busName: string,
    private timeoutMs: number,
  ) {}

  async launch(handler: HandlerEntry, params: Json): Promise<Launched> {
    const payload: Json = { id: handler.name, params };
    if (handler.sessionId !== undefined) payload.sessionId = handler.sessionId;
    const r = await this.peers.call(this.busName, "launch", payload, { timeoutMs: this.timeoutMs });
    if (r.returnValue !== true) throw new Error(`${this.busName} refused to launch ${handler.name}: ${String(r.errorText ?? r.errorCode ?? "no reason given")}`);
    // An application manager that reports the process it started (`pid`) lets results be checked against it.
    return Number.isSafeInteger(r.pid) && (r.pid as number) > 1 ? { pid: r.pid as number } : {};
  }

  stop(): void {}
}

/**
 * Runs `main` (relative to the app's directory) as `main '<params JSON>'` with
 * DEVSERVICES_BUS set, so the app can call sendResult. Its output goes to the log.
 * The process runs `nice` steps below the service's own CPU priority (0: at the
 * service's), so handlers started faster than they finish cannot take the CPU the
 * service needs to answer the bus.
 */
export class ExecLauncher implements Launcher {
  private children = new Set<Subprocess>();

  constructor(
    private busAddress: string,
    private log: Logger,
    private nice = 0,
  ) {}

  async launch(handler: HandlerEntry, params: Json): Promise<Launched> {
    if (!handler.main) throw new Error(`${handler.name} has no main in its descriptor`);
    const arg = JSON.stringify(params);
    const bytes = Buffer.byteLength(arg);
    if (bytes >= MAX_ARG_STRLEN) {
      throw new LaunchRefused(`launch parameters of ${bytes} bytes exceed the ${MAX_ARG_STRLEN - 1} bytes a program argument may hold`);
    }
    const main = isAbsolute(handler.main) ? handler.main : join(handler.dir, handler.main);
    const env: Record<string, string> = { ...(process.env as Record<string, string>), DEVSERVICES_BUS: this.busAddress, DEVSERVICES_APP_ID: handler.name };
    if (handler.sessionId !== undefined) env.DEVSERVICES_SESSION = handler.sessionId;
    else delete env.DEVSERVICES_SESSION;
    // Throws at once when main is missing or not executable.
    const child = Bun.spawn([main, arg], { cwd: handler.dir, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    this.children.add(child);
    const log = this.log.child({ app: handler.name, appPid: child.pid });
    this.lowerPriority(child, log);
    log.info({ main }, "application started");
    const out = this.forward(child.stdout, (line) => log.info({ stream: "stdout" }, line));
    const err = this.forward(child.stderr, (line) => log.warn({ stream: "stderr" }, line));
    const exited = child.exited.then((code) => {
      this.children.delete(child);
      log.info({ exitCode: code, signal: child.signalCode ?? undefined }, "application exited");
    });
    return { pid: child.pid, ended: Promise.all([exited, out, err]).then(() => {}) };
  }

  /**
   * Puts the process just started, and the threads and processes it has started
   * since, `nice` steps below this thread (the one that started it, whose priority
   * it inherited), at most 19: in the same turn as the spawn, and once more
   * RESWEEP_MS later for a thread or process whose start was under way during the
   * first sweep (it copied the old value and was not listed yet). Bun.spawn has no
   * way to set it before exec (priority.ts, docs/decisions/intent.md).
   */
  private lowerPriority(child: Subprocess, log: Logger) {
    if (this.nice <= 0) return;
    const nice = Math.min(19, threadNice() + this.nice);
    const sweep = () => {
      try {
        niceTree(child.pid, nice);
      } catch (e) {
        log.warn({ err: (e as Error).message, nice }, "handler priority not lowered");
      }
    };
    sweep();
    // Only while the process is not reaped: until then its pid cannot name another process.
    setTimeout(() => {
      if (child.exitCode === null && child.signalCode === null) sweep();
    }, RESWEEP_MS).unref?.();
  }

  private async forward(stream: ReadableStream<Uint8Array>, emit: (line: string) => void) {
    const decoder = new TextDecoder();
    let buf = "";
    try {
      for await (const chunk of stream) {
        buf += decoder.decode(chunk, { stream: true });
        let i;
        while ((i = buf.indexOf("\n")) >= 0) {
          emit(buf.slice(0, i));
          buf = buf.slice(i + 1);
        }
      }
    } catch {
      /* the pipe closed with the process */
    }
    if (buf) emit(buf);
  }

  /** The apps this service started go with it (as systemd's control-group kill would do). */
  stop(): void {
    for (const c of this.children) c.kill("SIGTERM");
    this.children.clear();
  }
}

/** The application manager when it is on the bus at launch time, else exec. */
export class AutoLauncher implements Launcher {
  constructor(
    private peers: Peers,
    private busName: string,
    private appManager: AppManagerLauncher,
    private exec: ExecLauncher,
  ) {}

  async launch(handler: HandlerEntry, params: Json): Promise<Launched> {
    return (await this.peers.hasOwner(this.busName)) ? this.appManager.launch(handler, params) : this.exec.launch(handler, params);
  }

  stop(): void {
    this.exec.stop();
  }
}
