// The launch rate of one uid (docs/services/intent.md, "Handler processes"): the
// service in its own process on a private bus with the exec launcher, a burst of 3
// and 2 launches a second per uid; the caller is another uid (setpriv) starting
// handlers that exit at once, so only the rate bounds it. Its burst past the budget
// is refused with the bound named, later starts pass again as the budget refills,
// and no faster than the rate; another uid has a budget of its own.
import { test, expect, beforeAll, afterAll, afterEach } from "bun:test";
import { eventually } from "../helpers/harness";
import { LaunchRate, refusalReason } from "../../src/services/intent/limits";
import { answersIn, HOSTILE, OTHER, QUICK, skip, startIsolated, type Isolated } from "./isolated";

const BURST = 3;
const PER_SECOND = 2;
let s: Isolated;

beforeAll(async () => {
  if (skip) return;
  s = await startIsolated("intent-rate", { maxLaunchesPerUidPerSecond: PER_SECOND, launchBurstPerUid: BURST, maxHandlerProcessesPerUid: 16 });
}, 30000);

afterEach(async () => {
  if (skip) return;
  await s.killCallers();
  await eventually(() => s.children().length === 0, 5000);
});

afterAll(async () => {
  if (!skip) await s?.stop();
});

const refusal = {
  returnValue: false,
  errorText: "Failed to start intent",
  intentId: 0,
  reason: expect.stringMatching(new RegExp(`^uid ${HOSTILE} starts handler processes faster than ${PER_SECOND} a second .*\\(maxLaunchesPerUidPerSecond ${PER_SECOND}, launchBurstPerUid ${BURST}\\); the next may start in \\d+ ms$`)),
};

test.skipIf(!!skip)(`uid ${HOSTILE} asks for 6 launches at once: ${BURST} start, 3 are refused naming the rate; later starts pass again at ${PER_SECOND} a second; another uid is not held back`, async () => {
  const { out } = await s.as(HOSTILE, "intent-rate.ts", ["6", "3", JSON.stringify(QUICK)], /^(DONE|GAVE UP)/m);
  const answers = answersIn(out);
  expect(answers.length).toBe(6);
  // The burst, plus what refilled while the six were answered one after another
  // (none when that took under 1/rate seconds, as it does unless the machine is very busy).
  const burstMs = Number(/^BURST (\d+)$/m.exec(out)![1]);
  const started = answers.filter((a) => a.returnValue === true).length;
  expect(started).toBeGreaterThanOrEqual(BURST);
  expect(started).toBeLessThanOrEqual(BURST + Math.floor((burstMs * PER_SECOND) / 1000));
  expect(started).toBeLessThan(6);
  expect(answers.filter((a) => a.returnValue === false)).toEqual(Array(6 - started).fill(refusal));

  // Right after the burst the budget is empty: the first retry is refused too.
  const refusedLine = /^REFUSED (.*)$/m.exec(out);
  expect(refusedLine).not.toBeNull();
  expect(JSON.parse(refusedLine![1]!)).toEqual(refusal);

  // Then it refills: three more pass, each a launch's worth of refill (1/rate: 500 ms) after the one before.
  const passed = [...out.matchAll(/^PASSED (\d+) (.*)$/gm)].map((m) => ({ ms: Number(m[1]), answer: JSON.parse(m[2]!) }));
  expect(passed.length).toBe(3);
  for (const p of passed) expect(p.answer).toEqual({ returnValue: true, intentId: expect.any(Number) });
  expect(passed[2]!.ms - passed[0]!.ms).toBeGreaterThanOrEqual(0.9 * (2 * 1000) / PER_SECOND);
  expect(out).toMatch(/^DONE \d+$/m);

  // Another uid, meanwhile, has its whole burst.
  const other = await s.as(OTHER, "intent-flood.ts", ["1", String(BURST), JSON.stringify(QUICK)], /^DONE /m);
  expect(answersIn(other.out).map((a) => a.returnValue)).toEqual(Array(BURST).fill(true));
}, 30000);

test("the budget: a burst, then one launch per 1/rate seconds, never more than the burst saved up; full buckets are forgotten", () => {
  let now = 0;
  const rate = new LaunchRate({ perSecond: 4, burst: 2 }, () => now);
  expect(rate.take(7)).toBeUndefined();
  expect(rate.take(7)).toBeUndefined();
  const refused = rate.take(7)!;
  expect(refused).toEqual({ bound: "rate", uid: 7, perSecond: 4, burst: 2, waitMs: 250 });
  expect(refusalReason(refused)).toBe(
    "uid 7 starts handler processes faster than 4 a second after a burst of 2, the most one uid may start (maxLaunchesPerUidPerSecond 4, launchBurstPerUid 2); the next may start in 250 ms",
  );
  // Another uid has its own budget.
  expect(rate.take(8)).toBeUndefined();
  now = 100;
  expect(rate.take(7)?.waitMs).toBe(150);
  now = 250;
  expect(rate.take(7)).toBeUndefined();
  expect(rate.take(7)).toBeDefined();
  // A long pause saves up the burst, no more.
  now = 60_000;
  expect(rate.take(7)).toBeUndefined();
  expect(rate.take(7)).toBeUndefined();
  expect(rate.take(7)).toBeDefined();
  // Uids whose budget is full again are dropped when the map has doubled since the last sweep (64 at first).
  for (let uid = 1000; uid < 1070; uid++) rate.take(uid);
  expect(rate.size).toBe(71);
  now = 120_000;
  for (let uid = 2000; uid < 2070; uid++) rate.take(uid);
  // Swept once 129 were held: the 1000s and 7 were full again and went; only the 2000s are left.
  expect(rate.size).toBe(70);
});
