// How `serve` settles the engine after start and after work (docs/performance.md):
// - the first JIT_SETTLE_CALLS calls keep the JIT policy the executable starts with,
//   then the normal one applies;
// - once the process has been quiet for QUIET_COLLECT_MS (no call), one full garbage
//   collection runs, so that the code of what ran once (the start, a recording, a
//   scan) is dropped and its memory goes back.
// Dispatch counts the calls (noteCall); serve turns the quiet collection on (and, for
// the native libraries' heap, fixes glibc's mmap threshold: ffi/libc.ts).

/**
 * Calls served with the JIT policy the executable starts with (thresholds x16,
 * scripts/compile-flags.ts) before the normal one applies: the first calls after
 * start run in the interpreter and the baseline tier, a little slower each, but no
 * optimizing compile of the dispatch path stalls them (docs/performance.md: the
 * first 200 calls' p99). From then on the services' code is what runs again and
 * again, and it is optimized as usual.
 */
export const JIT_SETTLE_CALLS = 1000;

/**
 * Quiet time after which one full collection runs. JavaScriptCore drops a function's
 * compiled code (its code block: bytecode linked for this process, metadata, JIT
 * code) at a full collection once the code block is about 15 s old and has not run
 * since the collection before; until a full collection comes, an idle process keeps
 * all of it. Nothing else makes a quiet process collect: only allocation does. So
 * the code the start ran once (every module's evaluation, each service's create:
 * about 950 code blocks) stayed for good. Measured on `serve` with every service:
 * 1.0 MB less live heap, 0.8 MB less outside it, RssAnon -0.8 MB. Before the code is
 * old enough a full collection frees nothing (tried at 3, 8, 12 and 15 s after start).
 */
export const QUIET_COLLECT_MS = 20_000;

/**
 * Keeps functions, and the methods of prototypes, out of the JIT's top tier (FTL): they
 * stop at its optimizing tier (DFG). The bus's per-call path (codec, connection,
 * server, payload parse) is some 40 functions; FTL compiled them over the first
 * 10,000-40,000 calls, about 140 ms of the JIT thread in calls 2,200-42,200, which on
 * two cores took that time from the calls themselves (service CPU a call there: 14.3
 * us with FTL, 10.5 without). Its code is some 12 % faster once compiled, which repays
 * the compile after about 170,000 calls; a device's services answer bursts, and their
 * first calls are the ones waited for (docs/performance.md, "The first calls in the
 * interpreter, the warm path without FTL").
 */
export function withoutFTL(...owners: (Function | object)[]): void {
  const { noFTL } = require("bun:jsc") as { noFTL(f: Function): void };
  for (const owner of owners) {
    if (typeof owner === "function") {
      noFTL(owner);
      continue;
    }
    for (const key of Object.getOwnPropertyNames(owner)) {
      const value = Object.getOwnPropertyDescriptor(owner, key)?.value;
      if (key !== "constructor" && typeof value === "function") noFTL(value);
    }
  }
}

let calls = 0;
let quiet: { ms: number; collect: () => void; timer?: ReturnType<typeof setTimeout>; since: number; collections: number } | undefined;

/** Called by dispatch for each call: the JIT settles after JIT_SETTLE_CALLS; a quiet collection is due after the last call. */
export function noteCall(): void {
  if (++calls === JIT_SETTLE_CALLS) Bun.unsafe.setJITPolicy(1);
  if (quiet && !quiet.timer) armQuiet(quiet);
}

/**
 * Turns the quiet collection on (serve): one full collection QUIET_COLLECT_MS after
 * now if no call came, and after each later stretch of calls once a whole period has
 * passed without one (between one and two periods after the last call: while calls
 * come, the timer looks once per period and waits another). When quiet, no timer is
 * left: an idle process is not woken. The timer never keeps a process alive.
 */
export function collectWhenQuiet(ms = QUIET_COLLECT_MS, collect: () => void = () => Bun.gc(true)): void {
  stopQuietCollection();
  quiet = { ms, collect, since: calls, collections: 0 };
  armQuiet(quiet);
}

/** Turns the quiet collection off (tests). */
export function stopQuietCollection(): void {
  if (quiet?.timer) clearTimeout(quiet.timer);
  quiet = undefined;
}

function armQuiet(q: NonNullable<typeof quiet>): void {
  q.since = calls;
  q.timer = setTimeout(() => {
    q.timer = undefined;
    // Calls came during the period: not quiet yet, look again after another.
    if (calls !== q.since) return armQuiet(q);
    q.collections++;
    q.collect();
  }, q.ms);
  q.timer.unref?.();
}

/** Calls dispatched so far (tests). */
export function callsSoFar(): number {
  return calls;
}

/** Quiet collections run since collectWhenQuiet turned them on (tests). */
export function quietCollections(): number {
  return quiet?.collections ?? 0;
}
