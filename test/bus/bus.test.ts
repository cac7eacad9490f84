// The bus layer: fd passing between processes, subscriptions (cancel, disconnect,
// service-side end), caller identity, and refusing fds without negotiation.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { testEnv, spawnScript, eventually, type Env, staysTrue } from "../helpers/harness";
import fdService from "../fixtures/fd-service";
import { BusClient } from "../../src/bus/client";
import { DBUS, METHOD_CALL, SIGNAL } from "../../src/bus/connection";
import { objectPath } from "../../src/bus/wire";

let env: Env;
beforeAll(async () => {
  env = await testEnv();
  const rt = await env.start(["testautomation"]);
  await rt.server.host(fdService.spec, await fdService.create({} as any));
});
afterAll(() => env.stop());

test("an fd sent by a service is read by a client in another process", async () => {
  const p = spawnScript("test/fixtures/fd-reader.ts", ["hello through SCM_RIGHTS"], { DEVSERVICES_BUS: env.bus.address });
  expect(await p.waitFor("read ")).toBe("read hello through SCM_RIGHTS");
  expect(await p.proc.exited).toBe(0);
});

test("busctl sees the fd method's reply signature sh", async () => {
  const out = await Bun.$`busctl --address=${env.bus.address} call com.vendor.service.fdtest /com/vendor/service/fdtest com.vendor.service.fdtest getFd s ${'{"text":"x"}'}`.text();
  expect(out).toMatch(/^sh "\{\\"returnValue\\":true\}" \d+/);
});

test("a connection that did not negotiate fd passing refuses to send one", async () => {
  const c = await BusClient.connect(env.bus.address, { negotiateUnixFd: false });
  env.clients.push(c);
  const msg = { ...DBUS, type: METHOD_CALL, member: "GetId", signature: "h", body: [0] };
  expect(() => c.conn.send(msg)).toThrow(/file descriptor passing was not negotiated/);
  // The connection is still usable afterwards: the daemon never saw the fd.
  expect((await c.call("testautomation", "ping", { Message: "still here" })).Message).toBe("still here");
});

test("a long run of messages made in one tick goes out while it is being made, in order", async () => {
  const a = await env.client();
  const b = await env.client();
  const got: number[] = [];
  b.conn.onSignal((m) => m.member === "Tick" && got.push(m.body[0]));
  const N = 600;
  const text = "x".repeat(200);
  for (let i = 0; i < N; i++)
    a.conn.send({ type: SIGNAL, destination: b.uniqueName, path: "/com/vendor/test", interface: "com.vendor.test", member: "Tick", signature: "us", body: [i, text] });
  // Still in the tick that made them (about 170 KB): all but the last few KB are with the daemon already.
  expect(a.conn.queuedBytes).toBeLessThan(20 << 10);
  await eventually(() => got.length === N);
  expect(got).toEqual([...Array(N).keys()]);
});

test("subscription messages reach only the subscriber; cancel stops them and frees server state", async () => {
  const a = await env.client();
  const b = await env.client();
  const got: unknown[] = [];
  let bGot = 0;
  b.conn.onSignal((m) => void (m.member === "Push" && bGot++));
  const base = env.rt!.server.stats().subscriptions;
  const sub = await a.subscribe("fdtest", "tick", {}, (m) => got.push(m));
  expect(sub.first).toEqual({ returnValue: true, subscribed: true });
  await eventually(() => got.length >= 3);
  expect(env.rt!.server.stats().subscriptions).toBe(base + 1);
  await sub.cancel();
  await eventually(() => env.rt!.server.stats().subscriptions === base);
  const n = got.length;
  await staysTrue(() => got.length === n, 80, "no push after Cancel");
  expect(bGot).toBe(0);
});

test("Cancel on the wire answers whether a subscription was cancelled", async () => {
  const a = await env.client();
  const sub = await a.subscribe("fdtest", "tick", {}, () => {});
  const path = objectPath("com.vendor.service.fdtest");
  const cancel = async (serial: number) =>
    (await a.callRaw({ destination: "com.vendor.service.fdtest", path, interface: "com.vendor.devservices.Subscription", member: "Cancel", signature: "u", body: [serial] })).body[0];
  expect(await cancel(sub.serial)).toBe(true);
  expect(await cancel(sub.serial)).toBe(false);
});

