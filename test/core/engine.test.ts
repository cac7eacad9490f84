// src/core/engine.ts: dispatch counts every call (the JIT's start-up policy ends
// after JIT_SETTLE_CALLS of them), and the quiet collection runs once the calls
// stop, once per quiet stretch, never while calls come, and keeps no process alive;
// withoutFTL keeps what it marks out of the JIT's top tier.
import { afterEach, expect, test } from "bun:test";
import { spawnSync } from "bun";
import { join } from "node:path";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { callsSoFar, collectWhenQuiet, noteCall, quietCollections, stopQuietCollection, JIT_SETTLE_CALLS } from "../../src/core/engine";

afterEach(() => stopQuietCollection());

test("each call is counted, and the count passes JIT_SETTLE_CALLS without trouble", () => {
  const before = callsSoFar();
  for (let i = 0; i < JIT_SETTLE_CALLS + 5; i++) noteCall();
  expect(callsSoFar()).toBe(before + JIT_SETTLE_CALLS + 5);
});

// Long enough that a loaded machine's timer lag stays well inside the waits below.
const MS = 100;
const at: number[] = [];
const quietCollector = () => {
  at.length = 0;
  const t0 = performance.now();
  collectWhenQuiet(MS, () => at.push(performance.now() - t0));
  return t0;
};

test("a quiet process collects once, QUIET_COLLECT_MS after the start, and is not woken again", async () => {
  quietCollector();
  await Bun.sleep(MS * 5);
  expect(at).toHaveLength(1);
  expect(at[0]!).toBeGreaterThanOrEqual(MS - 1);
  expect(quietCollections()).toBe(1);
});

test("a collection only ever follows a whole quiet period; one comes after the calls stop; the next stretch of calls earns another", async () => {
  const t0 = quietCollector();
  const calls: number[] = [];
  const call = () => {
    noteCall();
    calls.push(performance.now() - t0);
  };
  // Calls every MS/4 for 5 periods. (On a loaded machine a sleep may overrun: what
  // must hold is checked against the times the calls were made, not the plan.)
  for (let i = 0; i < 20; i++) {
    call();
    await Bun.sleep(MS / 4);
  }
  // The collection comes one to two periods after the last call.
  await Bun.sleep(MS * 4);
  const quietBefore = (t: number) => t - Math.max(...calls.filter((c) => c <= t));
  expect(at.length).toBeGreaterThanOrEqual(1);
  for (const t of at) expect(quietBefore(t)).toBeGreaterThanOrEqual(MS - 1);
  // The last collection came after the last call.
  expect(at.at(-1)!).toBeGreaterThan(calls.at(-1)!);
  // Quiet again: nothing more until a call comes.
  const settled = at.length;
  await Bun.sleep(MS * 2);
  expect(at).toHaveLength(settled);
  call();
  await Bun.sleep(MS * 4);
  expect(at).toHaveLength(settled + 1);
  expect(quietBefore(at.at(-1)!)).toBeGreaterThanOrEqual(MS - 1);
});

test("the quiet collection's timer keeps no process alive", () => {
  const r = spawnSync([process.execPath, "-e", `import { collectWhenQuiet, noteCall } from ${JSON.stringify(join(import.meta.dir, "../../src/core/engine.ts"))}; collectWhenQuiet(600000); noteCall(); console.log("done")`], { timeout: 10000 });
  expect(r.exitCode).toBe(0);
  expect(r.stdout.toString().trim()).toBe("done");
});

test("withoutFTL keeps a hot function, and a prototype's methods, out of the top tier; the same function unmarked reaches it", async () => {
  const dir = mkdtempSync(join(tmpdir(), "noftl-"));
  const script = join(dir, "hot.ts");
  writeFileSync(
    script,
    `import { withoutFTL } from ${JSON.stringify(join(import.meta.dir, "../../src/core/engine.ts"))};
function plainHot(x: number) { let s = 0; for (let i = 0; i < 8; i++) s += (x ^ i) * 3; return s; }
function markedHot(x: number) { let s = 0; for (let i = 0; i < 8; i++) s += (x ^ i) * 3; return s; }
class Box { methodHot(x: number) { let s = 0; for (let i = 0; i < 8; i++) s += (x ^ i) * 3; return s; } }
withoutFTL(markedHot, Box.prototype);
const box = new Box();
let t = 0;
for (let i = 0; i < 3_000_000; i++) t += plainHot(i) + markedHot(i) + box.methodHot(i);
console.log(t > 0 ? "ran" : "?");
`,
  );
  const p = Bun.spawn([process.execPath, script], { env: { ...process.env, BUN_JSC_reportFTLCompileTimes: "1" }, stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  await p.exited;
  rmSync(dir, { recursive: true, force: true });
  expect(out.trim()).toBe("ran");
  const ftl = err.split("\n").filter((l) => l.includes("using FTL"));
  expect(ftl.some((l) => l.includes("plainHot"))).toBe(true);
  expect(ftl.some((l) => l.includes("markedHot"))).toBe(false);
  expect(ftl.some((l) => l.includes("methodHot"))).toBe(false);
});
