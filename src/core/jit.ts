// How `serve` settles after start: the first JIT_SETTLE_CALLS calls keep the JIT
// policy the executable starts with, then the normal one applies. Dispatch counts the
// calls (noteCall).

/**
 * Calls served with the JIT policy the executable starts with (thresholds x16,
 * scripts/compile-flags.ts) before the normal one applies: the first calls after
 * start run in the interpreter and the baseline tier, a little slower each, but no
 * optimizing compile of the dispatch path stalls them (docs/performance.md: the
 * first 200 calls' p99). From then on the services' code is what runs again and
 * again, and it is optimized as usual.
 */
export const JIT_SETTLE_CALLS = 1000;

let calls = 0;

/** Called by dispatch for each call: the JIT settles after JIT_SETTLE_CALLS. */
export function noteCall(): void {
  if (++calls === JIT_SETTLE_CALLS) Bun.unsafe.setJITPolicy(1);
}

/** Calls dispatched so far (tests). */
export function callsSoFar(): number {
  return calls;
}
