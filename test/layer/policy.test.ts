// The layer's D-Bus system policy (meta-devservices/.../files/dbus/*.conf), loaded by
// a real dbus-daemon whose defaults are those of the system bus (deny own, deny
// method calls). The services run as the devservices user: the real binary hosts the
// virtual board's services, a stand-in process (fixtures/fake-services.ts) the ones
// not implemented yet, each set on one connection as devservices.service holds them.
// Callers are separate processes (busctl, the devservices CLI) run with setpriv as
// uid nobody with or without the policy's groups, or as root.
import { test, expect, beforeAll, afterAll, describe } from "bun:test";
import { spawn } from "bun";
import { chmodSync, chownSync, copyFileSync, linkSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, BUN, ROOT, eventually, eachLine } from "../helpers/harness";
import { BusClient } from "../../src/bus/client";
import { testAccounts, withAccounts, type Accounts, type GroupName } from "./accounts";
import { FAKE_SERVICES, PERIPHERAL_METHODS } from "./fixtures/fake-services";

export const POLICY_DIR = join(ROOT, "meta-devservices/recipes-core/devservices/files/dbus");
const NOBODY = 65534;
const path = (busName: string) => "/" + busName.replaceAll(".", "/");
const member = (method: string) => method.replaceAll("/", "_");

let acc: Accounts;
let dir: string;
let address: string;
let app: string;
const procs: ReturnType<typeof spawn>[] = [];
let fakeOut: string[] = [];

/** Who calls: root, nobody, or nobody with some of the policy's groups. */
type Who = "root" | "nobody" | GroupName[];

function asUser(who: Who): string[] {
  if (who === "root") return [];
  const groups = who === "nobody" ? ["--clear-groups"] : [`--groups=${who.map((g) => acc.gids[g]).join(",")}`];
  return ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, ...groups];
}

