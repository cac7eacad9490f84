// `devservices serve` under a Type=notify unit: the real executable, on a private bus,
// tells a NOTIFY_SOCKET made here READY=1 once its names are owned, WATCHDOG=1 every
// half WATCHDOG_USEC, and STOPPING=1 when it is stopped (sd_notify over a datagram).
import { test, expect, beforeAll, afterAll, describe } from "bun:test";
import { spawn } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY } from "../helpers/harness";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { notifyAddress, watchdogUsec, sdNotify } from "../../src/ffi/sdnotify";
import { NotifySocket } from "./notify-socket";

let bus: PrivateBus;
let dir: string;

beforeAll(async () => {
  bus = await startPrivateBus();
  dir = mkdtempSync(join(tmpdir(), "sdnotify-"));
});
afterAll(async () => {
  await bus?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function serve(env: Record<string, string>, services = ["testautomation", "filecache"]) {
  return spawn([BINARY, "serve", "--bus", bus.address, "--state-dir", join(dir, "state"), "--log-level", "error", ...services], {
    stdout: "ignore",
    stderr: "inherit",
    env: { ...process.env, ...env },
  });
}

describe("serve and a NOTIFY_SOCKET", () => {
  test("path socket: READY=1 with STATUS= once the names are owned, WATCHDOG=1 every WATCHDOG_USEC/2, STOPPING=1 on SIGTERM", async () => {
    const sock = new NotifySocket(join(dir, "notify.sock"));
    const p = serve({ NOTIFY_SOCKET: sock.address, WATCHDOG_USEC: "400000" });
    try {
      const ready = await sock.next("READY");
      expect(ready.fields).toEqual({ READY: "1", STATUS: "serving testautomation filecache on board virtual" });
      expect(ready.pid).toBe(p.pid); // NotifyAccess=main: the main process itself tells
      // Both names were on the bus when READY=1 was sent (a call to a name nobody owns fails).
      const client = await BusClient.connect(bus.address);
      expect(await client.call("testautomation", "ping", { Message: "ready" })).toEqual({ returnValue: true, Message: "ready" });
      expect(await client.call("filecache", "GetCacheStatus", {})).toMatchObject({ returnValue: true });
      client.close();
      // Watchdog: every 200 ms (half of 400 ms), from the main process, after READY.
      await Bun.sleep(1100);
      const pings = sock.received.filter((r) => "WATCHDOG" in r.fields);
      expect(pings.length).toBeGreaterThanOrEqual(4);
      expect(pings.every((r) => r.fields.WATCHDOG === "1" && r.pid === p.pid && r.at > ready.at)).toBe(true);
      const gaps = pings.slice(1).map((r, i) => r.at - pings[i]!.at).sort((a, b) => a - b);
      const median = gaps[Math.floor(gaps.length / 2)]!;
      expect(median).toBeGreaterThan(150);
      expect(median).toBeLessThan(300);
      const before = sock.received.length;
      p.kill("SIGTERM");
      const stopping = await sock.next("STOPPING", 10000, before);
      expect(stopping.fields.STOPPING).toBe("1");
      expect(stopping.pid).toBe(p.pid);
      expect(await p.exited).toBe(0);
      // Nothing after STOPPING=1: the watchdog stopped with it.
      expect(sock.received.slice(sock.received.indexOf(stopping) + 1)).toEqual([]);
    } finally {
      p.kill();
      sock.close();
    }
  });

  test("abstract socket (@name): READY=1 and STOPPING=1; no watchdog without WATCHDOG_USEC", async () => {
    const sock = new NotifySocket(`@devservices-test-${process.pid}-${Date.now()}`);
    const p = serve({ NOTIFY_SOCKET: sock.address }, ["testautomation"]);
    try {
      const ready = await sock.next("READY");
      expect(ready.fields).toEqual({ READY: "1", STATUS: "serving testautomation on board virtual" });
      await Bun.sleep(500);
      p.kill("SIGTERM");
      await sock.next("STOPPING", 10000);
      expect(await p.exited).toBe(0);
      expect(sock.received.map((r) => Object.keys(r.fields)[0])).toEqual(["READY", "STOPPING"]);
    } finally {
      p.kill();
      sock.close();
    }
  });

  test("a watchdog meant for another process (WATCHDOG_PID) is not answered", async () => {
    const sock = new NotifySocket(join(dir, "notify2.sock"));
    const p = serve({ NOTIFY_SOCKET: sock.address, WATCHDOG_USEC: "200000", WATCHDOG_PID: "1" }, ["testautomation"]);
    try {
      await sock.next("READY");
      await Bun.sleep(600);
      expect(sock.received.filter((r) => "WATCHDOG" in r.fields)).toEqual([]);
    } finally {
      p.kill("SIGTERM");
      await p.exited;
      sock.close();
    }
  });
});

describe("src/ffi/sdnotify.ts", () => {
  test("NOTIFY_SOCKET addresses: a path ends in NUL, an abstract name is exactly its bytes", () => {
    const path = notifyAddress("/run/systemd/notify")!;
    expect(path.length).toBe(2 + "/run/systemd/notify".length + 1);
    const abs = notifyAddress("@sd-notify")!;
    expect(abs.length).toBe(2 + 1 + "sd-notify".length);
    expect(abs[2]).toBe(0);
    expect(abs.subarray(3).toString()).toBe("sd-notify");
    expect(notifyAddress(undefined)).toBeNull();
    expect(notifyAddress("")).toBeNull();
    expect(notifyAddress("vsock:2:1234")).toBeNull();
  });

  test("sdNotify says false when there is no socket, and throws when the socket is gone", () => {
    expect(sdNotify("READY=1", undefined)).toBe(false);
    expect(() => sdNotify("READY=1", join(dir, "nobody-listens.sock"))).toThrow(/sendmsg\(NOTIFY_SOCKET\)/);
  });

  test("watchdogUsec follows sd_watchdog_enabled: WATCHDOG_USEC, for this pid only", () => {
    expect(watchdogUsec({ WATCHDOG_USEC: "30000000" }, 42)).toBe(30000000);
    expect(watchdogUsec({ WATCHDOG_USEC: "30000000", WATCHDOG_PID: "42" }, 42)).toBe(30000000);
    expect(watchdogUsec({ WATCHDOG_USEC: "30000000", WATCHDOG_PID: "43" }, 42)).toBeNull();
    expect(watchdogUsec({}, 42)).toBeNull();
    expect(watchdogUsec({ WATCHDOG_USEC: "0" }, 42)).toBeNull();
    expect(watchdogUsec({ WATCHDOG_USEC: "x" }, 42)).toBeNull();
  });
});
