// A board recipe may open a method wider than its table's rule, never silently:
// `serve` logs each such rule at start.
import { test, expect } from "bun:test";
import { spawn } from "bun";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, binaryBuilt, eventually } from "../helpers/harness";
import { startPrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { loadBoard } from "../../src/core/board";

test.skipIf(!binaryBuilt())("each widened rule is one warning at start naming the service, the method, the rule and the table's", async () => {
  const bus = await startPrivateBus();
  const dir = mkdtempSync(join(tmpdir(), "widened-"));
  const board = loadBoard("virtual");
  const recipe = join(dir, "dev.json");
  writeFileSync(recipe, JSON.stringify({ ...board, name: "dev", serviceConfig: { ...board.serviceConfig, nettools: { accessGroup: "staff" } } }));
  const p = spawn([BINARY, "serve", "--bus", bus.address, "--board", recipe, "--state-dir", join(dir, "state"), "--log-level", "warn", "nettools", "power2"], { env: { ...process.env }, stdout: "pipe", stderr: "inherit" });
  try {
    const c = await BusClient.connect(bus.address);
    await eventually(async () => (await c.call("power2", "getState", {}).catch(() => null)) !== null, 10000, 50);
    c.close();
    p.kill("SIGTERM");
    await p.exited;
    const lines = (await new Response(p.stdout).text()).split("\n").filter(Boolean).map((l) => JSON.parse(l));
    const widened = lines.filter((l) => l.msg === "access rule widened by the board recipe");
    expect(widened.map((l) => l.method).sort()).toEqual(["createVlan", "deleteVlan", "sethostname"]);
    expect(widened[0]).toMatchObject({ service: "nettools", rule: "root or group staff", default: "root or group devservices-net" });
  } finally {
    p.kill(9);
    await bus.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 30000);
