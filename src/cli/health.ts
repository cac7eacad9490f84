// devservices health: whether every service of a board is on the bus and answering,
// for an updater's health check after an update (docs/updates.md).
import { resolveBusAddress } from "../bus/connection";
import { BusClient } from "../bus/client";
import { objectPath } from "../bus/wire";
import { loadBoard } from "../core/board";
import { findService } from "../services";
import { cli, usage, wholeNumber } from "./args";

export const USAGE = `devservices health [--bus ADDRESS|system] [--board NAME|PATH] [--timeout MS]
      Checks that every service of the board recipe (default: $DEVSERVICES_BOARD, else
      virtual) owns its bus name and answers an Introspect call on its object within
      --timeout MS in all (default 5000). Prints one JSON line:
        {"healthy":true|false,"board":...,"answering":[...],"missing":[...],"notAnswering":[...]}
      (missing: the name has no owner; notAnswering: owned, but no answer or a wrong one).
      Exit status: 0 when every service answers, 1 otherwise, 2 for a usage error.
`;

export async function health(argv: string[]) {
  const { flags, rest } = cli(argv, { bus: { type: "string" }, board: { type: "string" }, timeout: { type: "string" } });
  if (rest.length) usage("health takes no arguments");
  const timeoutMs = wholeNumber(flags, "timeout", "--timeout", 1) ?? 5000;
  const deadline = Date.now() + timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  let board;
  try {
    board = loadBoard(flags.board as string | undefined);
  } catch (e) {
    usage((e as Error).message);
  }
  // Every bus name the board's services are hosted on (a service with instances has several).
  const names = board.services.flatMap((n) => {
    const m = findService(n);
    if (!m) return [n];
    return m.instances ? m.instances(board).map((i) => i.spec.busName) : [m.spec.busName];
  });
  const out = (r: Record<string, unknown>, code: number) => {
    process.stdout.write(JSON.stringify({ healthy: code === 0, board: board.name, ...r }) + "\n");
    process.exit(code);
  };
  let client: BusClient;
  try {
    client = await BusClient.connect(resolveBusAddress(flags.bus as string | undefined), { timeoutMs: left() });
  } catch (e) {
    return out({ error: `cannot connect to the bus: ${(e as Error).message}`, answering: [], missing: names, notAnswering: [] }, 1);
  }
  const answering: string[] = [];
  const missing: string[] = [];
  const notAnswering: { busName: string; error: string }[] = [];
  await Promise.all(
    names.map(async (busName) => {
      try {
        // An unowned name is missing: no call goes to it (on the system bus it could activate it).
        if (!(await client.hasOwner(busName))) return missing.push(busName);
      } catch (e) {
        return notAnswering.push({ busName, error: (e as Error).message });
      }
      try {
        const r = await client.callRaw(
          { destination: busName, path: objectPath(busName), interface: "org.freedesktop.DBus.Introspectable", member: "Introspect" },
          { timeoutMs: left() },
        );
        // The service itself is hosted there (not only its connection): its interface is described.
        if (typeof r.body[0] === "string" && r.body[0].includes(`<interface name="${busName}">`)) answering.push(busName);
        else notAnswering.push({ busName, error: "its object does not describe its interface" });
      } catch (e) {
        notAnswering.push({ busName, error: (e as Error).message });
      }
    }),
  );
  client.close();
  const order = (a: string, b: string) => names.indexOf(a) - names.indexOf(b);
  answering.sort(order);
  missing.sort(order);
  notAnswering.sort((a, b) => order(a.busName, b.busName));
  out({ answering, missing, notAnswering }, missing.length || notAnswering.length ? 1 : 0);
}
