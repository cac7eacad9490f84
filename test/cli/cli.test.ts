// The shipped binary (dist/devservices, built by the test command) as users run it:
// serve, call (luna-send style), describe, demo, --help.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { spawn } from "bun";
import { existsSync } from "node:fs";
import { testEnv, BINARY, eventually, type Env, eachLine } from "../helpers/harness";

let env: Env;
let server: ReturnType<typeof spawn>;
const run = async (...args: string[]) => {
  const p = spawn([BINARY, ...args], { stdout: "pipe", stderr: "pipe", env: { ...process.env, DEVSERVICES_BUS: env.bus.address } });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
};

beforeAll(async () => {
  env = await testEnv();
  server = spawn([BINARY, "serve", "--bus", env.bus.address, "--state-dir", env.stateDir, "--log-level", "warn", "--check-responses", "testautomation"], { env: { ...process.env },
    stdout: "ignore",
    stderr: "inherit",
  });
  await eventually(async () => (await run("call", "com.vendor.service.testautomation/ping", "{}")).code === 0, 10000, 100);
});
afterAll(async () => {
  server?.kill("SIGTERM");
  await server?.exited;
  await env?.stop();
});

test("call prints exactly one JSON line on stdout", async () => {
  const r = await run("call", "luna://com.vendor.service.testautomation/ping", '{"Message":"hi"}');
  expect(r.code).toBe(0);
  expect(r.stdout).toBe('{"returnValue":true,"Message":"hi"}\n');
});

test("call -f pretty-prints", async () => {
  const r = await run("call", "-f", "com.vendor.service.testautomation/version");
  expect(r.stdout).toMatch(/^\{\n  "returnValue": true,\n  "version": "/);
});

test("call -n COUNT waits for COUNT messages of a subscription", async () => {
  const p = spawn([BINARY, "call", "-n", "3", "com.vendor.service.testautomation/subscribeToEvents", '{"subscribe":true}'], {
    stdout: "pipe",
    env: { ...process.env, DEVSERVICES_BUS: env.bus.address },
  });
  const out: string[] = [];
  const read = eachLine(p.stdout, (l) => void (l.trim() && out.push(l)));
  const c = await env.client();
  const sub = await c.subscribe("testautomation", "subscribeToCommands", { appInfo: { id: "a" }, name: "n", scene: "s", type: "t" }, () => {});
  const stageId = sub.first.stageId;
  // Once the CLI has subscribed (its first line), two events.
  await eventually(() => out.length >= 1, 10000);
  await c.call("testautomation", "notifyEvent", { stageId, type: "one" });
  await c.call("testautomation", "notifyEvent", { stageId, type: "two" });
  await read;
  expect(await p.exited).toBe(0);
  const lines = out.map((l) => JSON.parse(l));
  expect(lines).toEqual([
    { returnValue: true, subscribed: true },
    { returnValue: true, stageId, type: "one" },
    { returnValue: true, stageId, type: "two" },
  ]);
  await sub.cancel();
});

test("a spec error is a JSON answer, exit 0; a missing service is exit 1 with stderr", async () => {
  const r = await run("call", "com.vendor.service.testautomation/handleRequest", "{}");
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout)).toEqual({ returnValue: false, errorCode: -1, errorText: "Parameter is missing: command" });
  const m = await run("call", "-w", "2000", "com.vendor.service.nothere/ping", "{}");
  expect(m.code).toBe(1);
  expect(m.stdout).toBe("");
  expect(m.stderr).toContain("com.vendor.service.nothere");
});

test("malformed JSON is passed to the service, which answers with its error", async () => {
  const r = await run("call", "com.vendor.service.testautomation/replyToCommand", "{oops");
  expect(JSON.parse(r.stdout)).toEqual({ returnValue: false, errorCode: 4, errorText: "Invalid JSON message" });
});

test("usage errors exit 2", async () => {
  expect((await run("call")).code).toBe(2);
  expect((await run("frobnicate")).code).toBe(2);
  expect((await run("call", "-n", "zero", "a.b/c")).code).toBe(2);
});

test("usage errors name the problem: -w, URIs, log levels, unknown services with a suggestion", async () => {
  const w = await run("call", "-w", "abc", "com.vendor.service.testautomation/ping");
  expect(w.code).toBe(2);
  expect(w.stderr).toContain("-w takes a whole number of at least 1, got 'abc'");
  expect(w.stderr).not.toContain("NaN");
  for (const uri of ["http://example.com/x", "com.vendor.service.testautomation", "nodots/ping", "com.vendor.service.x/", "com.vendor.service.x/a b"]) {
    const r = await run("call", uri);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("not a service URI");
  }
  expect((await run("call", "http://example.com/x")).stderr).toContain("the scheme http:// is not luna://");
  const d = await run("describe", "com.vendor.service.power");
  expect(d.code).toBe(2);
  expect(d.stderr).toContain("did you mean power2?");
  const s = await run("serve", "--bus", env.bus.address, "power");
  expect(s.code).toBe(2);
  expect(s.stderr).toContain("did you mean power2?");
  const l = await run("serve", "--bus", env.bus.address, "--log-level", "loud", "testautomation");
  expect(l.code).toBe(2);
  expect(l.stderr).toContain("unknown log level 'loud'");
  expect((await run("call", "--frob", "com.vendor.service.testautomation/ping")).code).toBe(2);
});

