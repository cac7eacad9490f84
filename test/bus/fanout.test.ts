// Fan-out of one change to many subscribers (docs/decisions/fanout.md): a message
// published once to a shared topic goes out as ONE broadcast signal that the daemon
// delivers to every subscriber that attached the topic (a match rule for it);
// subscribers that did not attach, and messages made per subscriber, stay addressed.
// A group-limited method's topic is broadcast only where the bus enforces the layer's
// policy (src/policy.ts), whose receive rules keep it from everyone outside the group:
// a client that adds a match rule for the broadcasts (here as uid 65534, no groups)
// gets those of open topics and nothing of the group's. Cancelling, leaving the topic
// and disconnecting stop delivery. The service runs in this process; every client is
// a separate process on a real dbus-daemon.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { z } from "zod";
import { eventually, openBusToAll, spawnScript } from "../helpers/harness";
import { testAccounts, withAccounts } from "../layer/accounts";
import { BusServer } from "../../src/bus/server";
import { BusClient } from "../../src/bus/client";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { SUBSCRIPTION_INTERFACE, TOPIC_INTERFACE } from "../../src/bus/wire";
import type { Outgoing } from "../../src/bus/connection";
import { defineService, method, type ServiceContext } from "../../src/core/service";
import { group } from "../../src/core/access";
import { ok } from "../../src/core/errors";
import { policyFile } from "../../src/policy";

const BUS_NAME = "com.vendor.service.fanouttest";
const GROUP = "devservices-test";
const res = z.looseObject({ returnValue: z.boolean(), subscribed: z.boolean().optional() });
const sub = (summary: string, access?: ReturnType<typeof group>) =>
  method({ summary, request: () => z.looseObject({}), response: () => res, subscribable: true, ...(access ? { access } : {}) });

const service = defineService({
  spec: {
    name: "fanouttest",
    busName: BUS_NAME,
    description: "fan-out test service",
    api: {
      watch: sub("Subscribes to the shared topic 'open' (any caller)."),
      watchGroup: sub("Subscribes to the shared topic 'group' (root and the test group).", group(GROUP)),
      watchMine: sub("Subscribes to a topic of the caller's own (not shared)."),
      emit: method({ summary: "Publishes {n} to a topic ('mine': each caller's own).", request: () => z.looseObject({ topic: z.string(), n: z.number() }), response: () => res }),
      emitEach: method({ summary: "Publishes to 'open' a message made per subscriber.", request: () => z.looseObject({ n: z.number() }), response: () => res }),
      leave: method({ summary: "The caller's subscriptions leave 'open' (they stay open).", request: () => z.looseObject({}), response: () => res }),
    },
    badRequest: () => ({ errorText: "bad request" }),
    internalError: () => ({ errorText: "internal" }),
  },
  create: ({ topics }) => ({
    handlers: {
      watch(_req, call) {
        topics.add("open", call.subscription!, { shared: true });
        return ok({ subscribed: true });
      },
      watchGroup(_req, call) {
        topics.add("group", call.subscription!, { shared: true });
        return ok({ subscribed: true });
      },
      watchMine(_req, call) {
        topics.add(`mine/${call.caller.name}`, call.subscription!);
        return ok({ subscribed: true });
      },
      emit(req) {
        for (const key of req.topic === "mine" ? topics.keys().filter((k) => k.startsWith("mine/")) : [req.topic]) topics.publish(key, { n: req.n });
        return ok();
      },
      emitEach(req) {
        topics.publish("open", (s) => ({ n: req.n, for: s.caller.name }));
        return ok();
      },
      leave(_req, call) {
        for (const s of topics.subscribers("open")) if (s.caller.name === call.caller.name) topics.remove("open", s);
        return ok();
      },
    },
  }),
});

interface Setup {
  bus: PrivateBus;
  server: BusServer;
  control: BusClient;
  /** What the service's connection sent, in order. */
  sent: Outgoing[];
  procs: ReturnType<typeof spawnScript>[];
}

async function setUp(policyBus: boolean): Promise<Setup> {
  // The layer's policy for this service, as src/policy.ts makes it for every service.
  // The daemon resolves the policy's user and group names in the test run's account files.
  const bus = policyBus
    ? await startPrivateBus(undefined, { policies: [policyFile(service).text], eavesdrop: false, prefix: withAccounts([]) })
    : await startPrivateBus();
  openBusToAll(bus.address);
  const server = await BusServer.connect(bus.address, { policyEnforced: policyBus });
  const sent: Outgoing[] = [];
  const send = server.conn.send.bind(server.conn);
  server.conn.send = (m, serial, own) => {
    sent.push(m);
    return send(m, serial, own);
  };
  await server.host(service.spec, await service.create({ topics: server.topics.scope("fanouttest") } as unknown as ServiceContext));
  return { bus, server, control: await BusClient.connect(bus.address), sent, procs: [] };
}

