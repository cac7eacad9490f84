// When the dbus-daemon goes away: clients see their subscriptions end and their calls
// fail at once; a serving process exits non-zero so that systemd restarts it.
import { test, expect } from "bun:test";
import { spawn } from "bun";
import { testEnv, spawnScript, BINARY, eventually } from "../helpers/harness";
import fdService from "../fixtures/fd-service";

test("a client's subscriptions end and its pending calls fail when the bus dies", async () => {
  const env = await testEnv();
  const rt = await env.start(["testautomation"]);
  await rt.server.host(fdService.spec, await fdService.create({} as any));
  const c = await env.client();
  const sub = await c.subscribe("fdtest", "tick", {}, () => {});
  // A call that waits: a redirected command to a stage whose nub never answers.
  const nub = await env.client();
  let commands = 0;
  const stage = await nub.subscribe("testautomation", "subscribeToCommands", { appInfo: { id: "x" }, name: "n", scene: "s", type: "t" }, () => void commands++);
  const pending = c.call("testautomation", "handleRequest", { command: "getItems", stageId: stage.first.stageId }).then(
    () => "answered",
    (e) => String(e.message),
  );
  await eventually(() => commands === 1); // the command reached the nub: the call waits on it
  const t0 = performance.now();
  process.kill(env.bus.pid, "SIGKILL");
  await sub.ended;
  expect(await pending).toContain("closed");
  expect(performance.now() - t0).toBeLessThan(1000);
  await eventually(() => rt.server.disconnected, 1000);
  await env.stop();
});

test("devservices serve exits with status 1 when it loses the bus", async () => {
  const env = await testEnv();
  const p = spawn([BINARY, "serve", "--bus", env.bus.address, "--state-dir", env.stateDir, "--log-level", "fatal", "testautomation"], { env: { ...process.env }, stdout: "ignore", stderr: "ignore" });
  const c = await env.client();
  await eventually(async () => (await c.call("testautomation", "ping", {}, { timeoutMs: 500 }).catch(() => null)) !== null, 10000, 100);
  process.kill(env.bus.pid, "SIGKILL");
  expect(await p.exited).toBe(1);
  await env.stop();
});

test("an application process waiting on its subscription exits when the bus goes away", async () => {
  const env = await testEnv();
  const rt = await env.start(["testautomation"]);
  await rt.server.host(fdService.spec, await fdService.create({} as any));
  const p = spawnScript("test/fixtures/subscriber.ts", ["fdtest", "tick"], { DEVSERVICES_BUS: env.bus.address });
  await p.waitFor("message ");
  process.kill(env.bus.pid, "SIGKILL");
  const code = await Promise.race([p.proc.exited, Bun.sleep(3000).then(() => "still running")]);
  expect(code).toBe(0);
  await env.stop();
});
