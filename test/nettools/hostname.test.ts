// gethostname (and its subscription), sethostname (the syscall and the hostname
// file written atomically), and the access rule of the privileged methods checked
// against callers of other uids (setpriv running the shipped binary's `call`). The
// service has a UTS namespace of its own, so the machine's name never changes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { hostname } from "node:os";
import { readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { spawn } from "bun";
import { binaryForAnyUser, eventually, callAsUser, groupGid } from "../helpers/harness";
import { canRun, makeWorld, type World } from "./env";

const skip = canRun();
if (skip) console.warn(`nettools hostname tests skipped: ${skip}`);
const GROUP = "devservices-nettest";

describe.skipIf(skip !== null)("gethostname and sethostname", () => {
  let w: World;
  let app: string;
  let gid: number;
  const machine = hostname();
  beforeAll(async () => {
    gid = groupGid(GROUP);
    w = await makeWorld("host", { config: { accessGroup: GROUP } });
    app = binaryForAnyUser(w.dir);
  }, 60000);
  afterAll(async () => {
    await w?.stop();
    rmSync(w?.dir ?? "/nonexistent", { recursive: true, force: true });
    expect(hostname()).toBe(machine);
  });

  /** `devservices call` as another user (the shipped binary). */
  async function callAs(uid: number, groups: number[], method: string, payload: object) {
    return callAsUser({ app, bus: w.bus.address, cwd: w.dir, uid, groups }, `com.vendor.service.nettools/${method}`, payload);
  }

  test("gethostname answers the service's (UTS namespace's) name", async () => {
    expect(await w.call("gethostname")).toEqual({ returnValue: true, hostname: machine });
  });

  test("sethostname sets the name and writes the hostname file; subscribers hear of it, and of changes made by others", async () => {
    const c = await w.client();
    const got: any[] = [];
    const sub = await c.subscribe("nettools", "gethostname", { subscribe: true }, (m) => got.push(m));
    expect(sub.first).toEqual({ returnValue: true, hostname: machine, subscribed: true });
    expect(await w.call("sethostname", { hostname: "nt-one" })).toEqual({ returnValue: true });
    expect(await w.call("gethostname")).toEqual({ returnValue: true, hostname: "nt-one" });
    expect(readFileSync(w.hostnameFile, "utf8")).toBe("nt-one\n");
    // Written through a temporary file and a rename: nothing else is left in the directory.
    expect(readdirSync(join(w.dir, "etc"))).toEqual(["hostname"]);
    await eventually(() => got.length === 1);
    expect(got[0]).toEqual({ returnValue: true, hostname: "nt-one" });
    // Someone else changes the name in the service's UTS namespace.
    Bun.spawnSync(["nsenter", `--target=${w.service.pid}`, "--uts", "hostname", "nt-other"]);
    await eventually(() => got.length === 2);
    expect(got[1]).toEqual({ returnValue: true, hostname: "nt-other" });
    // The same name again is no change.
    expect(await w.call("sethostname", { hostname: "nt-other" })).toEqual({ returnValue: true });
    expect(await w.call("sethostname", { hostname: "nt-two.example.com" })).toEqual({ returnValue: true });
    await eventually(() => got.length === 3);
    expect(got[2]).toEqual({ returnValue: true, hostname: "nt-two.example.com" });
    await sub.cancel();
    expect(hostname()).toBe(machine);
  });

  test("names the kernel or RFC 1123 refuse: Error in calling sethostname, nothing changed", async () => {
    const before = (await w.call("gethostname")).hostname;
    const file = readFileSync(w.hostnameFile, "utf8");
    for (const bad of ["", "x".repeat(65), "-lead", "trail-", "a b", "a..b", "under_score", "a/b", "é"]) {
      expect(await w.call("sethostname", { hostname: bad })).toEqual({ returnValue: false, errorText: "Error in calling sethostname" });
    }
    expect((await w.call("gethostname")).hostname).toBe(before);
    expect(readFileSync(w.hostnameFile, "utf8")).toBe(file);
    expect(await w.call("sethostname", {})).toEqual({ returnValue: false, errorCode: 102, errorText: "Could not validate json message against schema" });
  });

  test("a hostname file that cannot be written: Error in setting the hostname file, and the kernel keeps its name", async () => {
    const before = (await w.call("gethostname")).hostname;
    const etc = join(w.dir, "etc");
    rmSync(etc, { recursive: true });
    writeFileSync(etc, "a file where the directory was\n");
    try {
      expect(await w.call("sethostname", { hostname: "nt-lost" })).toEqual({ returnValue: false, errorText: "Error in setting the hostname file" });
      expect((await w.call("gethostname")).hostname).toBe(before);
    } finally {
      rmSync(etc);
      mkdirSync(etc);
    }
  });

  test("access: another uid is refused sethostname, createVlan and deleteVlan; root and the group pass", async () => {
    const vlan = { index: 5, interface: { name: "s0" } };
    expect(await callAs(65534, [], "sethostname", { hostname: "nt-nobody" })).toEqual({
      returnValue: false, errorText: "Error in calling sethostname", reason: "Permission denied: sethostname is for root and the service's access group",
    });
    expect(await callAs(65534, [], "createVlan", vlan)).toEqual({
      returnValue: false, errorCode: 101, errorText: "Unknown error", reason: "Permission denied: createVlan is for root and the service's access group",
    });
    expect(await callAs(65534, [], "deleteVlan", vlan)).toMatchObject({ returnValue: false, errorCode: 101, errorText: "Unknown error" });
    expect((await w.call("gethostname")).hostname).not.toBe("nt-nobody");
    // Anyone may read and ping.
    expect((await callAs(65534, [], "gethostname", {})).returnValue).toBe(true);
    expect(await callAs(65534, [], "ping", { hostname: "192.0.2.2" })).toMatchObject({ returnValue: true, ipaddress: "192.0.2.2" });
    // A member of the configured group, and root, are let in.
    expect(await callAs(65534, [gid], "sethostname", { hostname: "nt-member" })).toEqual({ returnValue: true });
    expect(await callAs(65534, [gid], "deleteVlan", vlan)).toEqual({ returnValue: false, errorCode: 110, errorText: "VLAN Index does not Exist" });
    expect(await callAs(0, [], "sethostname", { hostname: "nt-root" })).toEqual({ returnValue: true });
    expect((await w.call("gethostname")).hostname).toBe("nt-root");
    expect(w.log.some((l) => l.includes("caller refused by the method's access rule") && l.includes("\"uid\":65534"))).toBe(true);
  });
});
