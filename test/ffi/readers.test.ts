// src/ffi/readers.ts: a reader on the event source stops at a failed read (instead
// of being told of the same error for ever) and survives a failing callback.
import { expect, spyOn, test } from "bun:test";
import { watchItems } from "../../src/ffi/readers.ts";
import { eventfd, eventfdRead, eventfdSignal } from "../../src/ffi/shm.ts";
import { closeFd } from "../../src/ffi/libc.ts";
import { staysTrue, eventually } from "../helpers/harness";

test("a failed read closes the watch and reaches onError once", async () => {
  const fd = eventfd();
  try {
    let reads = 0;
    const failed = new Promise<Error>((resolve) => {
      const w = watchItems(fd, () => {
        reads++;
        throw new Error("device gone");
      }, () => {}, { onError: (e) => { expect(w.closed).toBe(true); resolve(e); } });
    });
    eventfdSignal(fd); // stays readable: nothing reads the counter
    expect((await failed).message).toBe("device gone");
    await staysTrue(() => reads === 1, 50, "a reader that failed reads no more");
  } finally {
    closeFd(fd);
  }
});

test("a callback that throws is logged; the watch goes on with the next items", async () => {
  const fd = eventfd();
  const logged = spyOn(console, "error").mockImplementation(() => {});
  try {
    const seen: bigint[] = [];
    const two = new Promise<void>((resolve) => {
      const w = watchItems(fd, () => {
        const n = eventfdRead(fd);
        return n === null ? [] : [n];
      }, (n) => {
        seen.push(n);
        if (seen.length === 1) throw new Error("handler bug");
        w.close();
        resolve();
      });
    });
    eventfdSignal(fd);
    await eventually(() => seen.length === 1); // read (and its handler failed) before the second signal
    eventfdSignal(fd, 5);
    await two;
    expect(seen).toEqual([1n, 5n]);
    expect(logged).toHaveBeenCalledTimes(1);
  } finally {
    logged.mockRestore();
    closeFd(fd);
  }
});