async function run(cmd: string[]) {
  const p = spawn(cmd, { cwd: dir, stdout: "pipe", stderr: "pipe", env: { ...process.env, HOME: dir } });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

const busctl = (who: Who, args: string[]) => run([...asUser(who), "busctl", `--address=${address}`, "--timeout=5", ...args]);

/** A method call with one string argument "{}" to dest at path (interface: the bus name of the path). */
function call(who: Who, dest: string, objectPath: string, iface: string, name: string, signature = "s", ...args: string[]) {
  return busctl(who, ["call", dest, objectPath, iface, name, ...(signature ? [signature, ...(args.length ? args : ["{}"])] : [])]);
}
const callMethod = (who: Who, busName: string, method: string, dest = busName, at = path(busName)) =>
  call(who, dest, at, busName, member(method));

const DENIED = /AccessDenied|Access denied|Rejected send message/i;
function expectAllowed(r: { code: number; stdout: string; stderr: string }, what: string) {
  expect({ what, code: r.code, stderr: r.stderr.trim() }).toEqual({ what, code: 0, stderr: "" });
}
function expectDenied(r: { code: number; stdout: string; stderr: string }, what: string) {
  expect({ what, code: r.code === 0 ? 0 : 1, denied: DENIED.test(r.stderr) }).toEqual({ what, code: 1, denied: true });
}

function startAsDevservices(cmd: string[], env: Record<string, string> = {}) {
  const p = spawn(["setpriv", `--reuid=${acc.uid}`, `--regid=${acc.gid}`, "--clear-groups", ...cmd], {
    cwd: dir,
    stdout: "pipe",
    stderr: "inherit",
    env: { ...process.env, HOME: join(dir, "state"), BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0", ...env },
  });
  procs.push(p);
  return p;
}

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error("the policy test runs as root: it runs the bus in a mount namespace and callers as other users");
  acc = testAccounts();
  dir = mkdtempSync(join(tmpdir(), "policy-"));
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, "state"));
  chownSync(join(dir, "state"), acc.uid, acc.gid);
  // Programs other users run, where they can reach them (a clone may sit in a private directory).
  app = join(dir, "devservices");
  const bun = join(dir, "bun");
  for (const [from, to] of [[BINARY, app], [BUN, bun]] as const) {
    try {
      linkSync(from, to);
    } catch {
      copyFileSync(from, to);
      chmodSync(to, 0o755);
    }
  }
  const built = await Bun.build({ entrypoints: [join(import.meta.dir, "fixtures/fake-services.ts")], target: "bun", outdir: dir, external: ["x11"] });
  if (!built.success) throw new Error(`cannot bundle the stand-in services: ${built.logs.join("\n")}`);
  writeFileSync(
    join(dir, "bus.conf"),
    `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=${dir}/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <!-- the default policy of the system bus (dbus' system.conf) -->
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
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
  </policy>
  <includedir>${POLICY_DIR}</includedir>
</busconfig>
`,
  );
  // stderr: the daemon logs every refusal
  // The policy's user= and group= names are resolved by the daemon through the C library:
  // it runs where the test run's account files are /etc/group and /etc/passwd.
  const daemon = spawn(withAccounts(["dbus-daemon", "--config-file", join(dir, "bus.conf"), "--nofork", "--nopidfile", "--print-address=1"]), { stdout: "pipe", stderr: "ignore" });
  procs.push(daemon);
  const reader = (daemon.stdout as ReadableStream<Uint8Array>).getReader();
  address = new TextDecoder().decode((await reader.read()).value).trim();
  reader.releaseLock();
  chmodSync(join(dir, "system_bus_socket"), 0o777);

  // The shipped binary hosts the services of REAL; the stand-ins hold the other names (one owner per name).
  startAsDevservices([app, "serve", "--bus", address, "--state-dir", join(dir, "state"), "--log-level", "error", ...REAL_SHORT]);
  const fake = startAsDevservices([bun, join(dir, "fake-services.js")], { DEVSERVICES_BUS: address });
  (async () => {
    let buf = "";
    for await (const chunk of fake.stdout as ReadableStream<Uint8Array>) {
      buf += new TextDecoder().decode(chunk);
      const lines = buf.split("\n");
      buf = lines.pop()!;
      fakeOut.push(...lines);
    }
  })();
  await eventually(() => fakeOut.includes("ready"), 15000, 50);
  await eventually(async () => (await callMethod("nobody", "com.vendor.service.filecache", "GetCacheStatus")).code === 0, 15000, 100);
});

