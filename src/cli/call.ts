// devservices call: the platform's luna-send.
import { resolveBusAddress } from "../bus/connection";
import { BusClient } from "../bus/client";
import { parseUri } from "../bus/wire";
import { cli, usage, wholeNumber } from "./args";

export const USAGE = `devservices call [--bus ADDRESS] [-n COUNT] [-i] [-f] [-w MS] URI [PAYLOAD]
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
`;

export async function call(argv: string[]) {
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
