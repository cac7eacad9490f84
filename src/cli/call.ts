// devservices call: the platform's luna-send.
import { resolveBusAddress } from "../bus/connection";
import { BusClient } from "../bus/client";
import { parseUri } from "../bus/wire";
import { cli, usage, wholeNumber } from "./args";

export const USAGE = `devservices call [--bus ADDRESS] [-n COUNT] [-i] [-f] [-w MS] [-a APPID] URI [PAYLOAD]
      Calls a method, like luna-send. URI: luna://com.vendor.service.NAME/method/path or
      com.vendor.service.NAME/method/path. PAYLOAD is a JSON object (default {}), sent
      as it is. Each response is printed as one JSON line on stdout; diagnostics go to
      stderr. A call whose first response says "subscribed":true stays open (with
      "subscribe":true in PAYLOAD, or a method that always subscribes) when asked to:
        -n COUNT  exit after COUNT messages (the first response counts)
        -i        print messages until interrupted (Ctrl-C or SIGTERM cancels the
                  subscription, then exits 0)
      Without -n or -i, the call prints its first response and ends (cancels) it.
      -a APPID sends the call as application APPID: the payload's "appId" (docs/bus.md,
      "Caller identity"); a claim the service may check, never a credential.
      -f pretty-prints; -w MS waits at most MS milliseconds (default 25000 for the
      first response; with -n, for all of them). A file descriptor attached to a reply
      is reported on stderr. Exit status: 0 when the call was answered, 1 when it was
      not (no such service, timeout), 2 for a usage error.
`;

export async function call(argv: string[]) {
  const { flags, rest } = cli(argv, {
    bus: { type: "string" },
    count: { type: "string", short: "n" },
    wait: { type: "string", short: "w" },
    interactive: { type: "boolean", short: "i" },
    format: { type: "boolean", short: "f" },
    "app-id": { type: "string", short: "a" },
  });
  if (rest.length < 1 || rest.length > 2) usage("call takes URI [PAYLOAD]");
  let target: { busName: string; method: string };
  try {
    target = parseUri(rest[0]!);
  } catch (e) {
    usage((e as Error).message);
  }
  const { busName, method } = target;
  let text = rest[1] ?? "{}";
  let payload: Record<string, unknown> | undefined;
  try {
    const p = JSON.parse(text);
    if (p && typeof p === "object" && !Array.isArray(p)) payload = p;
  } catch {
    /* sent as it is: the service answers malformed JSON with its own error */
  }
  const appId = flags["app-id"] as string | undefined;
  if (appId !== undefined) {
    if (!appId) usage("-a takes an app id, got ''");
    if (!payload) usage("-a needs PAYLOAD to be a JSON object (the app id is its appId)");
    if (payload.appId !== undefined && payload.appId !== appId) usage(`-a ${appId} and the payload's appId ${JSON.stringify(payload.appId)} differ`);
    payload = { ...payload, appId };
    text = JSON.stringify(payload);
  }
  const count = wholeNumber(flags, "count", "-n", 1);
  const waitMs = wholeNumber(flags, "wait", "-w", 1) ?? 25000;
  const print = (m: unknown) => process.stdout.write(JSON.stringify(m, null, flags.format ? 2 : undefined) + "\n");
  const fail = (msg: string): never => {
    process.stderr.write(`devservices: ${busName}/${method}: ${msg}\n`);
    client?.close();
    process.exit(1);
  };
  let client: BusClient | undefined;
  try {
    client = await BusClient.connect(resolveBusAddress(flags.bus as string | undefined), { timeoutMs: waitMs });
  } catch (e) {
    process.stderr.write(`devservices: cannot connect to the bus: ${(e as Error).message}\n`);
    process.exit(1);
  }
  // A call that may stay open: asked to (-i, -n) or subscribing by its payload. Its
  // first response decides (subscribed:true), so the payload goes as it is.
  const mayStay = payload !== undefined && (flags.interactive === true || count !== undefined || payload.subscribe === true);
  try {
    if (!mayStay) {
      const { response, fd } = await client.callWithFd(busName, method, payload ?? text, { timeoutMs: waitMs });
      print(response);
      if (fd !== undefined) process.stderr.write(`devservices: the reply carried file descriptor ${fd}\n`);
      client.close();
      process.exit(0);
    }
    let seen = 0;
    let timedOut = false;
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    // Ctrl-C or SIGTERM: the subscription is cancelled (below), then the call exits 0.
    process.once("SIGINT", () => done());
    process.once("SIGTERM", () => done());
    const timer =
      count !== undefined
        ? setTimeout(() => {
            timedOut = true;
            done();
          }, waitMs)
        : undefined;
    const open = await client.subscribe(
      busName,
      method,
      payload!,
      (m) => {
        print(m);
        if (count !== undefined && ++seen >= count) done();
      },
      {
        timeoutMs: waitMs,
        asWritten: true,
        onFirst: (first, fd) => {
          print(first);
          if (fd !== undefined) process.stderr.write(`devservices: the reply carried file descriptor ${fd}\n`);
          seen++;
        },
      },
    );
    const stays = open.first.subscribed === true;
    if (!stays || (count !== undefined && seen >= count) || (count === undefined && !flags.interactive)) done();
    open.ended.then(() => done());
    // A handle that keeps the event loop from spinning while it waits (docs/bus.md).
    const keep = setInterval(() => {}, 1 << 30);
    await finished;
    clearInterval(keep);
    clearTimeout(timer);
    await open.cancel();
    if (count !== undefined && seen < count) {
      const why = timedOut ? `within ${waitMs} ms` : stays ? "before the subscription ended" : "(the call did not subscribe)";
      fail(`${seen} of ${count} messages ${why}`);
    }
  } catch (e) {
    fail((e as Error).message);
  }
  client.close();
  process.exit(0);
}
