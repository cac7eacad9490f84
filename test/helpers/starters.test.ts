// A test's set-up that fails leaves nothing running: the harness's starters stop what
// they started before they throw (startOrUndo), so a beforeAll that fails does not
// leave a service or a bus behind for the rest of the run.
import { expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { childrenOf, serveFromSource, startOrUndo } from "./harness";

/** This process's children that are running (not yet reaped zombies excluded), with their command lines. */
function running(): Map<number, string> {
  const out = new Map<number, string>();
  for (const pid of childrenOf(process.pid)) {
    try {
      if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"))) continue;
      out.set(pid, readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim());
    } catch {
      /* gone */
    }
  }
  return out;
}

test("a service whose names never appear: serveFromSource fails and neither the service nor its bus is left running", async () => {
  const dir = mkdtempSync(join(tmpdir(), "starters-"));
  chmodSync(dir, 0o755);
  const before = running();
  try {
    // power2 takes its name; the second one is never taken: the wait times out.
    const start = serveFromSource(["power2", "--state-dir", join(dir, "state"), "--log-level", "error"], ["com.vendor.service.power2", "com.vendor.service.nosuchname"], dir, 3000);
    await expect(start).rejects.toThrow(/condition not met within 3000 ms/);
    const left = [...running()].filter(([pid]) => !before.has(pid)).map(([, cmd]) => cmd);
    expect(left).toEqual([]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 30000);

test("a board that does not exist: serveFromSource fails as soon as the service exits, and leaves its bus stopped", async () => {
  const dir = mkdtempSync(join(tmpdir(), "starters-"));
  chmodSync(dir, 0o755);
  const before = running();
  try {
    const t0 = performance.now();
    const start = serveFromSource(["power2", "--board", join(dir, "no-such-board.json"), "--state-dir", join(dir, "state"), "--log-level", "fatal"], ["com.vendor.service.power2"], dir, 20000);
    await expect(start).rejects.toThrow(/exited \(\d+\) before its names were owned/);
    expect(performance.now() - t0).toBeLessThan(15000);
    const left = [...running()].filter(([pid]) => !before.has(pid)).map(([, cmd]) => cmd);
    expect(left).toEqual([]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 30000);

test("startOrUndo undoes what a failed start did, newest first, and throws its error on; a start that succeeds undoes nothing", async () => {
  const undone: string[] = [];
  await expect(
    startOrUndo(async (onFail) => {
      onFail(() => void undone.push("bus"));
      onFail(async () => {
        undone.push("service");
        throw new Error("already gone");
      });
      onFail(() => void undone.push("client"));
      throw new Error("no owner");
    }),
  ).rejects.toThrow("no owner");
  expect(undone).toEqual(["client", "service", "bus"]);
  undone.length = 0;
  expect(await startOrUndo(async (onFail) => (onFail(() => void undone.push("x")), 42))).toBe(42);
  expect(undone).toEqual([]);
});
