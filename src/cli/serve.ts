// devservices serve: hosts services on a bus, under systemd or by hand.
import { resolveBusAddress } from "../bus/connection";
import { join } from "node:path";
import { loadBoard } from "../core/board";
import { recordParses, saveParses } from "../core/config";
import { configureLogging, exitAfterLog } from "../core/log";
import { startRuntime, describeFailure } from "../runtime";
import { SystemdNotifier } from "../ffi/sdnotify";
import { StoreTooNew } from "../core/store";
import { collectWhenQuiet } from "../core/engine";
import { fixNativeMmapThreshold } from "../ffi/libc";
import { cli, logLevel, serviceOrUsage, untilSignal } from "./args";

export const USAGE = `devservices serve [--bus ADDRESS|system|session] [--board NAME|PATH] [--state-dir DIR]
                    [--log-level LEVEL] [SERVICE ...]
      Hosts the named services (short name such as testautomation, or bus name such as
      com.vendor.service.testautomation), or all services of the board recipe, in one
      process. Default bus: $DEVSERVICES_BUS, else the system bus. Default board:
      $DEVSERVICES_BOARD, else virtual. Default state directory: /var/lib/devservices.
      Logs are JSON lines on stdout (pino); --log-level trace|debug|info|warn|error.
      Under systemd (Type=notify) it reports READY=1, WATCHDOG=1 and STOPPING=1 on
      $NOTIFY_SOCKET, and prefixes each log line with its priority (<6>{...}) when
      stdout is the journal ($JOURNAL_STREAM).
`;

export async function serve(argv: string[]) {
  const { flags, rest } = cli(argv, {
    bus: { type: "string" },
    board: { type: "string" },
    "state-dir": { type: "string" },
    "log-level": { type: "string" },
    "check-responses": { type: "boolean" },
  });
  for (const name of rest) serviceOrUsage(name);
  // SIGTERM or SIGINT from here on is a request to stop: one that arrives while the
  // services start (systemd stopping a unit that is still activating) stops them once
  // they have started, and the exit is clean.
  const signalled = untilSignal();
  const log = configureLogging(logLevel(flags, "info"));
  // Whatever escapes is one log line with its priority (fatal), never the runtime's
  // own report with source lines.
  const fatal = (what: string) => (e: unknown) => {
    log.fatal({ err: e }, what);
    exitAfterLog(1);
  };
  process.on("uncaughtException", fatal("uncaught exception; exiting"));
  process.on("unhandledRejection", fatal("unhandled rejection; exiting"));
  let board, busAddress, rt;
  // Large native blocks go back when freed, whatever ran before (ffi/libc.ts).
  if (!fixNativeMmapThreshold()) log.warn("cannot fix the native heap's mmap threshold; large blocks freed may stay resident");
  const stateDir = (flags["state-dir"] as string) ?? "/var/lib/devservices";
  // The parses of the board recipe and the options, kept for the next start (core/config.ts).
  recordParses(join(stateDir, parseRecordFile(rest)), stateDir);
  try {
    board = loadBoard(flags.board as string | undefined);
    busAddress = resolveBusAddress(flags.bus as string | undefined);
    log.info({ bus: busAddress, board: board.name }, "starting");
    rt = await startRuntime({
      busAddress,
      board,
      stateDir,
      services: rest,
      log,
      checkResponses: flags["check-responses"] === true || undefined,
    });
  } catch (e) {
    log.fatal({ err: e }, "cannot start");
    // 78 (EX_CONFIG): every service refused a store newer than this binary (a rollback
    // to an older slot); restarting cannot mend that (RestartPreventExitStatus=78).
    return exitAfterLog(e instanceof StoreTooNew ? EXIT_STORE_TOO_NEW : 1);
  }
  log.info({ bus: busAddress, board: board.name, services: rt.services.map((s) => s.module.spec.busName), failed: rt.failed.map((f) => f.name) }, "devservices ready");
  // Under systemd (Type=notify): ready once every name that can be is owned (a
  // service that could not start is named in STATUS), watchdog pings, stopping.
  const systemd = new SystemdNotifier((what, e) => log.warn({ err: e }, `cannot tell systemd ${what}`));
  const failed = rt.failed.map((f) => `${f.name} (${describeFailure(f)})`).join("; ");
  systemd.ready(`serving ${rt.services.map((s) => s.module.spec.name).join(" ")} on board ${board.name}${failed ? `; failed: ${failed}` : ""}`);
  const unsaved = saveParses();
  if (unsaved) log.warn({ err: unsaved }, "the start's parses were not recorded; the next start parses again");
  // Once quiet, one full collection drops the code the start ran once (core/engine.ts).
  collectWhenQuiet();
  let stopping = false;
  rt.server.onDisconnect.push(() => {
    // Stopping closes the connection itself.
    if (stopping) return;
    log.fatal("lost the bus; exiting");
    exitAfterLog(1);
  });
  await signalled;
  stopping = true;
  log.info("stopping");
  systemd.stopping();
  // Stopping is bounded: a service whose stop hangs cannot keep the process past
  // STOP_DEADLINE_MS (systemd's own stop timeout is longer).
  setTimeout(() => {
    log.error(`services did not stop within ${STOP_DEADLINE_MS} ms; exiting`);
    exitAfterLog(1, 300);
  }, STOP_DEADLINE_MS).unref();
  await rt.stop();
  exitAfterLog(0);
}

/**
 * The state directory's file of the start's parses (core/config.ts, recordParses): one
 * per set of services named, so the processes of the per-service units
 * (devservices@.service), which share the state directory, each keep their own.
 */
export const parseRecordFile = (services: readonly string[]) => (services.length ? `start-parses-${services.join("+")}.json` : "start-parses.json");

/** serve's exit status when every service refused a store newer than this binary. */
export const EXIT_STORE_TOO_NEW = 78;

/** Longest a signalled `serve` takes to exit. */
const STOP_DEADLINE_MS = 2500;
