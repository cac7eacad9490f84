// Subscriptions one client can hold are bounded per connection and per uid (board
// recipe `limits`): the excess is refused with a sentence, nothing is kept for it,
// and a cancelled or departed subscription frees its place.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { testEnv, eventually, openBusToAll, spawnScript, type Env } from "../helpers/harness";
import { loadBoard } from "../../src/core/board";

let env: Env;
beforeAll(async () => {
  env = await testEnv();
  await env.start(["power2"], { ...loadBoard("virtual"), limits: { subscriptionsPerClient: 5, subscriptionsPerUser: 8 } });
});
afterAll(() => env.stop());

const subscribe = (c: Awaited<ReturnType<Env["client"]>>) => c.subscribe("power2", "getState", { subscribe: true }, () => {});

test("past the bound of one connection, then of one uid: refused, and places come back", async () => {
  const a = await env.client();
  const held = [];
  for (let i = 0; i < 5; i++) {
    const s = await subscribe(a);
    expect(s.first).toMatchObject({ returnValue: true, subscribed: true });
    held.push(s);
  }
  const refused = await subscribe(a);
  expect(refused.first).toMatchObject({ returnValue: false, errorText: "Too many subscriptions: a client may hold 5 at once" });
  expect(env.rt!.server.stats().subscriptions).toBe(5);
  // A one-shot call is not a subscription and still answers.
  expect(await a.call("power2", "getState", {})).toMatchObject({ returnValue: true, subscribed: false });

  // Another connection of the same uid: 3 more, then the uid's bound.
  const b = await env.client();
  for (let i = 0; i < 3; i++) expect((await subscribe(b)).first).toMatchObject({ subscribed: true });
  expect((await subscribe(b)).first).toMatchObject({ returnValue: false, errorText: "Too many subscriptions: the clients of one user may hold 8 at once" });
  expect(env.rt!.server.stats().subscriptions).toBe(8);

  // A cancel frees a place.
  await held.pop()!.cancel();
  await eventually(() => env.rt!.server.stats().subscriptions === 7);
  expect((await subscribe(b)).first).toMatchObject({ subscribed: true });

  // A connection that goes away frees all of its places.
  a.close();
  await eventually(() => env.rt!.server.stats().subscriptions === 4, 5000);
  const c = await env.client();
  for (let i = 0; i < 4; i++) expect((await subscribe(c)).first).toMatchObject({ subscribed: true });
  expect((await subscribe(c)).first).toMatchObject({ errorText: "Too many subscriptions: the clients of one user may hold 8 at once" });
});

test("the recipe's limits are checked: a non-positive or unknown limit is refused", () => {
  const { parseBoard } = require("../../src/core/board");
  expect(() => parseBoard({ ...loadBoard("virtual"), limits: { subscriptionsPerClient: 0 } }, "t")).toThrow(/limits/);
  expect(() => parseBoard({ ...loadBoard("virtual"), limits: { subscriptionz: 3 } }, "t")).toThrow(/limits/);
});

test("the payload limits come from the recipe too: size and depth, checked before parsing", async () => {
  const e = await testEnv();
  try {
    await e.start(["testautomation"], { ...loadBoard("virtual"), limits: { payloadBytes: 2048, payloadDepth: 4 } });
    const c = await e.client();
    expect(await c.call("testautomation", "ping", { Message: "x".repeat(1500) })).toEqual({ returnValue: true, Message: "x".repeat(1500) });
    expect(await c.call("testautomation", "ping", { Message: "x".repeat(3000) })).toMatchObject({ returnValue: false, errorCode: 4 });
    expect(await c.call("testautomation", "ping", { Message: "d", extra: [[[["deep"]]]] })).toMatchObject({ returnValue: false, errorCode: 4 });
    expect(await c.call("testautomation", "ping", { Message: "ok", extra: [[["a"]]] })).toMatchObject({ Message: "ok" });
  } finally {
    await e.stop();
  }
});

test.skipIf(process.getuid?.() !== 0)("as uid 65534 from separate processes: the bounds hold per connection and per uid", async () => {
  openBusToAll(env.bus.address);
  const as65534 = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"];
  const run = () => spawnScript("test/fixtures/subscriber.ts", ["power2", "getState", "6"], { DEVSERVICES_BUS: env.bus.address, HOME: "/tmp" }, as65534);
  const before = env.rt!.server.stats().subscriptions;
  const a = run();
  try {
    await eventually(() => a.lines.filter((l) => l.startsWith("subscribed")).length === 6, 15000);
    const answers = (p: ReturnType<typeof run>) => p.lines.filter((l) => l.startsWith("subscribed")).map((l) => JSON.parse(l.slice(11)));
    expect(answers(a).filter((r) => r.subscribed === true).length).toBe(5);
    expect(answers(a).at(-1)).toMatchObject({ returnValue: false, errorText: "Too many subscriptions: a client may hold 5 at once" });
    const b = run();
    try {
      await eventually(() => b.lines.filter((l) => l.startsWith("subscribed")).length === 6, 15000);
      expect(answers(b).filter((r) => r.subscribed === true).length).toBe(3);
      expect(answers(b).at(-1)).toMatchObject({ returnValue: false, errorText: "Too many subscriptions: the clients of one user may hold 8 at once" });
      expect(env.rt!.server.stats().subscriptions).toBe(before + 8);
    } finally {
      await b.kill();
    }
  } finally {
    await a.kill();
  }
}, 40000);
