// `devservices call -i` and `-n COUNT` stay with a call whose first reply says
// subscribed:true, whatever the payload says (power2 registerStateTransition always
// subscribes), and SIGINT cancels it with the Cancel the service sees. The power
// wake-lock walk-through of docs/services/power.md is run as written, from a shell,
// against `serve` on a private bus.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { spawn, type Subprocess } from "bun";
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { testEnv, BINARY, ROOT, eachLine, eventually, type Env } from "../helpers/harness";

let env: Env;
let server: Subprocess;
let bin: string;
const P = "com.vendor.service.power2";

/** One command line of the docs, run by sh with `devservices` on PATH. */
function shell(line: string) {
  return spawn(["sh", "-c", `exec ${line}`], {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, DEVSERVICES_BUS: env.bus.address },
  });
}
async function run(line: string) {
  const p = shell(line);
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code, json: stdout.trim() ? JSON.parse(stdout.trim().split("\n")[0]!) : undefined };
}

/** The lines a long-running child prints, as they come. */
function lines(p: Subprocess<any, "pipe", any>) {
  const got: string[] = [];
  const done = eachLine(p.stdout, (l) => got.push(l));
  return { got, done };
}

/** dbus-monitor on the private bus, for the Cancel calls of the subscription interface. */
function cancelMonitor() {
  const p = spawn(["dbus-monitor", "--address", env.bus.address, "type='method_call',interface='com.vendor.devservices.Subscription',member='Cancel'"], {
    stdout: "pipe",
    stderr: "ignore",
  });
  let text = "";
  (async () => {
    for await (const chunk of p.stdout) text += new TextDecoder().decode(chunk);
  })();
  return {
    proc: p,
    /** Serials cancelled by `sender`, as the monitor saw them. */
    cancelsFrom: (sender: string) =>
      [...text.matchAll(/method call [^\n]*sender=(\S+) -> destination=\S+ serial=\d+ path=[^;]+; interface=com\.vendor\.devservices\.Subscription; member=Cancel\n\s+uint32 (\d+)/g)]
        .filter((m) => m[1] === sender)
        .map((m) => Number(m[2])),
    ready: () => text.includes("NameAcquired") || text.length > 0,
  };
}

beforeAll(async () => {
  env = await testEnv();
  bin = join(env.stateDir, "bin");
  mkdirSync(bin);
  symlinkSync(BINARY, join(bin, "devservices"));
  server = spawn([BINARY, "serve", "--bus", env.bus.address, "--state-dir", join(env.stateDir, "state"), "--log-level", "warn", "--check-responses", "power2"], { env: { ...process.env },
    stdout: "ignore",
    stderr: "inherit",
  });
  await eventually(async () => (await run(`devservices call ${P}/getState '{}'`)).code === 0, 10000, 100);
});
afterAll(async () => {
  server?.kill("SIGTERM");
  await server?.exited;
  await env?.stop();
});

/** The wake-lock walk-through's two code blocks of docs/services/power.md: the registration, then the calls from another shell. */
function walkThrough(): { register: string; calls: string[] } {
  const doc = readFileSync(join(ROOT, "docs/services/power.md"), "utf8");
  const section = doc.slice(doc.indexOf("A registered client and its wake lock"), doc.indexOf("Methods ("));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.split("\n").filter((l) => l.startsWith("devservices ")));
  expect(blocks.length).toBe(2);
  expect(blocks[0]!.length).toBe(1);
  return { register: blocks[0]![0]!, calls: blocks[1]! };
}

