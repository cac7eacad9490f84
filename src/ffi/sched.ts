// Scheduling priority of the calling thread (setpriority(2) on its thread id): a
// background thread (the media indexer's metadata thread) gives way to the main
// thread that answers the bus.
import { dlopen, FFIType } from "bun:ffi";
import { errno, SysError } from "./libc";

const { i32, u32 } = FFIType;
const lib = dlopen("libc.so.6", {
  gettid: { args: [], returns: i32 },
  setpriority: { args: [i32, u32, i32], returns: i32 },
  getpriority: { args: [i32, u32], returns: i32 },
}).symbols;

const PRIO_PROCESS = 0;

/** The calling thread's id (gettid(2)). */
export const threadId = (): number => lib.gettid();

/** Sets the nice value of the calling thread (0 normal .. 19 lowest); raising it needs no privilege. */
export function niceThread(nice: number): void {
  if (lib.setpriority(PRIO_PROCESS, lib.gettid(), nice) !== 0) throw new SysError("setpriority", errno());
}

/** The nice value of a thread (tid), or of the calling thread. */
export function threadNice(tid = lib.gettid()): number {
  return lib.getpriority(PRIO_PROCESS, tid);
}

/**
 * Sets the nice value of process pid (-20 highest .. 19 lowest). On Linux
 * setpriority(2) with PRIO_PROCESS acts on the one thread of that id: for a process
 * just started (one thread) that is the whole process, and the threads and
 * processes it starts afterwards inherit the value. Raising a process's nice value
 * needs only the same uid; lowering it needs CAP_SYS_NICE.
 */
export function niceProcess(pid: number, nice: number): void {
  if (lib.setpriority(PRIO_PROCESS, pid, nice) !== 0) throw new SysError("setpriority", errno());
}
