// One service's broken state does not take the others down: the shipped binary with
// the file cache's state directory on a read-only file system and the media
// indexer's state directory a plain file. Those two fail alone (names not owned, one
// log line each naming the service, the path and the errno), the others serve, and
// systemd hears READY=1 with a STATUS that names what failed.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { spawn } from "bun";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, binaryBuilt } from "../helpers/harness";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { NotifySocket } from "../packaging/notify-socket";

const skip = process.getuid?.() !== 0 ? "needs root (mount)" : !binaryBuilt() ? "dist/devservices is not built" : null;
let bus: PrivateBus;
let dir: string;
let mounted = false;

beforeAll(async () => {
  if (skip) return;
  bus = await startPrivateBus();
  dir = mkdtempSync(join(tmpdir(), "isolation-"));
  const state = join(dir, "state");
  mkdirSync(join(state, "filecache"), { recursive: true });
  // Read-only for root too: a read-only mount (as a full or failed data partition is).
  await Bun.$`mount -t tmpfs -o ro,size=1m tmpfs ${join(state, "filecache")}`;
  mounted = true;
  writeFileSync(join(state, "mediaindexer"), "not a directory");
});
afterAll(async () => {
  if (skip) return;
  if (mounted) await Bun.$`umount ${join(dir, "state", "filecache")}`.nothrow();
  await bus?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test.skipIf(!!skip)("file cache and media indexer fail alone; power, test automation and intent serve; READY names the failures", async () => {
  const sock = new NotifySocket(join(dir, "notify.sock"));
  const p = spawn([BINARY, "serve", "--bus", bus.address, "--state-dir", join(dir, "state"), "--log-level", "error", "power2", "filecache", "testautomation", "mediaindexer"], {
    stdout: "pipe", // the log (the journal, under systemd)
    stderr: "inherit",
    env: { ...process.env, NOTIFY_SOCKET: sock.address },
  });
  try {
    const ready = await sock.next("READY", 20000);
    expect(ready.fields.READY).toBe("1");
    expect(ready.fields.STATUS).toStartWith("serving power2 testautomation on board virtual; failed: ");
    expect(ready.fields.STATUS).toContain(`filecache (EROFS on ${join(dir, "state", "filecache")}`);
    expect(ready.fields.STATUS).toMatch(new RegExp(`mediaindexer \\((ENOTDIR|EEXIST) on ${join(dir, "state", "mediaindexer")}`));
    const client = await BusClient.connect(bus.address);
    expect(await client.call("power2", "getState", {})).toMatchObject({ returnValue: true });
    expect(await client.call("testautomation", "ping", { Message: "up" })).toEqual({ returnValue: true, Message: "up" });
    // A name that could not start is not owned: a call to it fails at the daemon.
    await expect(client.call("filecache", "GetCacheStatus", {})).rejects.toThrow(/ServiceUnknown|not provided|was not provided/);
    client.close();
    p.kill("SIGTERM");
    expect(await p.exited).toBe(0);
    const log = await new Response(p.stdout).text();
    const lines = log.split("\n").filter(Boolean).map((l) => JSON.parse(l));
    const fc = lines.find((l) => l.service === "filecache" && /cannot start/.test(l.msg));
    expect(fc).toMatchObject({ service: "filecache", errno: "EROFS" });
    expect(fc.path).toStartWith(join(dir, "state", "filecache"));
    const mi = lines.find((l) => l.service === "mediaindexer" && /cannot start/.test(l.msg));
    expect(mi).toMatchObject({ service: "mediaindexer", path: join(dir, "state", "mediaindexer") });
    expect(["ENOTDIR", "EEXIST"]).toContain(mi.errno);
  } finally {
    p.kill(9);
    sock.close?.();
  }
}, 40000);
