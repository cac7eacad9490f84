// The camera service acts with the caller's rights: opening a camera is for root and
// devservices-camera; capture files are created by the caller (its uid, groups, no
// symlink on the path, never the state directory); a handle is its holder's (or
// root's). The service runs in its own process (`bun src/main.ts serve camera2`) on a
// private bus; clients are processes of other uids (setpriv) running
// test/fixtures/camera-client.ts.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { BUN, ROOT, eachLine, groupGid, serveFromSource, swapAs, type Served } from "../helpers/harness";
import type { PrivateBus } from "../../src/bus/daemon";
import type { BusClient } from "../../src/bus/client";
import type { Json } from "../../src/core/errors";
import { CAMERA, err } from "./setup";

const GROUP = "devservices-camera";
/** uid 1 (daemon): another uid the bus daemon knows (it refuses uids without a passwd entry). */
const NOBODY = 65534, OTHER = 1;
const skip = process.getuid?.() !== 0 ? "needs root (setpriv, chown)" : null;
if (skip) console.warn(`camera access tests skipped: ${skip}`);

/** Every path under dir (what a directory holds, recursively), for "untouched" checks. */
function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      out.push(`${p} ${lstatSync(p).size}`);
      if (e.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return out.sort();
}

interface Client {
  call(method: string, payload?: Json): Promise<Json>;
  close(): Promise<void>;
}

/** A client process of uid with groups (none: no supplementary groups) on the bus at address; it is added to clients. */
async function clientOf(address: string, home: string, clients: Client[], uid: number, groups: number[]): Promise<Client> {
  const p = spawn(
    ["setpriv", `--reuid=${uid}`, `--regid=${uid}`, groups.length ? `--groups=${groups.join(",")}` : "--clear-groups", BUN, join(ROOT, "test/fixtures/camera-client.ts")],
    { stdin: "pipe", stdout: "pipe", stderr: "inherit", env: { DEVSERVICES_BUS: address, HOME: home, PATH: process.env.PATH ?? "/usr/bin:/bin" } },
  );
  const lines: string[] = [];
  const waiting: ((l: string) => void)[] = [];
  void eachLine(p.stdout, (l) => {
    const w = waiting.shift();
    if (w) w(l);
    else lines.push(l);
  });
  const next = () =>
    new Promise<Json>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`client of uid ${uid}: no answer`)), 25000);
      const take = (l: string) => {
        clearTimeout(t);
        resolve(JSON.parse(l));
      };
      const l = lines.shift();
      if (l !== undefined) take(l);
      else waiting.push(take);
    });
  await next(); // ready
  let queue = Promise.resolve();
  const c: Client = {
    call(method, payload = {}) {
      const r = queue.then(() => {
        p.stdin.write(`${JSON.stringify([method, payload])}\n`);
        p.stdin.flush();
        return next();
      });
      queue = r.then(() => {}, () => {});
      return r;
    },
    async close() {
      p.kill("SIGKILL");
      await p.exited;
    },
  };
  clients.push(c);
  return c;
}

