// The client examples (examples/c, examples/python) against `devservices serve` of
// the virtual board on a private bus. Both languages' programs take the same
// arguments and print the same lines (examples/README.md), so one suite checks both.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { spawn, type Subprocess } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { BINARY, binaryBuilt, eachLine, eventually, ended } from "../helpers/harness";
import { SIGNAL } from "../../src/bus/codec";

const POWER = "com.vendor.service.power2";
const CAMERA = "com.vendor.service.camera2";
const TA = "com.vendor.service.testautomation";

/** A `devservices serve` process of the virtual board on its own private bus. */
export interface Served {
  bus: PrivateBus;
  serve: Subprocess;
  client: BusClient;
  stop(): Promise<void>;
}

export async function serve(services: string[]): Promise<Served> {
  const bus = await startPrivateBus();
  const state = mkdtempSync(join(tmpdir(), "examples-state-"));
  const proc = spawn([BINARY, "serve", "--bus", bus.address, "--board", "virtual", "--state-dir", state, "--log-level", "error", ...services], { env: { ...process.env },
    stdout: "ignore",
    stderr: "inherit",
  });
  let client: BusClient | undefined;
  try {
    client = await BusClient.connect(bus.address);
    // The services start side by side: wait until each one's name is owned.
    await eventually(async () => (await Promise.all(services.map((n) => client!.hasOwner(`com.vendor.service.${n}`)))).every(Boolean), 15000, 100);
  } catch (e) {
    // A start that fails leaves nothing running.
    client?.close();
    await ended(proc);
    await bus.stop();
    rmSync(state, { recursive: true, force: true });
    throw e;
  }
  return {
    bus,
    serve: proc,
    client,
    async stop() {
      client.close();
      proc.kill("SIGKILL");
      await proc.exited;
      await bus.stop();
      rmSync(state, { recursive: true, force: true });
    },
  };
}

/** One example program started with the bus address in DEVSERVICES_BUS; its stdout lines as they come. */
export function start(argv: string[], address: string) {
  const proc = spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, DEVSERVICES_BUS: address } });
  const lines: string[] = [];
  const done = eachLine(proc.stdout, (l) => lines.push(l), { last: true });
  const stderr = new Response(proc.stderr).text();
  return {
    proc,
    lines,
    /** Waits for a line starting with `prefix`. */
    waitFor: (prefix: string, timeoutMs = 10000) =>
      eventually(() => lines.find((l) => l.startsWith(prefix)), timeoutMs, 10).catch(async () => {
        throw new Error(`no line '${prefix}...' from ${argv.join(" ")}; got:\n${lines.join("\n")}`);
      }),
    /** Exit code, every stdout line and stderr, the process bounded to timeoutMs. */
    async finish(timeoutMs = 15000) {
      const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
      const code = await proc.exited;
      clearTimeout(timer);
      await done;
      return { code, lines, stderr: await stderr };
    },
  };
}

export async function run(argv: string[], address: string, timeoutMs = 15000) {
  return start(argv, address).finish(timeoutMs);
}