for (const variant of ["as documented", "without \"subscribe\":true"]) {
  test(`power wake-lock walk-through of the docs, ${variant}: -i stays until SIGINT, which cancels the registration`, async () => {
    const { register, calls } = walkThrough();
    const line = variant === "as documented" ? register : register.replace(/,"subscribe":true/, "");
    expect(line).toContain("call -i");
    if (variant !== "as documented") expect(line).not.toContain("subscribe");
    const monitor = cancelMonitor();
    await eventually(monitor.ready, 5000);
    const reg = shell(line);
    const out = lines(reg);
    await eventually(() => out.got.length >= 1, 10000);
    const first = JSON.parse(out.got[0]!);
    expect(first).toMatchObject({ returnValue: true, subscribed: true, state: "ActiveState" });
    const clientId = first.clientId as string;
    const withId = (l: string) => l.replaceAll(":1.42", clientId);
    const [acquire, release, expiry] = [calls.find((l) => l.includes("/acquireWakeLock"))!, calls.find((l) => l.includes("/releaseWakeLock"))!, calls.find((l) => l.includes("/notifyAlarmExpiry"))!];

    // The lock holds: a state change is refused while it is held, and allowed once released.
    expect((await run(withId(acquire))).json).toEqual({ returnValue: true });
    expect((await run(`devservices call ${P}/setState '{"state":"GarageModeState","reason":1}'`)).json).toMatchObject({ returnValue: false, errorCode: 1 });
    expect((await run(withId(release))).json).toMatchObject({ returnValue: true });
    expect((await run(withId(acquire))).json).toEqual({ returnValue: true });
    expect((await run(withId(expiry))).json).toMatchObject({ returnValue: true, clientId });
    // The registration is still there: the one-shot calls above did not end it, and -i did not exit.
    expect(reg.exitCode).toBeNull();
    expect((await run(withId(acquire))).json).toEqual({ returnValue: true });
    expect((await run(withId(release))).json).toMatchObject({ returnValue: true });

    // Ctrl-C: the call cancels its subscription (the service sees the Cancel of this call), then exits 0.
    reg.kill("SIGINT");
    expect(await reg.exited).toBe(0);
    await out.done;
    expect(out.got.length).toBe(1);
    await eventually(() => monitor.cancelsFrom(clientId).length === 1, 5000);
    monitor.proc.kill();
    await monitor.proc.exited;
    // The registration is gone with it.
    expect((await run(withId(acquire))).json).toMatchObject({ returnValue: false, errorCode: 3 });
  }, 40000);
}

test("-n 2 waits for a push when the first reply says subscribed:true, though the payload has no subscribe", async () => {
  const reg = shell(`devservices call -n 2 -w 10000 ${P}/registerStateTransition '{"state":"ActiveState"}'`);
  const out = lines(reg);
  await eventually(() => out.got.length >= 1, 10000);
  expect(JSON.parse(out.got[0]!)).toMatchObject({ returnValue: true, subscribed: true });
  expect((await run(`devservices call ${P}/setState '{"state":"GarageModeState","reason":1}'`)).json).toEqual({ returnValue: true });
  expect(await reg.exited).toBe(0);
  await out.done;
  expect(out.got.length).toBe(2);
  expect(JSON.parse(out.got[1]!)).toMatchObject({ state: "ActiveState", nextState: "GarageModeState" });
  expect((await run(`devservices call ${P}/setState '{"state":"ActiveState","reason":1}'`)).json).toEqual({ returnValue: true });
}, 30000);

test("SIGTERM ends -i as SIGINT does: the subscription is cancelled, exit 0", async () => {
  const monitor = cancelMonitor();
  await eventually(monitor.ready, 5000);
  const reg = shell(`devservices call -i ${P}/registerStateTransition '{"state":"ActiveState"}'`);
  const out = lines(reg);
  await eventually(() => out.got.length >= 1, 10000);
  const clientId = JSON.parse(out.got[0]!).clientId as string;
  reg.kill("SIGTERM");
  expect(await reg.exited).toBe(0);
  await eventually(() => monitor.cancelsFrom(clientId).length === 1, 5000);
  monitor.proc.kill();
  await monitor.proc.exited;
}, 30000);

test("-i on a call that does not subscribe prints its one answer and exits 0", async () => {
  const r = await run(`devservices call -i ${P}/getState '{}'`);
  expect(r.code).toBe(0);
  expect(r.stdout.trim().split("\n").length).toBe(1);
  expect(r.json).toMatchObject({ returnValue: true });
  expect(r.json.subscribed).not.toBe(true);
});