describe.skipIf(skip !== null)("camera: the caller's rights", () => {
  let bus: PrivateBus;
  let control: BusClient;
  let dir: string, state: string, cwd: string, rootDir: string, mine: string, home: string;
  let gid: number;
  let service: Subprocess;
  let served: Served | undefined;
  const clients: Client[] = [];

  beforeAll(async () => {
    gid = groupGid(GROUP);
    dir = mkdtempSync(join(tmpdir(), "camera-access-"));
    chmodSync(dir, 0o755);
    state = join(dir, "state");
    cwd = join(dir, "cwd");
    rootDir = join(dir, "root");
    mine = join(dir, "mine");
    home = join(dir, "home");
    for (const d of [state, cwd, join(cwd, "pics"), rootDir, mine, home]) mkdirSync(d, { mode: 0o755 });
    chownSync(mine, NOBODY, NOBODY);
    chmodSync(home, 0o1777);
    served = await serveFromSource(["camera2", "--state-dir", state, "--log-level", "warn"], [CAMERA], cwd);
    ({ bus, control, service } = served);
  }, 30000);

  // A test's clients go with it (a failed one must not leave a camera held).
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close();
  });

  afterAll(async () => {
    await served?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const clientAs = (uid: number, groups: number[]) => clientOf(bus.address, home, clients, uid, groups);

  const openAndStart = async (c: Client) => {
    const o = await c.call("open", { id: "camera1" });
    expect(o).toEqual({ returnValue: true, handle: expect.any(Number) });
    const h = o.handle as number;
    expect((await c.call("startCamera", { handle: h })).returnValue).toBe(true);
    return h;
  };

  test("without devservices-camera a uid is refused open (3), and holds nothing", async () => {
    const nobody = await clientAs(NOBODY, []);
    expect(await nobody.call("open", { id: "camera1" })).toEqual(err(3, "Cannot open device"));
    expect(await nobody.call("open", { id: "camera1", mode: "secondary" })).toEqual(err(3, "Cannot open device"));
    // Reading stays open to every caller.
    expect(await nobody.call("getCameraList")).toEqual({ returnValue: true, deviceList: [{ id: "camera1" }] });
    // Nothing was taken: the camera is free for a member of the group.
    const member = await clientAs(NOBODY, [gid]);
    const o = await member.call("open", { id: "camera1" });
    expect(o.returnValue).toBe(true);
    expect(await member.call("close", { handle: o.handle as number })).toEqual({ returnValue: true });
    await nobody.close();
    await member.close();
  }, 60000);

  test("capture writes only where the caller may: root's directory, the state directory, a relative path and a symlink are 45 and untouched", async () => {
    const before = tree(state);
    const link = join(mine, "to-root");
    symlinkSync(rootDir, link);
    const m = await clientAs(NOBODY, [gid]);
    const h = await openAndStart(m);
    const refused = err(45, "Cannot write at specified location");
    expect(await m.call("capture", { handle: h, path: rootDir })).toEqual(refused);
    expect(await m.call("capture", { handle: h, path: state })).toEqual(refused);
    expect(await m.call("capture", { handle: h, path: join(state, "camera2") })).toEqual(refused);
    expect(await m.call("capture", { handle: h, path: "pics" })).toEqual(refused);
    expect(await m.call("capture", { handle: h, path: link })).toEqual(refused);
    expect(await m.call("capture", { handle: h, path: `${mine}/../root` })).toEqual(refused);
    const fmt = { width: 640, height: 480, format: "YUV", mode: "MODE_BURST", nimage: 2 };
    expect(await m.call("startCapture", { handle: h, params: fmt, path: rootDir })).toEqual(refused);
    expect(await m.call("startCapture", { handle: h, params: fmt, path: "pics" })).toEqual(refused);
    expect(readdirSync(rootDir)).toEqual([]);
    expect(readdirSync(join(cwd, "pics"))).toEqual([]);
    expect(tree(state)).toEqual(before);

    // The caller's own directory: files that are the caller's.
    const r = await m.call("capture", { handle: h, nimage: 2, path: mine });
    expect(r.returnValue).toBe(true);
    const files = r.path as string[];
    expect(files).toHaveLength(2);
    for (const f of files) {
      expect(f.startsWith(`${mine}/Picture`)).toBe(true);
      expect(statSync(f).uid).toBe(NOBODY);
      expect([...readFileSync(f).subarray(0, 2)]).toEqual([0xff, 0xd8]);
    }
    expect(await m.call("stopCamera", { handle: h })).toEqual({ returnValue: true });
    expect(await m.call("close", { handle: h })).toEqual({ returnValue: true });
    await m.close();
    rmSync(link);
  }, 60000);

  test("a handle is its holder's: another uid and another process of the same uid are refused it; root may act on it", async () => {
    const a = await clientAs(NOBODY, [gid]);
    const h = await openAndStart(a);
    // The holder itself reads the stream's fd (over its second connection).
    expect(await a.call("getFd", { handle: h, type: "buffer" })).toEqual({ returnValue: true, fd: true });
    const fmt = { width: 640, height: 480, format: "YUV", fps: 30 };
    const solutions = [{ name: "AutoContrast", params: { enable: true } }];
    for (const b of [await clientAs(OTHER, [gid]), await clientAs(NOBODY, [gid])]) {
      expect(await b.call("capture", { handle: h, path: mine })).toEqual(err(47, "Wrong handle"));
      expect(await b.call("startCapture", { handle: h, params: { ...fmt, mode: "MODE_BURST", nimage: 1 }, path: mine })).toEqual(err(47, "Wrong handle"));
      expect(await b.call("stopCapture", { handle: h })).toEqual(err(47, "Wrong handle"));
      expect(await b.call("setFormat", { handle: h, params: fmt })).toEqual(err(47, "Wrong handle"));
      expect(await b.call("setProperties", { handle: h, params: { brightness: { value: 1 } } })).toEqual(err(47, "Wrong handle"));
      expect(await b.call("getFd", { handle: h, type: "buffer" })).toEqual({ ...err(47, "Wrong handle"), fd: false });
      expect(await b.call("getSolutions", { handle: h })).toEqual(err(47, "Wrong handle"));
      expect(await b.call("setSolutions", { handle: h, solutions })).toEqual(err(47, "Wrong handle"));
      // Naming the camera instead of the handle changes nothing either.
      expect(await b.call("setSolutions", { id: "camera1", solutions })).toEqual(err(47, "Wrong handle"));
      expect(await b.call("stopCamera", { handle: h })).toEqual(err(32, "Wrong param"));
      expect(await b.call("stopPreview", { handle: h })).toEqual(err(32, "Wrong param"));
      expect(await b.call("close", { handle: h })).toEqual(err(200, "Invalid state"));
      await b.close();
    }
    expect((await a.call("getSolutions", { handle: h })).solutions).toContainEqual({ name: "AutoContrast", params: { enable: false }, supported: true });
    // Root may act on every client's handle.
    const root = await clientAs(0, []);
    expect(await root.call("stopCamera", { handle: h })).toEqual({ returnValue: true });
    expect(await root.call("close", { handle: h })).toEqual({ returnValue: true });
    expect(await a.call("close", { handle: h })).toEqual(err(200, "Invalid state"));
    await root.close();
    await a.close();
  }, 90000);

  test("a directory swapped with a symlink to a directory of root's while capture writes there: root's directory is never written", async () => {
    const swap = join(mine, "swap");
    const outside = join(dir, "outside");
    mkdirSync(outside, { mode: 0o755 });
    // Another process of the caller's uid swaps mine/swap between a directory and a symlink, each for about a frame's time.
    const swapper = swapAs(NOBODY, join(mine, "swap"), outside, 20);
    const m = await clientAs(NOBODY, [gid]);
    let written = 0, refused = 0;
    try {
      const h = await openAndStart(m);
      const end = Date.now() + 6000;
      for (let i = 0; i < 150 && Date.now() < end; i++) {
        const r = await m.call("capture", { handle: h, nimage: 1, path: swap });
        if (r.returnValue === true) written++;
        else refused++;
        expect(readdirSync(outside)).toEqual([]);
      }
      expect(await m.call("stopCamera", { handle: h })).toEqual({ returnValue: true });
    } finally {
      swapper.kill("SIGKILL");
      await swapper.exited;
      await m.close();
    }
    console.log(`capture into a swapped directory: ${written} written, ${refused} refused`);
    expect(written + refused).toBeGreaterThan(5);
    // The swap raced the captures: some met the symlink (refused), some the directory.
    expect(refused).toBeGreaterThan(0);
    expect(readdirSync(outside)).toEqual([]);
  }, 60000);
});

