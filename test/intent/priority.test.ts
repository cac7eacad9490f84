// Handler processes run below the service's CPU priority (docs/services/intent.md,
// "Handler processes"): the service in its own process on a private bus with the
// exec launcher and `handlerNice` 7; the launch is asked for by another uid
// (setpriv). The handler, and what it starts, run at nice 7; the service stays at 0.
import { test, expect, beforeAll, afterAll, afterEach } from "bun:test";
import { readdirSync } from "node:fs";
import { childrenOf, eventually } from "../helpers/harness";
import { answersIn, found, HOLD, HOSTILE, niceOf, skip, startIsolated, type Isolated } from "./isolated";

const NICE = 7;
let s: Isolated;

beforeAll(async () => {
  if (skip) return;
  s = await startIsolated("intent-priority", { handlerNice: NICE, maxLaunchesPerUidPerSecond: 1000 });
}, 30000);

afterEach(async () => {
  if (skip) return;
  await s.killCallers();
  for (const pid of s.children()) process.kill(pid, "SIGKILL");
  await eventually(() => s.children().length === 0, 5000);
});

afterAll(async () => {
  if (!skip) await s?.stop();
});

test.skipIf(!!skip)(`a handler launched for uid ${HOSTILE} runs at nice ${NICE} (handlerNice), the service at its own 0`, async () => {
  expect(niceOf(s.server.pid)).toBe(0);
  const { out } = await s.as(HOSTILE, "intent-flood.ts", ["1", "2", JSON.stringify(HOLD)], /^DONE /m);
  const answers = answersIn(out);
  expect(answers.map((a) => a.returnValue)).toEqual([true, true]);
  const handlers = await found(() => (s.children().length === 2 ? s.children() : null));
  for (const pid of handlers) expect(niceOf(pid)).toBe(NICE);
  // The service and each of its threads keep their priority.
  expect(niceOf(s.server.pid)).toBe(0);
  for (const tid of readdirSync(`/proc/${s.server.pid}/task`)) expect(niceOf(Number(tid))).toBe(0);
}, 30000);

test.skipIf(!!skip)("what a handler starts in its first milliseconds, a process (a shell script's background job) or threads (a Bun program), runs at the nice value too", async () => {
  for (let round = 0; round < 10; round++) {
    const { out } = await s.as(HOSTILE, "intent-flood.ts", ["1", "1", JSON.stringify({ action: "fork" })], /^DONE /m);
    expect(answersIn(out).map((a) => a.returnValue)).toEqual([true]);
    const [handler] = await found(() => (s.children().length === 1 ? s.children() : null));
    const [grandchild] = await found(() => (childrenOf(handler!).length === 1 ? childrenOf(handler!) : null));
    expect(niceOf(handler!)).toBe(NICE);
    // The child may have been under way while the handler was set: a second sweep follows within 20 ms.
    await eventually(() => niceOf(grandchild!) === NICE, 1000, 5);
    process.kill(grandchild!, "SIGKILL");
    process.kill(handler!, "SIGKILL");
    await eventually(() => s.children().length === 0, 5000);
    await s.killCallers();
  }

  const { out } = await s.as(HOSTILE, "intent-flood.ts", ["1", "1", JSON.stringify({ action: "threads" })], /^DONE /m);
  expect(answersIn(out).map((a) => a.returnValue)).toEqual([true]);
  const [handler] = await found(() => (s.children().length === 1 ? s.children() : null));
  // A Bun program has a thread besides its main one once it idles.
  const threads = await found(() => {
    const t = readdirSync(`/proc/${handler}/task`).map(Number);
    return t.length >= 2 ? t : null;
  }, 10000);
  await eventually(() => threads.every((t) => niceOf(t) === NICE), 1000, 5);
  expect(threads.map(niceOf)).toEqual(threads.map(() => NICE));
}, 60000);