/** The unique name of the connection of process `pid`. */
async function uniqueNameOf(client: BusClient, pid: number): Promise<string> {
  const DBUS = { destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus" };
  const names = (await client.callRaw({ ...DBUS, member: "ListNames" })).body[0] as string[];
  for (const n of names.filter((n) => n.startsWith(":"))) {
    const r = await client.callRaw({ ...DBUS, member: "GetConnectionUnixProcessID", signature: "s", body: [n] }).catch(() => null);
    if (r?.body[0] === pid) return n;
  }
  throw new Error(`no connection of process ${pid}`);
}

const json = (line: string | undefined, prefix: string) => {
  expect(line?.startsWith(prefix + " ")).toBe(true);
  return JSON.parse(line!.slice(prefix.length + 1));
};

export interface Example {
  /** The command line of an example: "call", "subscribe" or "camera_frames", then its arguments. */
  argv(program: "call" | "subscribe" | "camera_frames", args: string[]): string[];
}

/**
 * The suite both languages pass. `ready` builds or checks the programs and returns
 * the example (or a reason to skip: a tool scripts/setup installs is missing).
 */
export function exampleSuite(language: string, ready: () => Promise<Example | string>) {
  let ex: Example | undefined;
  let s: Served;
  let skip: string | null = binaryBuilt() ? null : "dist/devservices is not built (bun run build)";
  beforeAll(async () => {
    if (skip) return;
    const r = await ready();
    if (typeof r === "string") skip = r;
    else ex = r;
    if (skip) return console.warn(`test/examples (${language}) skipped: ${skip}`);
    s = await serve(["power2", "testautomation", "camera2", "peripheralmanager"]);
  }, 120000);
  afterAll(async () => {
    if (s) await s.stop();
  });
  const t = (name: string, fn: () => Promise<void>, timeout = 30000) => test(`${language}: ${name}`, async () => (skip ? console.warn(`skipped: ${skip}`) : fn()), timeout);
  const addr = () => s.bus.address;

  t("one-shot calls: power2 getState, testautomation ping, and a method path with '/' (peripheralmanager i2c/list)", async () => {
    let r = await run(ex!.argv("call", [POWER, "getState", '{"subscribe":false}']), addr());
    expect(r.code).toBe(0);
    expect(json(r.lines[0], "response")).toEqual({ returnValue: true, state: "ActiveState", subscribed: false });
    // Escapes and UTF-8 pass through.
    r = await run(ex!.argv("call", [TA, "ping", JSON.stringify({ Message: 'say "hi" ü' })]), addr());
    expect(r.code).toBe(0);
    expect(json(r.lines[0], "response")).toEqual({ returnValue: true, Message: 'say "hi" ü' });
    expect(r.lines.length).toBe(1);
    r = await run(ex!.argv("call", ["com.vendor.service.peripheralmanager", "i2c/list", '{"verbose":true}']), addr());
    expect(r.code).toBe(0);
    expect(json(r.lines[0], "response")).toMatchObject({ returnValue: true, i2cList: ["I2C0"] });
  });

  t("an error answer is shown with its code and text; a D-Bus error with its name", async () => {
    let r = await run(ex!.argv("call", [CAMERA, "getInfo", '{"id":"camera9"}']), addr());
    expect(r.code).toBe(1);
    expect(json(r.lines[0], "response")).toEqual({ returnValue: false, errorCode: 13, errorText: "There is no device" });
    expect(r.lines[1]).toBe("error 13: There is no device");
    // The empty payload means {}; getPowerOnReason wants a subscribe field.
    r = await run(ex!.argv("call", [POWER, "getPowerOnReason"]), addr());
    expect(r.code).toBe(1);
    expect(r.lines[1]).toBe("error 2: Invalid JSON format");
    r = await run(ex!.argv("call", [POWER, "noSuchMethod", "{}"]), addr());
    expect(r.code).toBe(2);
    expect(r.lines[0]).toStartWith("dbus-error org.freedesktop.DBus.Error.UnknownMethod: ");
  });

  t("a subscription: the first response, three pushes in order, then Cancel answers true", async () => {
    expect(await s.client.call(POWER, "setPowerOnReason", { reason: "before" })).toEqual({ returnValue: true });
    const p = start(ex!.argv("subscribe", [POWER, "getPowerOnReason", '{"subscribe":true}', "3"]), addr());
    expect(json(await p.waitFor("first"), "first")).toEqual({ returnValue: true, subscribed: true, reason: "before" });
    for (const reason of ["r1", "r2", "r3"]) expect(await s.client.call(POWER, "setPowerOnReason", { reason })).toEqual({ returnValue: true });
    const r = await p.finish();
    expect(r.code).toBe(0);
    expect(r.lines.filter((l) => l.startsWith("push ")).map((l) => json(l, "push"))).toEqual([{ returnValue: true, reason: "r1" }, { returnValue: true, reason: "r2" }, { returnValue: true, reason: "r3" }]);
    expect(r.lines.at(-1)).toBe("cancelled true");
  });

  t("Push and Ended from a connection other than the service's are ignored", async () => {
    const p = start(ex!.argv("subscribe", [POWER, "getPowerOnReason", '{"subscribe":true}', "1"]), addr());
    await p.waitFor("first");
    const name = await uniqueNameOf(s.client, p.proc.pid);
    // Another peer sends the example Push and Ended for every likely serial, on the service's path.
    for (let serial = 1; serial <= 64; serial++) {
      const forged = { type: SIGNAL, path: "/com/vendor/service/power2", interface: "com.vendor.devservices.Subscription", destination: name };
      s.client.conn.send({ ...forged, member: "Push", signature: "us", body: [serial, '{"forged":true}'] } as any);
      s.client.conn.send({ ...forged, member: "Ended", signature: "u", body: [serial] } as any);
    }
    // Sent after the forged signals on the same connection: the daemon delivers those first.
    expect(await s.client.call(POWER, "setPowerOnReason", { reason: "real" })).toEqual({ returnValue: true });
    const r = await p.finish();
    expect(r.lines.slice(1)).toEqual(['push {"returnValue":true,"reason":"real"}', "cancelled true"]);
    expect(r.code).toBe(0);
  });

  t("a subscribing call answered with an error opens nothing and shows the error", async () => {
    let r = await run(ex!.argv("subscribe", [CAMERA, "getInfo", '{"id":"camera9","subscribe":true}', "1"]), addr());
    expect(r.code).toBe(1);
    expect(r.lines).toEqual(['first {"returnValue":false,"errorCode":13,"errorText":"There is no device"}', "error 13: There is no device"]);
    r = await run(ex!.argv("subscribe", [POWER, "getState", '{"subscribe":false}', "1"]), addr());
    expect(r.code).toBe(1);
    expect(r.lines.at(-1)).toBe("not subscribed");
  });

  t("camera frames from shared memory: open, startPreview, 30 frames without a gap through the eventfd, stop, close", async () => {
    const r = await run(ex!.argv("camera_frames", ["camera1", "window0", "30"]), addr(), 20000);
    expect(r.code).toBe(0);
    expect(r.lines[0]).toMatch(/^handle \d+$/);
    expect(r.lines[1]).toBe("ring 640x480 fourcc YUYV fps 30.000 slots 8");
    const frames = r.lines.filter((l) => l.startsWith("frame ")).map((l) => l.split(" ").map(Number));
    expect(frames.length).toBe(30);
    for (let i = 1; i < frames.length; i++) {
      expect(frames[i]![1]).toBe(frames[i - 1]![1]! + 1); // frame number
      expect(frames[i]![3]).toBe(frames[i - 1]![3]! + 1); // device sequence
      expect(frames[i]![7]).toBeGreaterThan(frames[i - 1]![7]!); // timestamp
    }
    for (const f of frames) expect(f[5]).toBe(640 * 480 * 2);
    expect(r.lines.slice(-2)).toEqual(["lost 0", "stopped"]);
    // The example closed its handle: the camera's primary handle is free again.
    const opened = await s.client.call(CAMERA, "open", { id: "camera1" });
    expect(opened.returnValue).toBe(true);
    expect(await s.client.call(CAMERA, "close", { handle: opened.handle })).toEqual({ returnValue: true });
  });

  t("camera errors are shown: no such camera (13), no such window (106)", async () => {
    let r = await run(ex!.argv("camera_frames", ["camera9", "window0", "1"]), addr());
    expect(r.code).toBe(1);
    expect(r.lines).toEqual(["error 13: There is no device"]);
    r = await run(ex!.argv("camera_frames", ["camera1", "window7", "1"]), addr());
    expect(r.code).toBe(1);
    expect(r.lines[1]).toBe("error 106: Invalid windowId");
  });

  t("a service that stops ends the subscription (Ended); one that is killed is noticed through NameOwnerChanged", async () => {
    for (const [signal, last] of [["SIGTERM", "ended"], ["SIGKILL", "service gone"]] as const) {
      const own = await serve(["power2"]);
      try {
        const p = start(ex!.argv("subscribe", [POWER, "getPowerOnReason", '{"subscribe":true}', "5"]), own.bus.address);
        await p.waitFor("first");
        own.serve.kill(signal);
        const r = await p.finish();
        expect(r.lines.at(-1)).toBe(last);
        expect(r.code).toBe(last === "ended" ? 0 : 1);
      } finally {
        await own.stop();
      }
    }
  }, 60000);
}
