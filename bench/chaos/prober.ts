// The well-behaved client of bench/chaos/run.ts: `power2 getState`, one call at a
// time, in a loop, on its own connection. Commands on stdin, one a line:
//   phase NAME   later answers count for the phase NAME
//   stop         prints REPORT {phase: {calls, seconds, p50, p99, max, over1s, gap, gapAt, gapWall, errors, firstError}}
//                and exits
// A gap is the time between two consecutive answers (or from the phase's start, or
// until `stop`); gapAt is when the longest one ended, in seconds from the phase's start.
import { writeSync } from "node:fs";
import { BusClient } from "../../src/bus/client";

interface Phase {
  name: string;
  start: number;
  end?: number;
  lat: number[];
  errors: number;
  firstError?: string;
  gap: number;
  gapAt: number;
  /** Date.now() when the longest gap ended. */
  gapWall: number;
}

const client = await BusClient.connect(process.env.DEVSERVICES_BUS!);
const phases: Phase[] = [];
const open = (name: string) => {
  const now = performance.now();
  const cur = phases.at(-1);
  if (cur) cur.end = now;
  phases.push({ name, start: now, lat: [], errors: 0, gap: 0, gapAt: 0, gapWall: 0 });
};
open("warmup");
let lastAnswer = performance.now();
let stopped = false;

const gapSeen = (p: Phase, now: number) => {
  const gap = now - lastAnswer;
  if (gap > p.gap) {
    p.gap = gap;
    p.gapAt = (now - p.start) / 1000;
    p.gapWall = Date.now();
  }
};

const pct = (sorted: number[], q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : NaN);

function report(): never {
  const now = performance.now();
  const cur = phases.at(-1)!;
  gapSeen(cur, now);
  cur.end = now;
  const out: Record<string, unknown> = {};
  for (const p of phases) {
    const sorted = Float64Array.from(p.lat).sort();
    const arr = Array.from(sorted);
    out[p.name] = {
      calls: p.lat.length,
      seconds: (p.end! - p.start) / 1000,
      p50: pct(arr, 0.5),
      p99: pct(arr, 0.99),
      max: arr.length ? arr[arr.length - 1] : NaN,
      over1s: arr.filter((x) => x > 1000).length,
      gap: p.gap,
      gapAt: p.gapAt,
      gapWall: p.gapWall,
      errors: p.errors,
      firstError: p.firstError,
    };
  }
  writeSync(1, `REPORT ${JSON.stringify(out)}\n`);
  process.exit(0);
}

let input = "";
process.stdin.on("data", (d) => {
  input += d.toString();
  let i;
  while ((i = input.indexOf("\n")) >= 0) {
    const line = input.slice(0, i).trim();
    input = input.slice(i + 1);
    if (line.startsWith("phase ")) open(line.slice(6));
    else if (line === "stop") {
      stopped = true;
      report();
    }
  }
});
// The parent gone: nothing to report to.
process.stdin.on("end", () => process.exit(0));

writeSync(1, "READY\n");
while (!stopped) {
  const t0 = performance.now();
  try {
    const r = (await client.call("power2", "getState", {}, { timeoutMs: 10000 })) as { returnValue?: boolean };
    const t1 = performance.now();
    const p = phases.at(-1)!;
    p.lat.push(t1 - t0);
    gapSeen(p, t1);
    lastAnswer = t1;
    if (r.returnValue !== true) {
      p.errors++;
      p.firstError ??= JSON.stringify(r).slice(0, 200);
    }
  } catch (e) {
    const p = phases.at(-1)!;
    p.errors++;
    p.firstError ??= String((e as Error).message ?? e).slice(0, 200);
    await new Promise((r) => setTimeout(r, 10));
  }
}
