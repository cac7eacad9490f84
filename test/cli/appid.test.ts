// `devservices call -a APPID`: the app id travels as the payload's appId (docs/bus.md,
// "Caller identity"), which is what camera2's open checks against the board's appIds.
// An app id is the caller's claim, never a credential: access is decided by uid and
// groups, so another uid claiming a permitted app id is still refused.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { spawn, type Subprocess } from "bun";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testEnv, BINARY, ROOT, eventually, openBusToAll, binaryForAnyUser, callAsUser, type Env } from "../helpers/harness";

let env: Env;
let server: Subprocess;
const C = "com.vendor.service.camera2";
const APP = "com.vendor.app.camera";

const run = async (...args: string[]) => {
  const p = spawn([BINARY, "call", "--bus", env.bus.address, ...args], { stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code, json: stdout.trim() ? JSON.parse(stdout.trim()) : undefined };
};

beforeAll(async () => {
  env = await testEnv();
  const virtual = JSON.parse(readFileSync(join(ROOT, "recipes/boards/virtual.json"), "utf8"));
  const board = join(env.stateDir, "appid-board.json");
  writeFileSync(
    board,
    JSON.stringify({ ...virtual, name: "appid-test", serviceConfig: { ...virtual.serviceConfig, camera2: { ...virtual.serviceConfig.camera2, appIds: [APP] } } }),
  );
  server = spawn([BINARY, "serve", "--bus", env.bus.address, "--board", board, "--state-dir", join(env.stateDir, "state"), "--log-level", "warn", "--check-responses", "camera2"], { env: { ...process.env },
    stdout: "ignore",
    stderr: "inherit",
  });
  await eventually(async () => (await run(`${C}/getCameraList`, "{}")).code === 0, 10000, 100);
});
afterAll(async () => {
  server?.kill("SIGTERM");
  await server?.exited;
  await env?.stop();
});

test("-a APPID is the payload's appId: a permitted app id opens the camera, another is refused", async () => {
  const ok = await run("-a", APP, `${C}/open`, '{"id":"camera1"}');
  expect(ok.code).toBe(0);
  expect(ok.json).toMatchObject({ returnValue: true });
  expect(typeof ok.json.handle).toBe("number");
  const refused = await run("-a", "com.example.other", `${C}/open`, '{"id":"camera1"}');
  expect(refused.code).toBe(0);
  expect(refused.json).toMatchObject({ returnValue: false, errorCode: 3 });
  // The long option, and the payload's default ({}) with it.
  const long = await run("--app-id", "com.example.other", `${C}/open`);
  expect(long.json).toMatchObject({ returnValue: false });
});

test("-a and a different appId in the payload is a usage error; the same one is fine", async () => {
  const r = await run("-a", APP, `${C}/open`, '{"id":"camera1","appId":"com.example.other"}');
  expect(r.code).toBe(2);
  expect(r.stdout).toBe("");
  expect(r.stderr).toContain("appId");
  expect(r.stderr).toContain("Try 'devservices call --help'.");
  const same = await run("-a", APP, `${C}/open`, `{"id":"camera1","appId":"${APP}"}`);
  expect(same.json).toMatchObject({ returnValue: true });
});

test("-a needs a JSON object payload and a non-empty app id", async () => {
  for (const [args, why] of [
    [["-a", APP, `${C}/open`, "{oops"], "-a needs PAYLOAD to be a JSON object"],
    [["-a", APP, `${C}/open`, "[1]"], "-a needs PAYLOAD to be a JSON object"],
    [["-a", "", `${C}/open`, "{}"], "-a takes an app id"],
  ] as [string[], string][]) {
    const r = await run(...args);
    expect({ args, code: r.code }).toEqual({ args, code: 2 });
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(why);
  }
});

test.skipIf(process.getuid?.() !== 0)("an app id is a claim, not a credential: uid 65534 claiming the permitted app id is refused", async () => {
  const dir = join(env.stateDir, "anyone");
  mkdirSync(dir);
  openBusToAll(env.bus.address);
  const who = { app: binaryForAnyUser(dir), bus: env.bus.address, cwd: dir, uid: 65534 };
  expect(await callAsUser(who, `${C}/open`, { id: "camera1" }, ["-a", APP])).toMatchObject({ returnValue: false, errorCode: 3 });
  // Reading methods stay open to it, with or without an app id.
  expect(await callAsUser(who, `${C}/getCameraList`, {}, ["-a", APP])).toMatchObject({ returnValue: true });
});