describe.skipIf(skip !== null)("camera: a configured access group and appIds", () => {
  /** The group the board names in place of devservices-camera. */
  const CONFIGURED = "devservices-camtest";
  const APP = "com.vendor.app.camera";
  let bus: PrivateBus;
  let control: BusClient;
  let dir: string;
  let service: Subprocess;
  let served: Served | undefined;
  const clients: Client[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "camera-access-group-"));
    chmodSync(dir, 0o755);
    const board = join(dir, "board.json");
    writeFileSync(board, JSON.stringify({
      name: "camera-access-group", backend: "virtual", services: ["camera2"],
      serviceConfig: { camera2: { accessGroup: CONFIGURED, appIds: [APP] } },
    }));
    served = await serveFromSource(["camera2", "--board", board, "--state-dir", join(dir, "state"), "--log-level", "error"], [CAMERA], dir);
    ({ bus, control, service } = served);
  }, 30000);

  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close();
  });

  afterAll(async () => {
    await served?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("open is for the configured group in place of devservices-camera, and a listed appId lets no one else in", async () => {
    const configured = groupGid(CONFIGURED);
    const table = groupGid(GROUP);
    const as = (groups: number[]) => clientOf(bus.address, dir, clients, NOBODY, groups);
    const refused = err(3, "Cannot open device");
    // A listed appId is not a credential: without the group it opens nothing.
    const none = await as([]);
    expect(await none.call("open", { id: "camera1", appId: APP })).toEqual(refused);
    expect(await none.call("open", { id: "camera1" })).toEqual(refused);
    // The table's group is replaced by the configured one.
    const tableMember = await as([table]);
    expect(await tableMember.call("open", { id: "camera1", appId: APP })).toEqual(refused);
    expect(await tableMember.call("open", { id: "camera1" })).toEqual(refused);
    // A member of the configured group: an unlisted appId is refused, a listed one or none opens.
    const member = await as([configured]);
    expect(await member.call("open", { id: "camera1", appId: "com.other.app" })).toEqual(refused);
    for (const payload of [{ id: "camera1", appId: APP }, { id: "camera1" }]) {
      const o = await member.call("open", payload);
      expect(o).toEqual({ returnValue: true, handle: expect.any(Number) });
      expect(await member.call("close", { handle: o.handle as number })).toEqual({ returnValue: true });
    }
  }, 60000);
});
