// devservices: one binary that serves the device services and calls them.
// The CLI only: parsing, then the runtime (serve/demo), the client (call) or the
// schemas (describe).
import { z } from "zod";
import { tmpdir } from "node:os";
import { parseArgs } from "node:util";
import { join } from "node:path";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { resolveBusAddress } from "./bus/connection";
import { BusClient } from "./bus/client";
import { parseUri, memberName } from "./bus/wire";
import { startPrivateBus } from "./bus/daemon";
import { loadBoard } from "./core/board";
import { configureLogging } from "./core/log";
import { SERVICES, findService } from "./services";
import { schemaOf, type MethodSpec } from "./core/service";
import { startRuntime, describeFailure } from "./runtime";
import { SystemdNotifier } from "./ffi/sdnotify";
import pkg from "../package.json" with { type: "json" };
import demoViewer from "../recipes/apps/com.vendor.demo.viewer/viewer" with { type: "text" };
import demoViewerInfo from "../recipes/apps/com.vendor.demo.viewer/appinfo.json" with { type: "json" };

const HELP = `devservices ${pkg.version}: the device services of this platform, and their command line.

Usage:
  devservices serve [--bus ADDRESS|system|session] [--board NAME|PATH] [--state-dir DIR]
                    [--log-level LEVEL] [SERVICE ...]
      Hosts the named services (short name such as testautomation, or bus name such as
      com.vendor.service.testautomation), or all services of the board recipe, in one
      process. Default bus: $DEVSERVICES_BUS, else the system bus. Default board:
      $DEVSERVICES_BOARD, else virtual. Default state directory: /var/lib/devservices.
      Logs are JSON lines on stdout (pino); --log-level trace|debug|info|warn|error.
      Under systemd (Type=notify) it reports READY=1, WATCHDOG=1 and STOPPING=1 on
      $NOTIFY_SOCKET, and prefixes each log line with its priority (<6>{...}) when
      stdout is the journal ($JOURNAL_STREAM).

  devservices call [--bus ADDRESS] [-n COUNT] [-i] [-f] [-w MS] URI [PAYLOAD]
      Calls a method, like luna-send. URI: luna://com.vendor.service.NAME/method/path or
      com.vendor.service.NAME/method/path. PAYLOAD is a JSON object (default {}).
      Each response is printed as one JSON line on stdout; diagnostics go to stderr.
      With "subscribe":true in PAYLOAD the call stays open:
        -n COUNT  exit after COUNT messages (the first response counts)
        -i        print messages until interrupted (Ctrl-C cancels the subscription)
      -f pretty-prints; -w MS waits at most MS milliseconds (default 25000 for the
      first response; with -n, for all of them). A file descriptor attached to a reply
      is reported on stderr. Exit status: 0 when the call was answered, 1 when it was
      not (no such service, timeout), 2 for a usage error.

  devservices describe [SERVICE] [--json]
      Lists the services, or one service's methods with their request and response
      JSON Schemas (the same schemas validate every call).

  devservices demo [--board NAME|PATH] [--state-dir DIR] [--log-level LEVEL]
      Starts a private dbus-daemon and all services of the board (default: virtual),
      prints the bus address and example calls, and runs until interrupted.

  devservices --version | --help | help COMMAND
`;

type Flags = Record<string, string | boolean | undefined>;
type OptionSpec = Record<string, { type: "string" | "boolean"; short?: string }>;

/** node:util parseArgs, strict: an unknown option or a missing value is a usage error (exit 2). */
function cli(argv: string[], options: OptionSpec): { flags: Flags; rest: string[] } {
  try {
    const { values, positionals } = parseArgs({ args: argv, options, strict: true, allowPositionals: true });
    return { flags: values as Flags, rest: positionals };
  } catch (e) {
    usage(String((e as Error).message).replace(/^TypeError \[[A-Z_]+\]: /, "").replace(/\. To specify a positional.*$/s, ""));
  }
}

function usage(msg: string): never {
  process.stderr.write(`devservices: ${msg}\nTry 'devservices --help'.\n`);
  process.exit(2);
}

const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"];

function logLevel(flags: Flags, fallback: string): string {
  const level = (flags["log-level"] as string | undefined) ?? fallback;
  if (!LOG_LEVELS.includes(level)) usage(`unknown log level '${level}' (one of ${LOG_LEVELS.join(", ")})`);
  return level;
}