afterAll(async () => {
  for (const p of procs.reverse()) p.kill();
  await Promise.all(procs.map((p) => p.exited));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const REAL = {
  "com.vendor.service.testautomation": "ping",
  "com.vendor.service.intent": "query",
  "com.vendor.service.power2": "getState",
  "com.vendor.service.filecache": "GetCacheStatus",
};
const REAL_SHORT = Object.keys(REAL).map((n) => n.split(".").pop()!);
const ALL_NAMES = [...Object.keys(REAL), ...Object.keys(FAKE_SERVICES)];

describe("ownership", () => {
  test("the devservices user owns every name (both hosting processes took theirs)", async () => {
    for (const name of ALL_NAMES) {
      const r = await busctl("root", ["status", name]);
      expect({ name, uid: /^UID=(\d+)/m.exec(r.stdout)?.[1] }).toEqual({ name, uid: String(acc.uid) });
    }
  });

  test("no one else may take a name: root, nobody, members of the callers' groups", async () => {
    const names = [...ALL_NAMES, "com.vendor.pipeline.record.other", "com.vendor.service.unknown"];
    for (const who of ["root", "nobody", ["devservices-net", "devservices-media", "devservices-gpio"]] as Who[]) {
      for (const name of names) {
        const r = await busctl(who, ["call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName", "su", name, "0"]);
        if (name === "com.vendor.service.unknown") continue; // not ours: the default policy decides
        expect({ who, name, code: r.code, msg: /not allowed to own|AccessDenied|Access denied/i.test(r.stderr) }).toEqual({ who, name, code: 1, msg: true });
      }
    }
  });

  test("the devservices user may own any recording pipeline name", async () => {
    const r = await run(["setpriv", `--reuid=${acc.uid}`, `--regid=${acc.gid}`, "--clear-groups", "busctl", `--address=${address}`, "call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName", "su", "com.vendor.pipeline.record.rec42", "0"]);
    expect(r).toMatchObject({ code: 0, stdout: "u 1\n" });
  });
});

describe("services anyone may call", () => {
  const anyone: Record<string, string> = {
    ...REAL,
    "com.vendor.service.camera2": "getCameraList",
    "com.vendor.service.mediaindexer": "getDeviceList",
    "com.vendor.pipeline.record.main": "subscribe",
  };
  for (const [busName, method] of Object.entries(anyone)) {
    test(`${busName}: nobody calls ${method}, Introspect, Peer.Ping, Properties.GetAll, Subscription.Cancel`, async () => {
      const p = path(busName);
      const rs = await Promise.all([
        callMethod("nobody", busName, method),
        call("nobody", busName, p, "org.freedesktop.DBus.Introspectable", "Introspect", ""),
        call("nobody", busName, p, "org.freedesktop.DBus.Peer", "Ping", ""),
        call("nobody", busName, p, "org.freedesktop.DBus.Properties", "GetAll", "s", busName),
        call("nobody", busName, p, "com.vendor.devservices.Subscription", "Cancel", "u", "7"),
        callMethod("root", busName, method),
      ]);
      rs.forEach((r, i) => expectAllowed(r, `${busName} call ${i}`));
      expect(rs[4]!.stdout).toBe("b false\n");
    });
  }

  test("an application (nobody) receives its subscription messages (unicast signals)", async () => {
    const p = spawn([...asUser("nobody"), app, "call", "--bus", address, "-n", "2", "-w", "5000", "com.vendor.service.testautomation/subscribeToEvents", '{"subscribe":true}'], { cwd: dir, stdout: "pipe", stderr: "inherit" });
    const out: string[] = [];
    const read = eachLine(p.stdout as ReadableStream<Uint8Array>, (l) => void (l.trim() && out.push(l)));
    // A nub (root) reports an event once the subscriber is in place (the CLI's first line).
    const root = await BusClient.connect(address);
    const stage = await root.subscribe("testautomation", "subscribeToCommands", { appInfo: { id: "a" }, name: "n", scene: "s", type: "t" }, () => {});
    await eventually(() => out.length >= 1, 10000);
    await root.call("testautomation", "notifyEvent", { stageId: stage.first.stageId, type: "policy" });
    await read;
    const lines = out.map((l) => JSON.parse(l));
    expect(lines).toEqual([
      { returnValue: true, subscribed: true },
      { returnValue: true, stageId: stage.first.stageId, type: "policy" },
    ]);
    root.close();
  });
});

describe("com.vendor.service.nettools", () => {
  const N = "com.vendor.service.nettools";
  const restricted = ["sethostname", "createVlan", "deleteVlan"];

  test("anyone calls the other methods and introspects", async () => {
    for (const m of ["gethostname", "ping", "arping", "checkhttp", "resolvehostname"]) expectAllowed(await callMethod("nobody", N, m), m);
    expectAllowed(await call("nobody", N, path(N), "org.freedesktop.DBus.Introspectable", "Introspect", ""), "Introspect");
  });

  test("sethostname, createVlan, deleteVlan: root or group devservices-net only", async () => {
    for (const m of restricted) {
      expectDenied(await callMethod("nobody", N, m), `nobody ${m}`);
      expectDenied(await callMethod(["devservices-media", "devservices-gpio"], N, m), `other groups ${m}`);
      expectAllowed(await callMethod(["devservices-net"], N, m), `devservices-net ${m}`);
      expectAllowed(await callMethod("root", N, m), `root ${m}`);
    }
  });

  test("a restricted member is refused on any interface (the rules name no interface)", async () => {
    expectDenied(await call("nobody", N, path(N), "com.vendor.devservices.Subscription", "sethostname"), "other interface");
    expectDenied(await call("nobody", N, path(N), "org.freedesktop.DBus.Peer", "createVlan"), "other interface");
  });
});

describe("com.vendor.service.videooutput", () => {
  const V = "com.vendor.service.videooutput";
  test("root or group devservices-media only; introspection and Cancel are open, as for every service", async () => {
    for (const who of ["nobody", ["devservices-net", "devservices-gpio"]] as Who[]) {
      expectDenied(await callMethod(who, V, "getStatus"), `${who} getStatus`);
      expectDenied(await callMethod(who, V, "register"), `${who} register`);
      expectAllowed(await call(who, V, path(V), "org.freedesktop.DBus.Introspectable", "Introspect", ""), `${who} Introspect`);
      expectAllowed(await call(who, V, path(V), "com.vendor.devservices.Subscription", "Cancel", "u", "1"), `${who} Cancel`);
    }
    for (const who of ["root", ["devservices-media"]] as Who[]) {
      expectAllowed(await callMethod(who, V, "getStatus"), `${who} getStatus`);
      expectAllowed(await callMethod(who, V, "display/getOutputCapabilities"), `${who} display/getOutputCapabilities`);
      expectAllowed(await call(who, V, path(V), "org.freedesktop.DBus.Introspectable", "Introspect", ""), `${who} Introspect`);
      expectAllowed(await call(who, V, path(V), "com.vendor.devservices.Subscription", "Cancel", "u", "1"), `${who} Cancel`);
    }
  });

  test("the media framework (group devservices-media) receives subscription messages", async () => {
    const p = spawn([...asUser(["devservices-media"]), app, "call", "--bus", address, "-n", "2", "-w", "5000", `${V}/register`, '{"subscribe":true}'], { cwd: dir, stdout: "pipe", stderr: "pipe" });
    const lines = (await new Response(p.stdout).text()).trim().split("\n").map((l) => JSON.parse(l));
    expect(lines).toEqual([{ returnValue: true, method: "register", subscribed: true }, { returnValue: true, method: "register", event: 1 }]);
    await eventually(() => fakeOut.includes(`ended ${V} register`), 5000);
  });
});

describe("com.vendor.service.peripheralmanager", () => {
  const P = "com.vendor.service.peripheralmanager";
  const groupOf = { gpio: "devservices-gpio", i2c: "devservices-i2c", spi: "devservices-spi", uart: "devservices-uart" } as const;

  for (const [proto, methods] of Object.entries(PERIPHERAL_METHODS) as [keyof typeof groupOf, string[]][]) {
    test(`${proto}/*: group ${groupOf[proto]} (and root) only, every member`, async () => {
      const others = Object.values(groupOf).filter((g) => g !== groupOf[proto]) as GroupName[];
      const rs = await Promise.all(
        methods.flatMap((m) => [
          callMethod([groupOf[proto]], P, m).then((r) => () => expectAllowed(r, `${groupOf[proto]} ${m}`)),
          callMethod("nobody", P, m).then((r) => () => expectDenied(r, `nobody ${m}`)),
          callMethod([...others, "devservices-net", "devservices-media"], P, m).then((r) => () => expectDenied(r, `other groups ${m}`)),
        ]),
      );
      rs.forEach((check) => check());
      expectAllowed(await callMethod("root", P, methods[0]!), `root ${methods[0]}`);
    });
  }

  test("anyone introspects it and cancels its own subscriptions", async () => {
    expectAllowed(await call("nobody", P, path(P), "org.freedesktop.DBus.Introspectable", "Introspect", ""), "Introspect");
    expectAllowed(await call("nobody", P, path(P), "com.vendor.devservices.Subscription", "Cancel", "u", "3"), "Cancel");
  });

  test("a gpio client subscribes to gpio/getValue, gets the change, and its Cancel arrives", async () => {
    const p = spawn([...asUser(["devservices-gpio"]), app, "call", "--bus", address, "-n", "2", "-w", "5000", `${P}/gpio/getValue`, '{"pin":"4","subscribe":true}'], { cwd: dir, stdout: "pipe", stderr: "pipe" });
    const lines = (await new Response(p.stdout).text()).trim().split("\n").map((l) => JSON.parse(l));
    expect(lines).toEqual([{ returnValue: true, method: "gpio/getValue", subscribed: true }, { returnValue: true, method: "gpio/getValue", event: 1 }]);
    await eventually(() => fakeOut.includes(`ended ${P} gpio/getValue`), 5000);
  });

  test("the policy lists exactly the spec's members: none open to everyone (deny by default), each allowed to its protocol's group only", async () => {
    // The service's table and the spec's members are the same methods.
    const { api } = await import("../../src/services/peripheralmanager/schemas");
    expect(Object.keys(api).sort()).toEqual(Object.values(PERIPHERAL_METHODS).flat().sort());
    const xml = readFileSync(join(POLICY_DIR, `${P}.conf`), "utf8");
    const defaultPolicy = /<policy context="default">([\s\S]*?)<\/policy>/.exec(xml)![1]!;
    const open = [...defaultPolicy.matchAll(new RegExp(`<allow [^>]*send_interface="${P}"[^>]*/>`, "g"))].map((m) => m[0]);
    expect(open).toEqual([]);
    expect(defaultPolicy).not.toMatch(new RegExp(`<allow send_destination="${P}"( send_path="[^"]*")?\\s*/>`));
    expect([...xml.matchAll(/<policy group="([^"]+)">/g)].map((m) => m[1]).sort()).toEqual(Object.values(groupOf).sort());
    for (const [proto, methods] of Object.entries(PERIPHERAL_METHODS)) {
      const g = groupOf[proto as keyof typeof groupOf];
      const block = new RegExp(`<policy group="${g}">([\\s\\S]*?)</policy>`).exec(xml)![1]!;
      expect([...block.matchAll(/send_member="([^"]+)"/g)].map((m) => m[1]).sort()).toEqual(methods.map(member).sort());
    }
  });
});

describe("one connection holding several names", () => {
  // devservices.service owns every name on one connection: a rule that lets anyone
  // call one name must not open another service's object on that connection.
  test("anyone-callable names do not open restricted objects on the same connection", async () => {
    const cases: [dest: string, at: string, iface: string, m: string][] = [
      ["com.vendor.service.camera2", "/com/vendor/service/videooutput", "com.vendor.service.videooutput", "getStatus"],
      ["com.vendor.service.mediaindexer", "/com/vendor/service/peripheralmanager", "com.vendor.service.peripheralmanager", "gpio_open"],
      ["com.vendor.service.camera2", "/com/vendor/service/nettools", "com.vendor.service.nettools", "sethostname"],
      ["com.vendor.pipeline.record.main", "/com/vendor/service/videooutput", "com.vendor.service.videooutput", "getStatus"],
      ["com.vendor.pipeline.record.main", "/com/vendor/service/nettools", "com.vendor.service.nettools", "createVlan"],
      ["com.vendor.pipeline.record.main", "/com/vendor/service/peripheralmanager", "com.vendor.service.peripheralmanager", "spi_transfer"],
    ];
    for (const [dest, at, iface, m] of cases) expectDenied(await call("nobody", dest, at, iface, m), `${dest} ${at} ${m}`);
    // ...while the unique name of the stand-ins' connection reaches what the caller may call.
    const owner = (await busctl("root", ["call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", "s", "com.vendor.service.camera2"])).stdout.split('"')[1]!;
    expectAllowed(await call("nobody", owner, "/com/vendor/service/camera2", "com.vendor.service.camera2", "getInfo"), "unique name, camera2");
    expectDenied(await call("nobody", owner, "/com/vendor/service/videooutput", "com.vendor.service.videooutput", "getStatus"), "unique name, videooutput");
  });
});

test("the test daemon loads every policy file the recipe installs", () => {
  // includedir takes every *.conf, as the recipe installs them (files/dbus/*.conf).
  const files = readdirSync(POLICY_DIR).filter((f) => f.endsWith(".conf")).sort();
  const expected = ALL_NAMES.map((n) => n.replace(/^com\.vendor\.pipeline\.record\..*/, "com.vendor.pipeline.record") + ".conf");
  expect(files).toEqual(expected.sort());
});
