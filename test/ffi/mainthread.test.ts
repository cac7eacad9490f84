// The rule of the FFI layer: nothing blocks the main thread. While a watch waits on
// an idle fd (a pty with no input) for 2 s, a 10 ms timer on the main thread keeps
// firing on time; then data arrives and the watch's callback runs.
import { expect, test } from "bun:test";
import * as tty from "../../src/ffi/termios.ts";
import { writeFd } from "../../src/ffi/libc.ts";
import { loopReady } from "../../src/ffi/loop.ts";

test("a pending watch leaves the main thread free: 10 ms ticks with no gap over 250 ms for 2 s (a blocked thread would show 2000), then the data", async () => {
  await loopReady();
  const p = tty.openPty();
  try {
    tty.setAttr(p.slave, tty.makeRaw(tty.getAttr(p.slave)));
    let arrivedAt = 0;
    const data = new Promise<string>((resolve) => {
      const w = tty.watchInput(p.slave, (d) => {
        arrivedAt = performance.now();
        w.close();
        resolve(d.toString());
      });
    });
    const ticks: number[] = [];
    const start = performance.now();
    const timer = setInterval(() => ticks.push(performance.now()), 10);
    await Bun.sleep(2000);
    clearInterval(timer);
    const sentAt = performance.now();
    writeFd(p.master, Buffer.from("frame"));
    expect(await data).toBe("frame");

    const gaps = ticks.map((t, i) => t - (i ? ticks[i - 1]! : start));
    const worst = Math.max(...gaps);
    expect(ticks.length).toBeGreaterThan(150); // about 200 ticks in 2 s
    expect(worst).toBeLessThan(250);
    expect(arrivedAt - sentAt).toBeLessThan(100);
  } finally {
    tty.close(p.slave);
    tty.close(p.master);
  }
});