/** A whole number of at least `min` from an option, or a usage error naming the option. */
function wholeNumber(flags: Flags, name: string, label: string, min: number): number | undefined {
  const v = flags[name];
  if (v === undefined) return undefined;
  if (typeof v !== "string" || !/^\d+$/.test(v) || Number(v) < min) usage(`${label} takes a whole number${min > 0 ? ` of at least ${min}` : ""}, got '${v}'`);
  return Number(v);
}

/** The service module for a name, or a usage error that suggests the nearest names. */
function serviceOrUsage(name: string) {
  const m = findService(name);
  if (m) return m;
  const short = name.replace(/^com\.vendor\.service\./, "");
  const near = Object.keys(SERVICES).filter((n) => n.startsWith(short) || short.startsWith(n) || editDistance(n, short) <= 2);
  usage(`unknown service ${name}${near.length ? ` (did you mean ${near.join(" or ")}?)` : ""}; 'devservices describe' lists them`);
}

function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
  return d[a.length]![b.length]!;
}

async function serve(argv: string[]) {
  const { flags, rest } = cli(argv, {
    bus: { type: "string" },
    board: { type: "string" },
    "state-dir": { type: "string" },
    "log-level": { type: "string" },
    "check-responses": { type: "boolean" },
  });
  for (const name of rest) serviceOrUsage(name);
  const log = configureLogging(logLevel(flags, "info"));
  const board = loadBoard(flags.board as string | undefined);
  const busAddress = resolveBusAddress(flags.bus as string | undefined);
  const rt = await startRuntime({
    busAddress,
    board,
    stateDir: (flags["state-dir"] as string) ?? "/var/lib/devservices",
    services: rest,
    log,
    checkResponses: flags["check-responses"] === true || undefined,
  });
  log.info({ bus: busAddress, board: board.name, services: rt.services.map((s) => s.module.spec.busName), failed: rt.failed.map((f) => f.name) }, "devservices ready");
  // Under systemd (Type=notify): ready once every name that can be is owned (a
  // service that could not start is named in STATUS), watchdog pings, stopping.
  const systemd = new SystemdNotifier((what, e) => log.warn({ err: e }, `cannot tell systemd ${what}`));
  const failed = rt.failed.map((f) => `${f.name} (${describeFailure(f)})`).join("; ");
  systemd.ready(`serving ${rt.services.map((s) => s.module.spec.name).join(" ")} on board ${board.name}${failed ? `; failed: ${failed}` : ""}`);
  rt.server.onDisconnect.push(() => {
    log.fatal("lost the bus; exiting");
    process.exit(1);
  });
  await untilSignal();
  log.info("stopping");
  systemd.stopping();
  // Stopping is bounded: a service whose stop hangs cannot keep the process past
  // STOP_DEADLINE_MS (systemd's own stop timeout is longer).
  setTimeout(() => {
    log.error(`services did not stop within ${STOP_DEADLINE_MS} ms; exiting`);
    process.exit(1);
  }, STOP_DEADLINE_MS).unref();
  await rt.stop();
  process.exit(0);
}

/** Longest a signalled `serve` takes to exit. */
const STOP_DEADLINE_MS = 2500;

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
}

