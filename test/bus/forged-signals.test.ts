// A subscription's Push and Ended signals count only from the connection that
// answered the subscribing call: any peer on the bus can send a unicast signal, so
// one that forges them with a guessed serial (here from another process, as another
// uid where the tests run as root) neither ends another client's subscription nor
// feeds it data. A genuine Push sent right behind the reply still arrives.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { z } from "zod";
import { testEnv, eventually, openBusToAll, spawnScript, type Env } from "../helpers/harness";
import { BusServer } from "../../src/bus/server";
import { BusClient } from "../../src/bus/client";
import { objectPath, SUBSCRIPTION_INTERFACE } from "../../src/bus/wire";
import { defineService, method, type Subscription } from "../../src/core/service";
import { ok } from "../../src/core/errors";

const BUS_NAME = "com.vendor.service.forgerytest";
const PATH = objectPath(BUS_NAME);
const res = z.looseObject({ returnValue: z.boolean(), subscribed: z.boolean().optional() });

let env: Env;
let server: BusServer;
const watchers: Subscription[] = [];
/** watch waits for this before it answers (when set): a forger can act while the call is pending. */
let gate: Promise<void> | undefined;

const service = defineService({
  spec: {
    name: "forgerytest",
    busName: BUS_NAME,
    description: "forged signal test service",
    api: {
      // Pushes {n:0} before it answers: the push goes out right behind the reply.
      watch: method({ summary: "Subscribes.", request: () => z.looseObject({}), response: () => res, subscribable: true }),
      emit: method({ summary: "Pushes {n} to every watcher.", request: () => z.looseObject({ n: z.number() }), response: () => res }),
    },
    badRequest: () => ({ errorText: "bad request" }),
    internalError: () => ({ errorText: "internal" }),
  },
  create: () => ({
    handlers: {
      async watch(_req, call) {
        if (gate) await gate;
        const s = call.subscription!;
        watchers.push(s);
        s.push({ n: 0 });
        return ok({ subscribed: true });
      },
      emit(req) {
        for (const s of watchers) s.push({ n: req.n });
        return ok();
      },
    },
  }),
});

beforeAll(async () => {
  env = await testEnv();
  server = await BusServer.connect(env.bus.address);
  const ctx = {} as Parameters<typeof service.create>[0];
  await server.host(service.spec, await service.create(ctx));
  openBusToAll(env.bus.address);
});
afterAll(async () => {
  await server?.close();
  await env?.stop();
});

const asOther = process.getuid?.() === 0 ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : [];
const forge = (victim: BusClient, serials: number[]) =>
  spawnScript("test/fixtures/bus-signal-forger.ts", [victim.uniqueName, PATH, ...serials.map(String)], { DEVSERVICES_BUS: env.bus.address, HOME: "/tmp" }, asOther);

/** Subscription signals the client's connection received from anyone but the service. */
function foreignSignals(c: BusClient): () => number {
  let n = 0;
  c.conn.onSignal((m) => {
    if (m.interface === SUBSCRIPTION_INTERFACE && m.sender !== server.uniqueName) n++;
  });
  return () => n;
}

test("Push and Ended forged by another peer for an open subscription are ignored", async () => {
  const victim = await env.client();
  const foreign = foreignSignals(victim);
  const got: unknown[] = [];
  const sub = await victim.subscribe(BUS_NAME, "watch", {}, (m) => got.push(m));
  expect(sub.first).toEqual({ returnValue: true, subscribed: true });
  let ended = false;
  void sub.ended.then(() => (ended = true));
  // The push sent right behind the reply arrived.
  await eventually(() => got.length === 1);
  const f = forge(victim, [sub.serial]);
  try {
    await f.waitFor("sent");
    await eventually(() => foreign() >= 2, 5000);
    // A genuine push after the forged ones: it arrives, the forged ones did not, the subscription is open.
    const other = await env.client();
    expect(await other.call(BUS_NAME, "emit", { n: 1 })).toEqual({ returnValue: true });
    await eventually(() => got.length >= 2 || ended, 5000);
    expect(got).toEqual([{ n: 0 }, { n: 1 }]);
    expect(ended).toBe(false);
    expect(server.stats().subscriptions).toBe(1);
  } finally {
    await f.kill();
    await sub.cancel();
    watchers.splice(0);
  }
}, 30000);

test("Push and Ended forged while the subscribing call is pending are ignored; the service's own first push is kept", async () => {
  const victim = await env.client();
  const foreign = foreignSignals(victim);
  // The serial the next call of this connection gets.
  const serial = victim.conn.newSerial() + 1;
  let open!: () => void;
  gate = new Promise<void>((r) => (open = r));
  const got: unknown[] = [];
  const pending = victim.subscribe(BUS_NAME, "watch", {}, (m) => got.push(m));
  const f = forge(victim, [serial]);
  try {
    await f.waitFor("sent");
    await eventually(() => foreign() >= 2, 5000);
    open();
    const sub = await pending;
    expect(sub.serial).toBe(serial);
    expect(sub.first).toEqual({ returnValue: true, subscribed: true });
    let ended = false;
    void sub.ended.then(() => (ended = true));
    await eventually(() => got.length >= 1, 5000);
    expect(await (await env.client()).call(BUS_NAME, "emit", { n: 1 })).toEqual({ returnValue: true });
    await eventually(() => got.length >= 2 || ended, 5000);
    expect(got).toEqual([{ n: 0 }, { n: 1 }]);
    expect(ended).toBe(false);
    await sub.cancel();
  } finally {
    gate = undefined;
    open();
    await f.kill();
    watchers.splice(0);
  }
}, 30000);