test("Cancel sent to another service's object cancels nothing and answers false", async () => {
  const a = await env.client();
  const got: unknown[] = [];
  const sub = await a.subscribe("fdtest", "tick", {}, (m) => got.push(m));
  const wrong = objectPath("com.vendor.service.testautomation");
  const answer = await a.callRaw({ destination: "com.vendor.service.fdtest", path: wrong, interface: "com.vendor.devservices.Subscription", member: "Cancel", signature: "u", body: [sub.serial] });
  expect(answer.body[0]).toBe(false);
  const n = got.length;
  await eventually(() => got.length > n + 1);
  await sub.cancel();
});

test("a subscriber killed with SIGKILL is cleaned up within a second", async () => {
  const base = env.rt!.server.stats();
  const p = spawnScript("test/fixtures/subscriber.ts", ["fdtest", "tick"], { DEVSERVICES_BUS: env.bus.address });
  await p.waitFor("message ");
  expect(env.rt!.server.stats().subscriptions).toBe(base.subscriptions + 1);
  const t0 = performance.now();
  await p.kill("SIGKILL");
  await eventually(() => env.rt!.server.stats().subscriptions === base.subscriptions, 1000, 5);
  expect(performance.now() - t0).toBeLessThan(1000);
  expect(env.rt!.server.stats().clients).toBe(base.clients);
});

test("a payload whose subscribe is not a JSON boolean true does not subscribe", async () => {
  const a = await env.client();
  const r = await a.call("fdtest", "tick", '{"subscribe":"true"}');
  expect(r.returnValue).toBe(false); // the schema wants a boolean
  const r2 = await a.call("fdtest", "tick", '{"subscribe":false}');
  expect(r2).toEqual({ returnValue: true });
  expect(env.rt!.server.stats().subscriptions).toBe(0);
});

test("handlers know the caller's unique name, uid and pid", async () => {
  const seen: any[] = [];
  const spec = { ...fdService.spec, name: "whoami", busName: "com.vendor.service.whoami" };
  await env.rt!.server.host(spec, { handlers: { getFd: (_r: any, call: any) => (seen.push(call.caller), { returnValue: true }), tick: () => ({ returnValue: true }) } });
  const a = await env.client();
  await a.call("whoami", "getFd", { text: "" });
  expect(seen[0]).toMatchObject({ name: a.uniqueName, uid: process.getuid!(), pid: process.pid });
  // The daemon reports the groups too (dbus >= 1.14); the access check uses them.
  expect(seen[0].gids).toContain(process.getgid!());
});

test("D-Bus errors only for transport problems: wrong signature, unknown member", async () => {
  const a = await env.client();
  const path = objectPath("com.vendor.service.testautomation");
  await expect(
    a.callRaw({ destination: "com.vendor.service.testautomation", path, interface: "com.vendor.service.testautomation", member: "ping", signature: "u", body: [1] }),
  ).rejects.toThrow(/takes one string/);
  await expect(
    a.callRaw({ destination: "com.vendor.service.testautomation", path, interface: "com.vendor.service.testautomation", member: "nope", signature: "s", body: ["{}"] }),
  ).rejects.toThrow();
});

test("a name held by a live connection is refused; one whose owner dies is taken over", async () => {
  const holder = await env.client();
  await holder.callRaw({ destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "RequestName", signature: "su", body: ["com.vendor.service.held", 4] });
  const { BusServer } = await import("../../src/bus/server");
  const s = await BusServer.connect(env.bus.address);
  s.nameWaitMs = 300;
  const spec = { ...fdService.spec, name: "held", busName: "com.vendor.service.held" };
  const instance = { handlers: { getFd: () => ({ returnValue: true }), tick: () => ({ returnValue: true }) } };
  await expect(s.host(spec, instance)).rejects.toThrow(/owned by another connection/);
  // The owner goes away while we wait in the queue: the name becomes ours.
  s.nameWaitMs = 3000;
  const hosting = s.host(spec, instance);
  const queued = async () =>
    (await holder.callRaw({ destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "ListQueuedOwners", signature: "s", body: ["com.vendor.service.held"] })).body[0] as string[];
  await eventually(async () => (await queued()).length === 2); // the holder, then the server in the queue
  holder.close();
  await hosting;
  const c = await env.client();
  expect(await c.call("held", "tick", {})).toEqual({ returnValue: true });
  await s.close();
});
