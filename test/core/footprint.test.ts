// src/core/footprint.ts: a shrink waits for a window of QUIET_MS without calls, asks
// merge, and nothing happens in a process that did not turn shrinking on.
import { afterEach, expect, test } from "bun:test";
import { footprintStats, noteCall, shrinkWhenQuiet, shrinkWhenQuietFromNowOn } from "../../src/core/footprint";

afterEach(() => shrinkWhenQuietFromNowOn(false));

test("off (the CLI, tests hosting services): asking shrinks nothing", async () => {
  let shrinks = 0;
  shrinkWhenQuiet({ shrink: () => shrinks++, quietMs: 20 });
  await Bun.sleep(80);
  expect(shrinks).toBe(0);
});

test("on (serve): one shrink after a quiet window; asks within it merge", async () => {
  shrinkWhenQuietFromNowOn();
  let shrinks = 0;
  const before = footprintStats.shrinks;
  for (let i = 0; i < 3; i++) shrinkWhenQuiet({ shrink: () => shrinks++, quietMs: 40 });
  await Bun.sleep(20);
  expect(shrinks).toBe(0);
  await Bun.sleep(80);
  expect(shrinks).toBe(1);
  expect(footprintStats.shrinks).toBe(before + 1);
});

test("on: calls put the shrink off until a window passes without any", async () => {
  shrinkWhenQuietFromNowOn();
  let shrunkAt = 0;
  const t0 = performance.now();
  shrinkWhenQuiet({ shrink: () => (shrunkAt = performance.now() - t0), quietMs: 40 });
  // A call every 10 ms for 200 ms: no window of 40 ms without one.
  const busy = setInterval(noteCall, 10);
  await Bun.sleep(200);
  clearInterval(busy);
  expect(shrunkAt).toBe(0);
  await Bun.sleep(150);
  expect(shrunkAt).toBeGreaterThanOrEqual(200);
});

test("on, after start (cancelOnCalls): a call in the window cancels the shrink; a quiet window lets it happen", async () => {
  shrinkWhenQuietFromNowOn();
  let shrinks = 0;
  shrinkWhenQuiet({ shrink: () => shrinks++, quietMs: 40, cancelOnCalls: true });
  await Bun.sleep(10);
  noteCall();
  await Bun.sleep(150);
  expect(shrinks).toBe(0);
  // Cancelled, not pending: a later ask is taken.
  shrinkWhenQuiet({ shrink: () => shrinks++, quietMs: 40, cancelOnCalls: true });
  await Bun.sleep(100);
  expect(shrinks).toBe(1);
});
