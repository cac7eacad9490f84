// The hosting connection's rule for clients' departures (src/bus/server.ts, connect):
// sent at connect and answered while the services start, waited for before any name
// is requested. A daemon that refuses the rule leaves no service started (a service
// that cannot see its clients leave would hold their pins and locks for good); one
// that takes it lets a client's departure release what it held, from the first call.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { startRuntime } from "../../src/runtime";
import { loadBoard } from "../../src/core/board";
import { configureLogging } from "../../src/core/log";

const log = configureLogging(process.env.DEVSERVICES_LOG_LEVEL ?? "silent");

const POWER = "com.vendor.service.power2";

describe("the rule for clients' departures", () => {
  test("refused by the daemon: no service starts, and the refusal is what the runtime reports", async () => {
    const bus = await startPrivateBus(undefined, { policies: ['<busconfig><limit name="max_match_rules_per_connection">0</limit></busconfig>'] });
    const stateDir = mkdtempSync(join(tmpdir(), "departures-"));
    try {
      const probe = await BusClient.connect(bus.address);
      await expect(startRuntime({ busAddress: bus.address, board: loadBoard("virtual"), stateDir, services: ["power2"], log })).rejects.toThrow(
        /match rules|LimitsExceeded/i,
      );
      expect(await probe.hasOwner(POWER)).toBe(false);
      probe.close();
    } finally {
      await bus.stop();
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  test("taken: a client that leaves right after its first call has its subscription ended", async () => {
    const bus = await startPrivateBus();
    const stateDir = mkdtempSync(join(tmpdir(), "departures-"));
    const rt = await startRuntime({ busAddress: bus.address, board: loadBoard("virtual"), stateDir, services: ["power2"], log });
    try {
      expect(rt.failed).toEqual([]);
      const app = await BusClient.connect(bus.address);
      const sub = await app.subscribe(POWER, "getState", { subscribe: true }, () => {});
      expect(sub.first.returnValue).toBe(true);
      expect(rt.server.stats()).toMatchObject({ clients: 1, subscriptions: 1 });
      app.close();
      for (let i = 0; i < 200 && rt.server.stats().subscriptions; i++) await Bun.sleep(10);
      expect(rt.server.stats()).toMatchObject({ clients: 0, subscriptions: 0 });
    } finally {
      await rt.stop();
      await bus.stop();
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
