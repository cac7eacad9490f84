// Memory given back once the process has settled: after start, and after work that
// leaves much behind it (a pipeline released, a media scan done), the process asks
// the engine to shrink (`Bun.shrink()`: JavaScriptCore drops its compiled code, runs
// a full collection and returns its allocators' free pages) once QUIET_MS passed
// without a call. A stream of calls is never interrupted: their compiled code is
// worth more than the memory, so a call in the window puts the shrink off again
// (after work), or cancels it (after start: what the start left is code that ran
// once, but calls that come at once have begun to compile theirs, which a shrink
// would drop too). The code dropped is compiled again when it runs again (from the
// bytecode the executable carries). docs/performance.md has what it returns.

/** Quiet time, with no call, before the process shrinks. */
export const QUIET_MS = 2000;

/**
 * Calls served with the JIT policy the executable starts with (thresholds x16,
 * scripts/compile-flags.ts) before the normal one applies: the first calls after
 * start run in the interpreter and the baseline tier, a little slower each, but no
 * optimizing compile of the dispatch path stalls them (docs/performance.md: the
 * first 200 calls' p99). From then on the services' code is what runs again and
 * again, and it is optimized as usual.
 */
export const JIT_SETTLE_CALLS = 1000;

let enabled = false;
let calls = 0;
let seen = 0;
let timer: ReturnType<typeof setTimeout> | undefined;
/** Shrinks done, for tests. */
export const footprintStats = { shrinks: 0 };

/** Called by dispatch for each call: a shrink waits for a window without any; the JIT settles after JIT_SETTLE_CALLS. */
export function noteCall(): void {
  if (++calls === JIT_SETTLE_CALLS) Bun.unsafe.setJITPolicy(1);
}

/**
 * Turns shrinking on for this process: `serve`, which lives as long as the device
 * runs. Elsewhere (the CLI, tests that host services) shrinkWhenQuiet does nothing.
 */
export function shrinkWhenQuietFromNowOn(on = true): void {
  enabled = on;
}

/**
 * Asks for a shrink once the process has been quiet for QUIET_MS (one at a time;
 * repeated asks merge). Tests give their own `shrink` and `quietMs`.
 */
export function shrinkWhenQuiet(opts: { shrink?: () => void; quietMs?: number; cancelOnCalls?: boolean } = {}): void {
  if (!enabled || timer) return;
  const quietMs = opts.quietMs ?? QUIET_MS;
  const shrink = opts.shrink ?? (() => Bun.shrink());
  seen = calls;
  timer = setTimeout(function check() {
    if (calls !== seen && opts.cancelOnCalls) {
      timer = undefined;
      return;
    }
    if (calls !== seen) {
      // Calls came meanwhile: wait for a window without any.
      seen = calls;
      timer = setTimeout(check, quietMs);
      timer.unref();
      return;
    }
    timer = undefined;
    footprintStats.shrinks++;
    shrink();
  }, quietMs);
  timer.unref();
}
