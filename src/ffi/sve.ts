// The SVE vector length of this process (arm64; docs/decisions/arm64-sve.md). On an SVE
// CPU with vectors wider than 128 bits, under Debian's 6.1 kernel, the runtime crashed
// within minutes (QEMU's max and neoverse-v1 CPUs: 512 and 256 bits), and passed every
// firmware check with the same CPU limited to 128-bit vectors, and with 512-bit vectors
// under a 6.12 kernel. So a process on a kernel older than 6.12 whose vectors are wider
// than 128 bits asks the kernel for 128-bit vectors from its next exec on
// (PR_SVE_SET_VL_ONEXEC) and executes itself again with the same arguments, before it
// has loaded anything else. Its threads are then all started with 128-bit vectors (a
// thread keeps the length it was created with, so setting it for the running process
// would not reach the threads the runtime already started). SVE itself stays on; the
// cost is one more exec at start. DEVSERVICES_SVE_VL, set for that exec to the length
// the process had (in bytes), marks a process that has been through this, so it is
// done at most once; the process then drops it from its environment, so that a
// devservices it starts (the demo's) decides for itself. DEVSERVICES_SVE_VL=keep
// leaves the length as it is, for the process and its children (to run at the full
// length on purpose, e.g. to test a kernel).
import { ptr } from "bun:ffi";
import { readFileSync } from "node:fs";
import { release } from "node:os";
import { libc } from "./libc";

// linux/prctl.h
export const PR_SVE_SET_VL = 50, PR_SVE_GET_VL = 51, PR_SVE_SET_VL_ONEXEC = 1 << 18, PR_SVE_VL_LEN_MASK = 0xffff;
/** 128 bits, in bytes: the length every check passed with on the older kernel. */
export const SAFE_VL = 16;
/** The first kernel release every check passed on with wider vectors. */
export const FIRST_GOOD_KERNEL: readonly [number, number] = [6, 12];
export const MARK = "DEVSERVICES_SVE_VL";
/** The value of MARK that leaves the vector length as it is. */
export const KEEP = "keep";

/** Whether a process whose vectors are `vl` bytes, on kernel `kernelRelease` (uname -r), runs with 128-bit vectors. */
export function wantsSafeLength(vl: number, kernelRelease: string): boolean {
  if (!(vl > SAFE_VL)) return false;
  const m = /^(\d+)\.(\d+)/.exec(kernelRelease);
  if (!m) return false; // a release this cannot read: left as it is
  const major = Number(m[1]), minor = Number(m[2]);
  return major < FIRST_GOOD_KERNEL[0] || (major === FIRST_GOOD_KERNEL[0] && minor < FIRST_GOOD_KERNEL[1]);
}

/** A NULL-terminated array of C strings, and the buffers it points into (kept alive by the caller). */
function cStrings(items: string[]): { array: BigUint64Array; keep: Buffer[] } {
  const keep = items.map((s) => Buffer.from(`${s}\0`));
  const array = new BigUint64Array(items.length + 1);
  keep.forEach((b, i) => (array[i] = BigInt(ptr(b))));
  return { array, keep };
}

/**
 * On arm64: executes this process again with 128-bit SVE vectors when
 * wantsSafeLength says so. Returns when there is nothing to do, or when the kernel
 * refused (the process then goes on with the vectors it has).
 */
export function ensureSafeVectorLength(env: NodeJS.ProcessEnv = process.env): void {
  const mark = env[MARK];
  if (mark !== undefined) {
    if (mark !== KEEP) delete env[MARK]; // the re-executed process: its children decide for themselves
    return;
  }
  if (process.arch !== "arm64") return;
  const got = libc.prctl(PR_SVE_GET_VL, 0, 0, 0, 0);
  if (got < 0) return; // no SVE
  const vl = got & PR_SVE_VL_LEN_MASK;
  if (!wantsSafeLength(vl, release())) return;
  if (libc.prctl(PR_SVE_SET_VL, SAFE_VL | PR_SVE_SET_VL_ONEXEC, 0, 0, 0) < 0) return;
  const argv = readFileSync("/proc/self/cmdline", "latin1").split("\0");
  if (argv.at(-1) === "") argv.pop();
  const envp = Object.entries({ ...env, [MARK]: String(vl) }).map(([k, v]) => `${k}=${v}`);
  const path = Buffer.from("/proc/self/exe\0");
  const held = [cStrings(argv), cStrings(envp)] as const;
  libc.execve(ptr(path), ptr(held[0].array), ptr(held[1].array));
  // Only on failure: undo the length asked for the next exec, and go on as it is.
  libc.prctl(PR_SVE_SET_VL, vl | PR_SVE_SET_VL_ONEXEC, 0, 0, 0);
  held[0].keep.length = held[1].keep.length = 0;
}