async function call(argv: string[]) {
  const { flags, rest } = cli(argv, {
    bus: { type: "string" },
    count: { type: "string", short: "n" },
    wait: { type: "string", short: "w" },
    interactive: { type: "boolean", short: "i" },
    format: { type: "boolean", short: "f" },
  });
  if (rest.length < 1 || rest.length > 2) usage("call takes URI [PAYLOAD]");
  let target: { busName: string; method: string };
  try {
    target = parseUri(rest[0]!);
  } catch (e) {
    usage((e as Error).message);
  }
  const { busName, method } = target;
  const text = rest[1] ?? "{}";
  let payload: Record<string, unknown> | undefined;
  try {
    const p = JSON.parse(text);
    if (p && typeof p === "object" && !Array.isArray(p)) payload = p;
  } catch {
    /* sent as it is: the service answers malformed JSON with its own error */
  }
  const count = wholeNumber(flags, "count", "-n", 1);
  const waitMs = wholeNumber(flags, "wait", "-w", 1) ?? 25000;
  const print = (m: unknown) => process.stdout.write(JSON.stringify(m, null, flags.format ? 2 : undefined) + "\n");
  let client: BusClient;
  try {
    client = await BusClient.connect(resolveBusAddress(flags.bus as string | undefined), { timeoutMs: waitMs });
  } catch (e) {
    process.stderr.write(`devservices: cannot connect to the bus: ${(e as Error).message}\n`);
    process.exit(1);
  }
  try {
    if (payload?.subscribe === true) {
      let seen = 0;
      let timedOut = false;
      let done!: () => void;
      const finished = new Promise<void>((r) => (done = r));
      const onMessage = (m: Record<string, unknown>) => {
        print(m);
        if (count !== undefined && ++seen >= count) done();
      };
      const timer = !flags.interactive
        ? setTimeout(() => {
            timedOut = true;
            done();
          }, waitMs)
        : undefined;
      const sub = await client.subscribe(busName, method, payload, onMessage, { timeoutMs: waitMs });
      print(sub.first);
      seen++;
      const open = sub.first.subscribed === true;
      if (!open || (count !== undefined && seen >= count) || (count === undefined && !flags.interactive)) done();
      process.once("SIGINT", () => done());
      process.once("SIGTERM", () => done());
      sub.ended.then(() => done());
      await finished;
      clearTimeout(timer);
      await sub.cancel();
      if (count !== undefined && seen < count) {
        const why = timedOut ? `within ${waitMs} ms` : open ? "before the subscription ended" : "(the call did not subscribe)";
        process.stderr.write(`devservices: ${busName}/${method}: ${seen} of ${count} messages ${why}\n`);
        client.close();
        process.exit(1);
      }
    } else {
      const { response, fd } = await client.callWithFd(busName, method, payload ?? text, { timeoutMs: waitMs });
      print(response);
      if (fd !== undefined) process.stderr.write(`devservices: the reply carried file descriptor ${fd}\n`);
    }
  } catch (e) {
    process.stderr.write(`devservices: ${busName}/${method}: ${(e as Error).message}\n`);
    client.close();
    process.exit(1);
  }
  client.close();
  process.exit(0);
}

function describe(argv: string[]) {
  const { flags, rest } = cli(argv, { json: { type: "boolean" } });
  if (rest.length > 1) usage("describe takes at most one SERVICE");
  if (rest.length === 0) {
    const list = Object.values(SERVICES).map((m) => ({ name: m.spec.name, busName: m.spec.busName, description: m.spec.description }));
    if (flags.json) return console.log(JSON.stringify(list, null, 2));
    for (const s of list) console.log(`${s.busName}\n  ${s.description}\n`);
    return;
  }
  const m = serviceOrUsage(rest[0]!);
  const methods = Object.entries(m.spec.api as Record<string, MethodSpec>).map(([name, spec]) => ({
    method: name,
    member: memberName(name),
    summary: spec.summary,
    subscribable: !!spec.subscribable,
    passesFd: !!spec.passesFd,
    request: z.toJSONSchema(schemaOf(spec, "request"), { io: "input", unrepresentable: "any" }),
    response: z.toJSONSchema(schemaOf(spec, "response"), { unrepresentable: "any" }),
  }));
  if (flags.json) return console.log(JSON.stringify({ busName: m.spec.busName, description: m.spec.description, methods }, null, 2));
  console.log(`${m.spec.busName}\n  ${m.spec.description}\n`);
  for (const x of methods) {
    console.log(`${m.spec.busName}/${x.method}${x.subscribable ? "  (subscribable)" : ""}${x.passesFd ? "  (reply carries an fd)" : ""}`);
    console.log(`  ${x.summary}`);
    console.log(`  request:  ${JSON.stringify(x.request)}`);
    console.log(`  response: ${JSON.stringify(x.response)}\n`);
  }
}

