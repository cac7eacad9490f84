// devservices: one binary that serves the device services and calls them.
// The CLI only: parsing, then the runtime (serve/demo), the client (call) or the
// schemas (describe).
import { z } from "zod";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { resolveBusAddress } from "./bus/connection";
import { BusClient } from "./bus/client";
import { parseUri, memberName } from "./bus/wire";
import { startPrivateBus } from "./bus/daemon";
import { loadBoard } from "./core/board";
import { configureLogging } from "./core/log";
import { SERVICES, findService } from "./services";
import type { MethodSpec } from "./core/service";
import { startRuntime } from "./runtime";
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

type Flags = Record<string, string | boolean>;

function parseArgs(argv: string[], valueFlags: string[], boolFlags: string[]): { flags: Flags; rest: string[] } {
  const flags: Flags = {};
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") {
      rest.push(...argv.slice(i + 1));
      break;
    }
    const [name, inline] = a.startsWith("--") && a.includes("=") ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)] : [a, undefined];
    if (valueFlags.includes(name)) {
      const v = inline ?? argv[++i];
      if (v === undefined) usage(`${name} needs a value`);
      flags[name] = v;
    } else if (boolFlags.includes(name)) flags[name] = true;
    else if (a.startsWith("-") && a.length > 1 && !/^-?\d/.test(a.slice(1))) usage(`unknown option ${a}`);
    else rest.push(a);
  }
  return { flags, rest };
}

function usage(msg: string): never {
  process.stderr.write(`devservices: ${msg}\nTry 'devservices --help'.\n`);
  process.exit(2);
}

async function serve(argv: string[]) {
  const { flags, rest } = parseArgs(argv, ["--bus", "--board", "--state-dir", "--log-level"], ["--check-responses"]);
  const log = configureLogging((flags["--log-level"] as string) ?? "info");
  const board = loadBoard(flags["--board"] as string | undefined);
  const busAddress = resolveBusAddress(flags["--bus"] as string | undefined);
  const rt = await startRuntime({
    busAddress,
    board,
    stateDir: (flags["--state-dir"] as string) ?? "/var/lib/devservices",
    services: rest,
    log,
    checkResponses: flags["--check-responses"] === true || undefined,
  });
  log.info({ bus: busAddress, board: board.name, services: rt.services.map((s) => s.module.spec.busName) }, "devservices ready");
  rt.server.onDisconnect.push(() => {
    log.fatal("lost the bus; exiting");
    process.exit(1);
  });
  await untilSignal();
  log.info("stopping");
  await rt.stop();
  process.exit(0);
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
}

async function call(argv: string[]) {
  const { flags, rest } = parseArgs(argv, ["--bus", "-n", "-w"], ["-i", "-f"]);
  if (rest.length < 1 || rest.length > 2) usage("call takes URI [PAYLOAD]");
  const { busName, method } = parseUri(rest[0]!);
  const text = rest[1] ?? "{}";
  let payload: Record<string, unknown> | undefined;
  try {
    const p = JSON.parse(text);
    if (p && typeof p === "object" && !Array.isArray(p)) payload = p;
  } catch {
    /* sent as it is: the service answers malformed JSON with its own error */
  }
  const count = flags["-n"] !== undefined ? Number(flags["-n"]) : undefined;
  if (count !== undefined && !(Number.isInteger(count) && count > 0)) usage("-n takes a positive whole number");
  const waitMs = flags["-w"] !== undefined ? Number(flags["-w"]) : 25000;
  const print = (m: unknown) => process.stdout.write(JSON.stringify(m, null, flags["-f"] ? 2 : undefined) + "\n");
  let client: BusClient;
  try {
    client = await BusClient.connect(resolveBusAddress(flags["--bus"] as string | undefined), { timeoutMs: waitMs });
  } catch (e) {
    process.stderr.write(`devservices: cannot connect to the bus: ${(e as Error).message}\n`);
    process.exit(1);
  }
  try {
    if (payload?.subscribe === true) {
      let seen = 0;
      let done!: () => void;
      const finished = new Promise<void>((r) => (done = r));
      const onMessage = (m: Record<string, unknown>) => {
        print(m);
        if (count !== undefined && ++seen >= count) done();
      };
      const timer = !flags["-i"] ? setTimeout(() => done(), count !== undefined ? waitMs : waitMs) : undefined;
      const sub = await client.subscribe(busName, method, payload, onMessage, { timeoutMs: waitMs });
      print(sub.first);
      seen++;
      if (sub.first.subscribed !== true || (count !== undefined && seen >= count) || (count === undefined && !flags["-i"])) done();
      process.once("SIGINT", () => done());
      process.once("SIGTERM", () => done());
      sub.ended.then(() => done());
      await finished;
      clearTimeout(timer);
      await sub.cancel();
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
  const { flags, rest } = parseArgs(argv, [], ["--json"]);
  if (rest.length === 0) {
    const list = Object.values(SERVICES).map((m) => ({ name: m.spec.name, busName: m.spec.busName, description: m.spec.description }));
    if (flags["--json"]) return console.log(JSON.stringify(list, null, 2));
    for (const s of list) console.log(`${s.busName}\n  ${s.description}\n`);
    return;
  }
  const m = findService(rest[0]!);
  if (!m) usage(`unknown service ${rest[0]}`);
  const methods = Object.entries(m.spec.api as Record<string, MethodSpec>).map(([name, spec]) => ({
    method: name,
    member: memberName(name),
    summary: spec.summary,
    subscribable: !!spec.subscribable,
    passesFd: !!spec.passesFd,
    request: z.toJSONSchema(spec.request, { io: "input", unrepresentable: "any" }),
    response: z.toJSONSchema(spec.response, { unrepresentable: "any" }),
  }));
  if (flags["--json"]) return console.log(JSON.stringify({ busName: m.spec.busName, description: m.spec.description, methods }, null, 2));
  console.log(`${m.spec.busName}\n  ${m.spec.description}\n`);
  for (const x of methods) {
    console.log(`${m.spec.busName}/${x.method}${x.subscribable ? "  (subscribable)" : ""}${x.passesFd ? "  (reply carries an fd)" : ""}`);
    console.log(`  ${x.summary}`);
    console.log(`  request:  ${JSON.stringify(x.request)}`);
    console.log(`  response: ${JSON.stringify(x.response)}\n`);
  }
}

async function demo(argv: string[]) {
  const { flags } = parseArgs(argv, ["--board", "--state-dir", "--log-level"], []);
  const log = configureLogging((flags["--log-level"] as string) ?? "warn");
  const board = loadBoard(flags["--board"] as string | undefined);
  const bus = await startPrivateBus();
  const ownStateDir = flags["--state-dir"] === undefined;
  const stateDir = (flags["--state-dir"] as string) ?? mkdtempSync(join(tmpdir(), "devservices-demo-"));
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
