// sethostname through systemd-hostnamed: how the packaged units set the name (no
// CAP_SYS_ADMIN, /etc read-only). The real systemd-hostnamed runs on the test's
// private bus, in the service's UTS namespace and in its mount namespace over an
// overlay of /etc, so neither the machine's name nor its /etc/hostname changes.
//   - root without CAP_SYS_ADMIN: auto picks hostnamed; the name is set and saved,
//     subscribers hear of it;
//   - another uid: hostnamed refuses it (no polkit on this bus):
//     "Error in calling sethostname", nothing changed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { hostname } from "node:os";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { BusClient } from "../../src/bus/client";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BINARY, eventually, openBusToAll } from "../helpers/harness";

const HOSTNAMED = ["/lib/systemd/systemd-hostnamed", "/usr/lib/systemd/systemd-hostnamed"].find((p) => existsSync(p));
const skip = process.getuid?.() !== 0 ? "not root" : !HOSTNAMED ? "systemd-hostnamed is not installed" : !existsSync(BINARY) ? "dist/devservices is not built" : null;
if (skip) console.warn(`nettools hostnamed tests skipped: ${skip}`);

interface Side {
  bus: PrivateBus;
  service: Subprocess;
  hostnamed: Subprocess;
  client: BusClient;
  /** The service's UTS namespace's name and its mount namespace's /etc/hostname. */
  kernelName(): string;
  savedName(): string;
  log: string[];
}

describe.skipIf(skip !== null)("sethostname through systemd-hostnamed", () => {
  let dir: string;
  let app: string;
  const sides: Side[] = [];
  const machine = hostname();
  const machineFile = readFileSync("/etc/hostname", "utf8");

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "nettools-hostnamed-"));
    chmodSync(dir, 0o755);
    app = join(dir, "devservices");
    copyFileSync(BINARY, app);
    chmodSync(app, 0o755);
  });

  afterAll(async () => {
    for (const s of sides) {
      s.client.close();
      for (const p of [s.hostnamed, s.service]) {
        p.kill("SIGKILL");
        await p.exited;
      }
      await s.bus.stop();
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
    expect(hostname()).toBe(machine);
    expect(readFileSync("/etc/hostname", "utf8")).toBe(machineFile);
  });

  /** The service (as `user`: a setpriv prefix) in new UTS and mount namespaces, hostnamed in the same ones. */
  async function start(tag: string, user: string[]): Promise<Side> {
    // A bus of its own: one hostnamed per bus, as on a device.
    const bus = await startPrivateBus();
    openBusToAll(bus.address);
    const root = join(dir, tag);
    for (const d of ["state", "upper", "work"]) mkdirSync(join(root, d), { recursive: true });
    chmodSync(root, 0o777);
    chmodSync(join(root, "state"), 0o777);
    const board = join(root, "board.json");
    writeFileSync(board, JSON.stringify({
      name: `nettools-hostnamed-${tag}`, backend: "virtual", services: ["nettools"],
      serviceConfig: { nettools: { configFile: null, hostnameFile: join(root, "unused-hostname") } },
    }));
    chmodSync(board, 0o644);
    const service = spawn(["unshare", "--uts", "--mount", "--propagation", "private", ...user,
      app, "serve", "--bus", bus.address, "--board", board, "--state-dir", join(root, "state"), "--log-level", "info", "nettools"], {
      stdout: "pipe", stderr: "inherit", env: { HOME: root, PATH: "/usr/bin:/bin", DEVSERVICES_LOG_PRIORITY_PREFIX: "0" },
    });
    const log: string[] = [];
    (async () => {
      for await (const chunk of service.stdout) log.push(...new TextDecoder().decode(chunk).split("\n").filter(Boolean));
    })();
    const client = await BusClient.connect(bus.address);
    await eventually(async () => {
      if (service.exitCode !== null) throw new Error(`the service exited: ${log.join("\n")}`);
      return client.hasOwner("com.vendor.service.nettools");
    }, 20000, 50);
    const ns = ["nsenter", "-t", String(service.pid), "--uts", "--mount"];
    const overlay = Bun.spawnSync([...ns, "mount", "-t", "overlay", "overlay", "-o",
      `lowerdir=/etc,upperdir=${join(root, "upper")},workdir=${join(root, "work")}`, "/etc"], { stderr: "pipe" });
    if (overlay.exitCode !== 0) throw new Error(`overlay on /etc: ${overlay.stderr.toString()}`);
    const hostnamed = spawn([...ns, "env", `DBUS_SYSTEM_BUS_ADDRESS=${bus.address}`, HOSTNAMED!], { stdout: "ignore", stderr: "ignore" });
    await eventually(() => client.hasOwner("org.freedesktop.hostname1"), 10000, 50);
    const side: Side = {
      bus, service, hostnamed, client, log,
      kernelName: () => Bun.spawnSync([...ns, "cat", "/proc/sys/kernel/hostname"]).stdout.toString().trim(),
      savedName: () => Bun.spawnSync([...ns, "cat", "/etc/hostname"]).stdout.toString().trim(),
    };
    sides.push(side);
    return side;
  }

  test("root without CAP_SYS_ADMIN: auto sets the name through hostnamed; it is saved and pushed", async () => {
    const s = await start("root", ["setpriv", "--inh-caps=-sys_admin", "--bounding-set=-sys_admin"]);
    expect(s.log.some((l) => l.includes("the host name is set through systemd-hostnamed"))).toBe(true);
    const pushed: any[] = [];
    const sub = await s.client.subscribe("nettools", "gethostname", { subscribe: true }, (m) => pushed.push(m));
    expect(sub.first).toEqual({ returnValue: true, hostname: machine, subscribed: true });
    expect(await s.client.call("nettools", "sethostname", { hostname: "via-hostnamed" })).toEqual({ returnValue: true });
    expect(s.kernelName()).toBe("via-hostnamed");
    expect(s.savedName()).toBe("via-hostnamed");
    expect(await s.client.call("nettools", "gethostname", {})).toEqual({ returnValue: true, hostname: "via-hostnamed" });
    await eventually(() => pushed.length > 0);
    expect(pushed).toEqual([{ returnValue: true, hostname: "via-hostnamed" }]);
    // A name the service's own rule refuses never reaches hostnamed.
    expect(await s.client.call("nettools", "sethostname", { hostname: "-bad-" })).toEqual({ returnValue: false, errorText: "Error in calling sethostname" });
    expect(s.kernelName()).toBe("via-hostnamed");
    await sub.cancel();
  });

  test("another uid: hostnamed refuses it; Error in calling sethostname, nothing changed", async () => {
    const s = await start("nobody", ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]);
    // The caller (root) passes the service's own access check; hostnamed checks the service's uid.
    expect(await s.client.call("nettools", "sethostname", { hostname: "refused-name" })).toEqual({ returnValue: false, errorText: "Error in calling sethostname" });
    expect(s.kernelName()).toBe(machine);
    expect(s.savedName()).toBe(machineFile.trim());
    expect(s.log.some((l) => l.includes("hostnamed SetStaticHostname failed"))).toBe(true);
  });
});
