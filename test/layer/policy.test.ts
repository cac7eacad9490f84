// The Yocto layer's D-Bus policy, loaded by a real dbus-daemon whose defaults are
// those of the system bus (deny own, deny method calls): services run as root, an
// application as nobody may call them and subscribe, but may not take their names.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { spawn } from "bun";
import { chmodSync, copyFileSync, linkSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, ROOT, eventually } from "../helpers/harness";
import { BusClient } from "../../src/bus/client";

const POLICY = join(ROOT, "meta-devservices/recipes-core/devservices/files/devservices.conf");
let dir: string;
let address: string;
let daemon: ReturnType<typeof spawn>;
let server: ReturnType<typeof spawn>;
let app: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "policy-"));
  chmodSync(dir, 0o755);
  writeFileSync(
    join(dir, "bus.conf"),
    `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=${dir}/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
  </policy>
  <include>${POLICY}</include>
</busconfig>
`,
  );
  daemon = spawn(["dbus-daemon", "--config-file", join(dir, "bus.conf"), "--nofork", "--nopidfile", "--print-address=1"], { stdout: "pipe", stderr: "ignore" });
  const reader = (daemon.stdout as ReadableStream<Uint8Array>).getReader();
  address = new TextDecoder().decode((await reader.read()).value).trim();
  chmodSync(join(dir, "system_bus_socket"), 0o777);
  server = spawn([BINARY, "serve", "--bus", address, "--state-dir", join(dir, "state"), "--log-level", "error", "testautomation"], { stdout: "ignore", stderr: "inherit" });
  // The application is the shipped binary, where nobody can reach it.
  app = join(dir, "devservices");
  try {
    linkSync(BINARY, app);
  } catch {
    copyFileSync(BINARY, app);
  }
  await eventually(async () => (await asNobody(["call", "-w", "500", "com.vendor.service.testautomation/ping", "{}"])).code === 0, 10000, 100);
});
afterAll(async () => {
  server?.kill();
  daemon?.kill();
  await Promise.all([server?.exited, daemon?.exited]);
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the binary's subcommand (or busctl) as uid nobody. */
function spawnAsNobody(args: string[], viaBusctl = false) {
  const cmd = viaBusctl ? ["busctl", `--address=${address}`, ...args] : [app, args[0]!, "--bus", address, ...args.slice(1)];
  return spawn(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", ...cmd], { cwd: dir, stdout: "pipe", stderr: "pipe", env: { ...process.env, HOME: dir } });
}

async function asNobody(args: string[], viaBusctl = false) {
  const p = spawnAsNobody(args, viaBusctl);
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

test("an application (uid nobody) calls a service", async () => {
  const r = await asNobody(["call", "com.vendor.service.testautomation/ping", '{"Message":"policy"}']);
  expect(r.stdout).toBe('{"Message":"policy"}\n');
});

test("an application receives its subscription messages (unicast signals)", async () => {
  const p = spawnAsNobody(["call", "-n", "2", "-w", "5000", "com.vendor.service.testautomation/subscribeToEvents", '{"subscribe":true}']);
  const out = new Response(p.stdout).text();
  // A nub (root) reports an event once the subscriber is in place.
  const root = await BusClient.connect(address);
  const stage = await root.subscribe("testautomation", "subscribeToCommands", { appInfo: { id: "a" }, name: "n", scene: "s", type: "t" }, () => {});
  await Bun.sleep(300);
  await root.call("testautomation", "notifyEvent", { stageId: stage.first.stageId, type: "policy" });
  const lines = (await out).trim().split("\n").map((l) => JSON.parse(l));
  expect(lines).toEqual([
    { returnValue: true, subscribed: true },
    { returnValue: true, stageId: stage.first.stageId, type: "policy" },
  ]);
  root.close();
});

test("an application may not take a service's name", async () => {
  const r = await asNobody(["call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName", "su", "com.vendor.service.power2", "0"], true);
  expect(r.code).not.toBe(0);
  expect(r.stderr).toMatch(/not allowed to own|AccessDenied|Access denied/i);
});
