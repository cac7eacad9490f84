// src/ffi/uring.ts against linux/io_uring.h and the syscall numbers, the relay on a
// pipe, and the event source (src/ffi/loop.ts) it serves: the kernel's relay where
// the kernel has it, the poller thread where asked (DEVSERVICES_EVENT_SOURCE=thread).
import { expect, test } from "bun:test";
import { join } from "node:path";
import * as uring from "../../src/ffi/uring.ts";
import { libc, makePipe, writeFd, readAvailable, O_CLOEXEC } from "../../src/ffi/libc.ts";
import { setNonBlocking } from "../../src/ffi/loop.ts";
import { checkAgainstHeaders, sameNames } from "./cabi.ts";

checkAgainstHeaders("uring.ts mirrors linux/io_uring.h and the syscall numbers", {
  headers: ["linux/io_uring.h", "sys/syscall.h", "poll.h"],
  structs: uring.structs,
  consts: {
    ...sameNames({
      IORING_OP_POLL_ADD: uring.IORING_OP_POLL_ADD, IORING_OP_WRITE: uring.IORING_OP_WRITE, IOSQE_IO_LINK: uring.IOSQE_IO_LINK,
      IORING_FEAT_SINGLE_MMAP: uring.IORING_FEAT_SINGLE_MMAP, IORING_REGISTER_PROBE: uring.IORING_REGISTER_PROBE,
      IO_URING_OP_SUPPORTED: uring.IO_URING_OP_SUPPORTED, IORING_OFF_SQ_RING: uring.IORING_OFF_SQ_RING,
      IORING_OFF_CQ_RING: uring.IORING_OFF_CQ_RING, IORING_OFF_SQES: uring.IORING_OFF_SQES, POLLIN: uring.POLLIN,
    }),
    SYS_io_uring_setup: ["__NR_io_uring_setup", uring.SYS_io_uring_setup],
    SYS_io_uring_enter: ["__NR_io_uring_enter", uring.SYS_io_uring_enter],
    SYS_io_uring_register: ["__NR_io_uring_register", uring.SYS_io_uring_register],
  },
});

// Whether this kernel lets a process use io_uring (a container's seccomp filter may not).
const relayHere = (() => {
  const [r, w] = makePipe(O_CLOEXEC);
  try {
    return uring.readinessRelay(r, w) !== null;
  } finally {
    libc.close(r);
    libc.close(w);
  }
})();
if (!relayHere) console.warn("uring.test.ts: io_uring is not available to this process; the relay's own tests are skipped");

test.skipIf(!relayHere)("the relay writes one byte once the polled fd is readable, and only then, round after round", async () => {
  const [watched, feed] = makePipe(O_CLOEXEC);
  const [told, out] = makePipe(O_CLOEXEC);
  setNonBlocking(watched);
  setNonBlocking(told);
  try {
    const relay = uring.readinessRelay(watched, out)!;
    for (let round = 0; round < 3; round++) {
      relay.arm();
      await Bun.sleep(30);
      expect(readAvailable(told, 16)).toBeNull(); // nothing readable yet: no byte
      writeFd(feed, Buffer.from("x"));
      let byte: Buffer | null = null;
      for (let i = 0; i < 200 && !byte; i++) {
        byte = readAvailable(told, 16);
        if (!byte) await Bun.sleep(5);
      }
      expect(byte?.length).toBe(1);
      relay.reap();
      expect(readAvailable(watched, 16)?.toString()).toBe("x");
    }
  } finally {
    for (const fd of [watched, feed, told, out]) libc.close(fd);
  }
});

const fixture = join(import.meta.dir, "fixtures/event-source.ts");
const runFixture = async (env: Record<string, string>) => {
  const p = Bun.spawn([process.execPath, fixture], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const killer = setTimeout(() => p.kill("SIGKILL"), 20_000);
  const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
  clearTimeout(killer);
  expect({ code, err: code ? err : "" }).toEqual({ code: 0, err: "" }); // it exited by itself, in time
  return JSON.parse(out) as { source: string; rounds: number; us: number; workers: number };
};

test("the event source: readiness reaches the main thread through the kernel's relay where it can, else through the poller thread; either way a closed watch lets the process exit", async () => {
  const kernel = await runFixture({ DEVSERVICES_EVENT_SOURCE: "" });
  const thread = await runFixture({ DEVSERVICES_EVENT_SOURCE: "thread" });
  expect(kernel.source).toBe(relayHere ? "kernel" : "thread");
  expect(thread.source).toBe("thread");
  expect([kernel.rounds, thread.rounds]).toEqual([200, 200]);
  // The relay starts no thread (no JS heap of its own); the poller is one.
  expect([kernel.workers, thread.workers]).toEqual([relayHere ? 0 : 1, 1]);
  console.log(`event source round trip on a pipe: kernel relay ${kernel.us.toFixed(1)} us, poller thread ${thread.us.toFixed(1)} us`);
});
