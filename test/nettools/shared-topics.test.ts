// gethostname's subscription is a shared topic (docs/decisions/fanout.md): every
// subscriber gets the same {returnValue, hostname} and anyone may subscribe, so each
// change of the name goes out as ONE broadcast signal (com.vendor.devservices.Topic)
// that the daemon delivers to the subscribers that attached it, not one push each.
// The service is the shipped binary in its own UTS namespace (env.ts); two subscriber
// processes of uid 65534 subscribe through the bus client; this process watches what
// the service sends: the broadcasts (a match rule for them) and the addressed pushes
// (eavesdropping, which the private bus allows).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { hostname } from "node:os";
import { rmSync } from "node:fs";
import { eventually, spawnScript } from "../helpers/harness";
import { SUBSCRIPTION_INTERFACE, TOPIC_INTERFACE } from "../../src/bus/wire";
import { canRun, makeWorld, type World } from "./env";

const skip = canRun();
if (skip) console.warn(`nettools shared topic tests skipped: ${skip}`);
const NETTOOLS = "com.vendor.service.nettools";

describe.skipIf(skip !== null)("gethostname subscribers share one broadcast", () => {
  let w: World;
  const machine = hostname();
  const procs: ReturnType<typeof spawnScript>[] = [];
  /** What the service sent that this process saw: [kind, body]. */
  const seen: { kind: "broadcast" | "push"; member?: string; destination?: string; msg: any }[] = [];
  beforeAll(async () => {
    w = await makeWorld("shared");
    const watcher = await w.client();
    const owner = await watcher.callRaw({ destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "GetNameOwner", signature: "s", body: [NETTOOLS] });
    const service = owner.body[0] as string;
    watcher.conn.onSignal((m) => {
      if (m.sender !== service) return;
      if (m.interface === TOPIC_INTERFACE) seen.push({ kind: "broadcast", member: m.member, destination: m.destination, msg: JSON.parse(m.body[1] as string) });
      else if (m.interface === SUBSCRIPTION_INTERFACE && m.member === "Push") seen.push({ kind: "push", destination: m.destination, msg: JSON.parse(m.body[1] as string) });
    });
    await watcher.conn.addMatch(`type='signal',sender='${service}',interface='${TOPIC_INTERFACE}'`);
    await watcher.conn.addMatch(`type='signal',sender='${service}',interface='${SUBSCRIPTION_INTERFACE}',member='Push',eavesdrop='true'`);
  }, 60000);
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.kill()));
    await w?.stop();
    rmSync(w?.dir ?? "/nonexistent", { recursive: true, force: true });
    expect(hostname()).toBe(machine);
  });

  const messages = (p: ReturnType<typeof spawnScript>) =>
    p.lines.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)).filter((o) => o.sub === 0 && "msg" in o).map((o) => o.msg);

  test("each change of the host name (sethostname, or another process's) is one broadcast, and each subscriber gets it once", async () => {
    const subs: ReturnType<typeof spawnScript>[] = [];
    for (const _ of [1, 2]) {
      const p = spawnScript("test/fixtures/bus-fanout-subscriber.ts", [NETTOOLS, JSON.stringify([{ method: "gethostname", payload: { subscribe: true } }])],
        { DEVSERVICES_BUS: w.bus.address, HOME: "/tmp" }, ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]);
      procs.push(p);
      await p.waitFor("ready", 20000);
      subs.push(p);
    }
    expect(await w.call("sethostname", { hostname: "nt-shared-one" })).toEqual({ returnValue: true });
    await eventually(() => subs.every((p) => messages(p).length === 1), 10000);
    // Someone else changes the name in the service's UTS namespace.
    Bun.spawnSync(["nsenter", `--target=${w.service.pid}`, "--uts", "hostname", "nt-shared-two"]);
    await eventually(() => subs.every((p) => messages(p).length === 2), 10000);
    const expected = [{ returnValue: true, hostname: "nt-shared-one" }, { returnValue: true, hostname: "nt-shared-two" }];
    await eventually(() => seen.length >= 2, 10000);
    // A push sent for a subscriber would be here too (in order, before a later broadcast).
    expect(seen).toEqual(expected.map((msg) => ({ kind: "broadcast", member: "gethostname", destination: undefined, msg })));
    for (const p of subs) expect(messages(p)).toEqual(expected);
  }, 60000);
});