async function tearDown(s: Setup) {
  await Promise.all(s.procs.map((p) => p.kill()));
  s.control.close();
  await s.server.close();
  await s.bus.stop();
}

let gid: number;
let plain: Setup;
let policed: Setup;
beforeAll(async () => {
  gid = testAccounts().gids[GROUP];
  [plain, policed] = await Promise.all([setUp(false), setUp(true)]);
}, 30000);
afterAll(async () => {
  await Promise.all([plain, policed].filter(Boolean).map(tearDown));
}, 30000);

const nobody = (groups: number[] = []) => ["setpriv", "--reuid=65534", "--regid=65534", groups.length ? `--groups=${groups.join(",")}` : "--clear-groups"];

/** A subscriber process (test/fixtures/bus-fanout-subscriber.ts), ready when its subscriptions are open. */
async function subscriber(s: Setup, subs: { method: string; shared?: boolean }[], prefix = nobody()) {
  const p = spawnScript("test/fixtures/bus-fanout-subscriber.ts", [BUS_NAME, JSON.stringify(subs.map((x) => ({ payload: {}, ...x })))], { DEVSERVICES_BUS: s.bus.address, HOME: "/tmp" }, prefix);
  s.procs.push(p);
  await p.waitFor("ready", 20000);
  return p;
}

/** The messages a subscriber process printed for its subscription i. */
const messages = (p: ReturnType<typeof spawnScript>, i: number) =>
  p.lines.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)).filter((o) => o.sub === i && "msg" in o).map((o) => o.msg);
const firstOf = (p: ReturnType<typeof spawnScript>, i: number) =>
  p.lines.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)).find((o) => o.sub === i && "first" in o)?.first;

/** What the service sent while fn ran: broadcasts (Topic) and addressed pushes. */
async function sentDuring(s: Setup, fn: () => Promise<unknown>) {
  const from = s.sent.length;
  await fn();
  const out = s.sent.slice(from);
  return {
    broadcasts: out.filter((m) => m.interface === TOPIC_INTERFACE),
    pushes: out.filter((m) => m.interface === SUBSCRIPTION_INTERFACE && m.member === "Push"),
  };
}

test("one change to the subscribers of a shared topic is one broadcast, and each subscriber gets it once", async () => {
  const subs = await Promise.all([1, 2, 3].map(() => subscriber(plain, [{ method: "watch" }])));
  for (const n of [1, 2]) {
    const out = await sentDuring(plain, () => plain.control.call(BUS_NAME, "emit", { topic: "open", n }));
    expect(out.broadcasts.length).toBe(1);
    expect(out.broadcasts[0]!.destination).toBeUndefined();
    expect(out.pushes.length).toBe(0);
    await eventually(() => subs.every((p) => messages(p, 0).length >= n), 10000);
  }
  // In order, once each: a duplicate (broadcast and push) of 1 would come before 2.
  for (const p of subs) expect(messages(p, 0)).toEqual([{ n: 1 }, { n: 2 }]);
  await Promise.all(subs.map((p) => p.kill()));
}, 60000);

test("a subscriber that did not attach, and a message made per subscriber, stay addressed", async () => {
  const attached = await subscriber(plain, [{ method: "watch" }]);
  const addressedOnly = await subscriber(plain, [{ method: "watch", shared: false }]);
  const one = await sentDuring(plain, () => plain.control.call(BUS_NAME, "emit", { topic: "open", n: 1 }));
  expect(one.broadcasts.length).toBe(1);
  expect(one.pushes.length).toBe(1);
  await eventually(() => messages(attached, 0).length === 1 && messages(addressedOnly, 0).length === 1, 10000);
  const each = await sentDuring(plain, () => plain.control.call(BUS_NAME, "emitEach", { n: 2 }));
  expect(each.broadcasts.length).toBe(0);
  expect(each.pushes.length).toBe(2);
  await eventually(() => messages(attached, 0).length === 2 && messages(addressedOnly, 0).length === 2, 10000);
  expect(messages(attached, 0)).toEqual([{ n: 1 }, { n: 2, for: expect.any(String) }]);
  expect(messages(addressedOnly, 0)).toEqual([{ n: 1 }, { n: 2, for: expect.any(String) }]);
  expect(messages(attached, 0)[1].for).not.toBe(messages(addressedOnly, 0)[1].for);
  await Promise.all([attached.kill(), addressedOnly.kill()]);
}, 60000);

