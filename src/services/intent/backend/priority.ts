// Lowering the CPU priority of a handler process the service has just started.
// Bun.spawn cannot set it before exec, and the service's unit has no CAP_SYS_NICE to
// lower its own thread's value and raise it back around the spawn, so it is set
// right after: by then (0.3 to 5 ms measured) the handler may have started threads
// (a Bun program does at once) or processes (a shell script). setpriority(2) acts
// on one thread, so each of those is set too, and so on down (docs/decisions/intent.md).
import { readdirSync, readFileSync } from "node:fs";
import { niceProcess } from "../../../ffi/sched";
import { SysError } from "../../../ffi/libc";

import { ESRCH } from "../../../ffi/errno";

/**
 * Sets nice on every thread of process pid and of the processes it started, theirs,
 * and so on. A thread or process started by one already set inherits the value, so
 * the sweep reads a process's threads again until it finds none it has not set, and
 * a thread's children after setting it (what it started before is listed by then).
 * At most `most` threads are set (a fork bomb is the process limits' to stop).
 * Returns how many were set; throws the first error other than "gone" (ESRCH).
 */
export function niceTree(pid: number, nice: number, most = 256): number {
  const set = new Set<number>();
  const processes = [pid];
  const queued = new Set(processes);
  for (let i = 0; i < processes.length && set.size < most; i++) {
    const p = processes[i]!;
    for (;;) {
      const fresh = tasks(p).filter((t) => !set.has(t));
      if (fresh.length === 0) break;
      for (const tid of fresh) {
        if (set.size >= most) return set.size;
        try {
          niceProcess(tid, nice);
        } catch (e) {
          if (!(e instanceof SysError && e.errno === ESRCH)) throw e;
        }
        set.add(tid);
        for (const child of children(p, tid))
          if (!queued.has(child)) {
            queued.add(child);
            processes.push(child);
          }
      }
    }
  }
  return set.size;
}

/** The thread ids of process pid (none when it is gone). */
function tasks(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).map(Number);
  } catch {
    return [];
  }
}

/** The processes thread tid of process pid started (none when it is gone, or the kernel does not list them). */
function children(pid: number, tid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}