test("call -n 2 that gets one message within -w says so and exits 1", async () => {
  const r = await run("call", "-n", "2", "-w", "700", "com.vendor.service.testautomation/subscribeToEvents", '{"subscribe":true}');
  expect(r.code).toBe(1);
  expect(r.stdout.trim()).toBe('{"returnValue":true,"subscribed":true}');
  expect(r.stderr).toContain("1 of 2 messages within 700 ms");
});

test("org.freedesktop.DBus.Properties.GetAll and Peer.Ping answer on a service path", async () => {
  const out = await Bun.$`busctl --address=${env.bus.address} call com.vendor.service.testautomation /com/vendor/service/testautomation org.freedesktop.DBus.Properties GetAll s com.vendor.service.testautomation`.text();
  expect(out.trim()).toBe("a{sv} 0");
  await Bun.$`busctl --address=${env.bus.address} call com.vendor.service.testautomation /com/vendor/service/testautomation org.freedesktop.DBus.Peer Ping`.quiet();
});

test("--help documents every command", async () => {
  const r = await run("--help");
  for (const w of ["serve", "call", "describe", "demo", "-n COUNT", "--board", "--state-dir", "DEVSERVICES_BUS"]) expect(r.stdout).toContain(w);
});

test("describe prints each method with its JSON Schemas", async () => {
  const r = await run("describe", "testautomation", "--json");
  const d = JSON.parse(r.stdout);
  expect(d.busName).toBe("com.vendor.service.testautomation");
  expect(d.methods.map((m: any) => m.method).sort()).toEqual(
    ["broadcastCommand", "handleRequest", "notifyEvent", "ping", "replyToCommand", "subscribeToCommands", "subscribeToEvents", "version"],
  );
  const sub = d.methods.find((m: any) => m.method === "subscribeToCommands");
  expect(sub.request.required).toEqual(expect.arrayContaining(["subscribe", "appInfo", "name", "scene", "type"]));
  const list = await run("describe");
  expect(list.stdout).toContain("com.vendor.service.testautomation");
});

test("demo starts a private bus with the board's services and prints how to reach them", async () => {
  const p = spawn([BINARY, "demo"], { stdout: "pipe", stderr: "inherit" });
  const reader = p.stdout.getReader();
  let text = "";
  while (!text.includes("Ctrl-C")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  const address = text.match(/DEVSERVICES_BUS='([^']+)'/)![1]!;
  const c = spawn([BINARY, "call", "--bus", address, "com.vendor.service.testautomation/ping", '{"Message":"demo"}'], { stdout: "pipe" });
  expect(await new Response(c.stdout).text()).toBe('{"returnValue":true,"Message":"demo"}\n');
  // The demo's handler application answers a view intent.
  const i = spawn([BINARY, "call", "--bus", address, "-n", "2", "-w", "10000", "com.vendor.service.intent/start", '{"intent":{"action":"view","uri":"https://example.com"},"subscribe":true}'], { stdout: "pipe" });
  const lines = (await new Response(i.stdout).text()).trim().split("\n").map((l) => JSON.parse(l));
  expect(lines[1]).toEqual({ returnValue: true, subscribed: true, intentId: lines[0].intentId, result: "viewed https://example.com", from: "com.vendor.demo.viewer" });
  const stateDir = text.match(/state directory: (\S+)/)![1]!;
  expect(existsSync(stateDir)).toBe(true);
  p.kill("SIGINT");
  expect(await p.exited).toBe(0);
  expect(existsSync(stateDir)).toBe(false);
});

test("the binary runs without the source tree (it carries the event source's poller thread, for kernels without io_uring)", async () => {
  // A private mount namespace hides src/ behind an empty tmpfs for this one call.
  const probe = await Bun.$`unshare -rm true`.nothrow().quiet();
  if (probe.exitCode !== 0) {
    console.warn("unshare -rm is not permitted here; the guest test test/hw/bus.test.ts covers this");
    return;
  }
  const src = `${import.meta.dir}/../../src`;
  // The client's connection is watched by the event source: the kernel's relay here,
  // and the poller thread (an entry point inside the binary) where the kernel has none.
  for (const source of ["", "thread"]) {
    const r = await Bun.$`unshare -rm sh -c ${`mount -t tmpfs none "$1" && exec "$2" call -w 3000 --bus "$3" com.vendor.service.testautomation/ping '{"Message":"alone"}'`} sh ${src} ${BINARY} ${env.bus.address}`
      .env({ ...process.env, DEVSERVICES_EVENT_SOURCE: source })
      .nothrow()
      .quiet();
    expect([source, r.stdout.toString()]).toEqual([source, '{"returnValue":true,"Message":"alone"}\n']);
  }
});

test("call gives up on a bus that never answers (-w bounds the connection too)", async () => {
  const path = `${env.stateDir}/silent.sock`;
  const silent = Bun.listen({ unix: path, socket: { data() {} } });
  const t0 = performance.now();
  const r = await run("call", "--bus", `unix:path=${path}`, "-w", "500", "com.vendor.service.testautomation/ping", "{}");
  silent.stop(true);
  expect(r.code).toBe(1);
  expect(r.stderr).toContain("no answer from the bus");
  expect(performance.now() - t0).toBeLessThan(3000);
});