async function demo(argv: string[]) {
  const { flags, rest } = cli(argv, { board: { type: "string" }, "state-dir": { type: "string" }, "log-level": { type: "string" } });
  if (rest.length) usage("demo takes no arguments besides its options");
  const log = configureLogging(logLevel(flags, "warn"));
  const board = loadBoard(flags.board as string | undefined);
  const bus = await startPrivateBus();
  const ownStateDir = flags["state-dir"] === undefined;
  const stateDir = (flags["state-dir"] as string) ?? mkdtempSync(join(tmpdir(), "devservices-demo-"));
  if (board.services.includes("intent")) installDemoApplication(stateDir);
  let rt;
  try {
    rt = await startRuntime({ busAddress: bus.address, board, stateDir, log });
  } catch (e) {
    await bus.stop();
    throw e;
  }
  // The compiled binary runs its own embedded script (/$bunfs/...); from source, bun runs src/main.ts.
  const self = process.argv[1]?.startsWith("/$bunfs") ? process.execPath : `${process.execPath} ${process.argv[1]}`;
  const hosted = new Set(rt.services.map((s) => s.module.spec.name));
  const examples: Record<string, string[]> = {
    testautomation: [
      `call luna://com.vendor.service.testautomation/ping '{"Message":"hi"}'`,
      `call -i com.vendor.service.testautomation/subscribeToEvents '{"subscribe":true}'`,
      `call com.vendor.service.testautomation/handleRequest '{"command":"getRunningAppsAndStages"}'`,
    ],
    intent: [
      `call com.vendor.service.intent/query '{}'`,
      `call -n 2 com.vendor.service.intent/start '{"intent":{"action":"view","uri":"https://example.com"},"subscribe":true}'`,
    ],
    power2: [`call com.vendor.service.power2/getState '{"subscribe":false}'`, `call -i com.vendor.service.power2/getState '{"subscribe":true}'`],
    filecache: [`call com.vendor.service.filecache/GetCacheStatus '{}'`, `call com.vendor.service.filecache/GetCacheTypes '{}'`],
    nettools: [
      `call -i com.vendor.service.nettools/gethostname '{"subscribe":true}'`,
      `call com.vendor.service.nettools/ping '{"hostname":"127.0.0.1"}'`,
      `call com.vendor.service.nettools/ping6 '{"hostname":"::1","ifName":"lo"}'`,
    ],
    camera: [
      `call com.vendor.service.camera2/getCameraList '{}'`,
      `call com.vendor.service.camera2/getInfo '{"id":"camera1"}'`,
    ],
    peripheralmanager: [
      `call -i com.vendor.service.peripheralmanager/gpio/list '{"subscribe":true}'`,
      `call com.vendor.service.peripheralmanager/i2c/list '{"verbose":true}'`,
      `call com.vendor.service.peripheralmanager/uart/list '{}'`,
    ],
    videooutput: [
      `call -i com.vendor.service.videooutput/getStatus '{"subscribe":true}'`,
      `call com.vendor.service.videooutput/connect '{"source":"VDEC","sink":"MAIN"}'`,
      `call com.vendor.service.videooutput/display/setDisplayWindow '{"sink":"MAIN","fullScreen":false,"displayOutput":{"x":100,"y":100,"width":640,"height":360}}'`,
    ],
  };
  const lines = [
    `devservices demo: board '${board.name}', ${rt.services.length} services on a private bus.`,
    ``,
    `  export DEVSERVICES_BUS='${bus.address}'`,
    `  state directory: ${stateDir}`,
    ``,
    `Services: ${rt.services.map((s) => s.module.spec.busName).join(", ")}`,
    ``,
    `Try, in another shell (after the export above):`,
    ...Object.entries(examples).filter(([n]) => hosted.has(n)).flatMap(([, l]) => l.map((x) => `  ${self} ${x}`)),
    `  ${self} describe SERVICE`,
    `  busctl --address='${bus.address}' tree`,
    ``,
    `Ctrl-C stops the demo.`,
  ];
  console.log(lines.join("\n"));
  await untilSignal();
  await rt.stop();
  await bus.stop();
  // A state directory the demo made for itself goes with it.
  if (ownStateDir) rmSync(stateDir, { recursive: true, force: true });
  process.exit(0);
}

/**
 * The demo's handler application (recipes/apps/com.vendor.demo.viewer, carried in the
 * binary): it lands in the state directory's applications/, which the intent service
 * watches, and calls back through this same binary ($DEVSERVICES).
 */
function installDemoApplication(stateDir: string) {
  const dir = join(stateDir, "applications", "com.vendor.demo.viewer");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "viewer"), demoViewer, { mode: 0o755 });
  writeFileSync(join(dir, "appinfo.json"), JSON.stringify(demoViewerInfo, null, 2));
  process.env.DEVSERVICES = process.argv[1]?.startsWith("/$bunfs") ? process.execPath : `${process.execPath} ${process.argv[1]}`;
}

async function main() {
  const [cmd, ...argv] = process.argv.slice(2);
  switch (cmd) {
    case "serve":
      return serve(argv);
    case "call":
      return call(argv);
    case "describe":
      return describe(argv);
    case "demo":
      return demo(argv);
    case "--version":
    case "version":
      return console.log(pkg.version);
    case undefined:
    case "-h":
    case "--help":
    case "help":
      return process.stdout.write(HELP);
    default:
      usage(`unknown command ${cmd}`);
  }
}

main().catch((e) => {
  process.stderr.write(`devservices: ${(e as Error).message}\n`);
  process.exit(1);
});
