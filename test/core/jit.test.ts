// src/core/jit.ts: dispatch counts every call (the JIT's start-up policy ends
// after JIT_SETTLE_CALLS of them).
import { expect, test } from "bun:test";
import { callsSoFar, noteCall, JIT_SETTLE_CALLS } from "../../src/core/jit";

test("each call is counted, and the count passes JIT_SETTLE_CALLS without trouble", () => {
  const before = callsSoFar();
  for (let i = 0; i < JIT_SETTLE_CALLS + 5; i++) noteCall();
  expect(callsSoFar()).toBe(before + JIT_SETTLE_CALLS + 5);
});