test("on a bus the layer's policy does not guard, a group-limited topic stays addressed while an open one is broadcast", async () => {
  const p = await subscriber(plain, [{ method: "watchGroup" }, { method: "watch" }], []); // root: admitted by the group rule
  expect(firstOf(p, 0)).toMatchObject({ returnValue: true, subscribed: true });
  const out = await sentDuring(plain, async () => {
    await plain.control.call(BUS_NAME, "emit", { topic: "group", n: 1 });
    await plain.control.call(BUS_NAME, "emit", { topic: "open", n: 2 });
  });
  expect(out.pushes.length).toBe(1);
  expect(out.broadcasts.length).toBe(1);
  expect(out.broadcasts[0]!.member).toBe("watch");
  await eventually(() => messages(p, 0).length === 1 && messages(p, 1).length === 1, 10000);
  await p.kill();
}, 60000);

test("where the policy is enforced, a client outside the group that asks for the broadcasts gets the open topic's and none of the group's", async () => {
  const member = await subscriber(policed, [{ method: "watchGroup" }], nobody([gid]));
  expect(firstOf(member, 0)).toMatchObject({ returnValue: true, subscribed: true });
  // What subscribing gets an outsider: refused.
  const refused = await subscriber(policed, [{ method: "watchGroup" }, { method: "watch" }]);
  expect(firstOf(refused, 0)).toMatchObject({ returnValue: false });
  const eavesdropper = spawnScript("test/fixtures/bus-fanout-eavesdropper.ts", [], { DEVSERVICES_BUS: policed.bus.address, HOME: "/tmp" }, nobody());
  policed.procs.push(eavesdropper);
  await eavesdropper.waitFor("ready", 20000);
  const out = await sentDuring(policed, async () => {
    await policed.control.call(BUS_NAME, "emit", { topic: "group", n: 1 });
    await policed.control.call(BUS_NAME, "emit", { topic: "open", n: 2 });
  });
  // Both went out as broadcasts: the group's to every connection the policy lets receive it.
  expect(out.broadcasts.map((m) => m.member)).toEqual(["watchGroup", "watch"]);
  expect(out.pushes.length).toBe(0);
  await eventually(() => messages(member, 0).length === 1 && messages(refused, 1).length === 1, 10000);
  expect(messages(member, 0)).toEqual([{ n: 1 }]);
  // The open topic's broadcast reached the eavesdropper; the group's, sent before it, did not.
  const seen = () => eavesdropper.lines.filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
  await eventually(() => seen().some((o) => o.member === "watch"), 10000);
  expect(seen().map((o) => o.member)).toEqual(["watch"]);
  await Promise.all([member.kill(), refused.kill(), eavesdropper.kill()]);
}, 60000);

test("cancelling, leaving the topic and disconnecting stop delivery of the broadcasts", async () => {
  // Subscription 1 of the first two is a marker: its addressed message follows the broadcast.
  const cancels = await subscriber(plain, [{ method: "watch" }, { method: "watchMine" }]);
  const leaves = await subscriber(plain, [{ method: "watch" }, { method: "watchMine" }]);
  const disconnects = await subscriber(plain, [{ method: "watch" }]);
  const stays = await subscriber(plain, [{ method: "watch" }]);
  await plain.control.call(BUS_NAME, "emit", { topic: "open", n: 1 });
  await eventually(() => [cancels, leaves, disconnects, stays].every((p) => messages(p, 0).length === 1), 10000);

  const before = plain.server.stats().subscriptions;
  cancels.proc.kill("SIGUSR1");
  leaves.proc.kill("SIGUSR2");
  await Promise.all([cancels.waitFor("cancelled"), leaves.waitFor("left"), disconnects.kill()]);
  await eventually(() => plain.server.stats().subscriptions === before - 2, 10000);

  const out = await sentDuring(plain, async () => {
    await plain.control.call(BUS_NAME, "emit", { topic: "open", n: 2 });
    await plain.control.call(BUS_NAME, "emit", { topic: "mine", n: 3 });
  });
  expect(out.broadcasts.length).toBe(1);
  await eventually(() => messages(stays, 0).length === 2 && messages(cancels, 1).length === 1 && messages(leaves, 1).length === 1, 10000);
  expect(messages(cancels, 0)).toEqual([{ n: 1 }]);
  expect(messages(leaves, 0)).toEqual([{ n: 1 }]);
  expect(messages(stays, 0)).toEqual([{ n: 1 }, { n: 2 }]);
  await Promise.all([cancels.kill(), leaves.kill(), stays.kill()]);
  await eventually(() => plain.server.stats().subscriptions === 0 && plain.server.topics.count() === 0, 10000);
}, 60000);
