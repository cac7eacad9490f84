// A process whose every service refuses a store newer than the binary (a rollback to
// an older slot, or one service per unit): serve exits with 78, which the units name in
// RestartPreventExitStatus=, so systemd does not restart it every second. Any other
// failure to start stays status 1 (restarted).
import { test, expect, afterAll } from "bun:test";
import { spawn } from "bun";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPrivateBus } from "../../src/bus/daemon";
import { BINARY, binaryBuilt } from "../helpers/harness";
import { LAYER_FILES } from "../packaging/layer";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

async function serveExit(prepare: (state: string) => void, service: string): Promise<number> {
  const bus = await startPrivateBus();
  try {
    const dir = mkdtempSync(join(tmpdir(), "devservices-exit-"));
    dirs.push(dir);
    prepare(dir);
    const p = spawn([BINARY, "serve", "--bus", bus.address, "--state-dir", dir, "--log-level", "error", service], { env: { ...process.env }, stdout: "pipe", stderr: "pipe" });
    return await p.exited;
  } finally {
    await bus.stop();
  }
}

test.skipIf(!binaryBuilt())("every service refuses a newer store: exit 78; the units do not restart on 78", async () => {
  const code = await serveExit((state) => {
    mkdirSync(join(state, "power2"), { recursive: true });
    writeFileSync(join(state, "power2", "power-on-reason.json"), JSON.stringify({ version: 99, reason: "from a newer slot" }));
  }, "power2");
  expect(code).toBe(78);
  for (const unit of ["devservices.service", "devservices@.service"]) {
    expect(readFileSync(join(LAYER_FILES, "systemd", unit), "utf8")).toMatch(/^RestartPreventExitStatus=78$/m);
  }
}, 30000);

test.skipIf(!binaryBuilt())("another failure to start: exit 1 (systemd restarts it)", async () => {
  const code = await serveExit((state) => {
    // the power service's state directory is a file: it cannot start
    writeFileSync(join(state, "power2"), "not a directory");
  }, "power2");
  expect(code).toBe(1);
}, 30000);
