// gpio-sim through the GPIO character device: values set through the uAPI appear
// in the simulator's sysfs, and pulls applied there come back as values and edges.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import * as gpio from "../../src/ffi/gpio.ts";
import { loopStats } from "../../src/ffi/loop.ts";
import { collect, guest, readText } from "./vboard.ts";

const SIM = "/sys/kernel/config/gpio-sim/vboard";

guest("GPIO on gpio-sim", () => {
  let chip = -1;
  let sysfs = "";
  beforeAll(() => {
    const chipName = readText(`${SIM}/bank0/chip_name`);
    sysfs = `/sys/devices/platform/${readText(`${SIM}/dev_name`)}/${chipName}`;
    chip = gpio.openChip(`/dev/${chipName}`);
  });
  afterAll(() => gpio.close(chip));

  test("chip and line info", () => {
    expect(gpio.chipInfo(chip)).toMatchObject({ label: "vboard-gpio", lines: 8 });
    const info = gpio.lineInfo(chip, 3);
    expect(info).toMatchObject({ name: "line3", offset: 3, consumer: "" });
    expect(info.flags & gpio.LineFlag.USED).toBe(0n);
  });

  test("output values reach the simulator", () => {
    const req = gpio.requestLines(chip, {
      offsets: [1, 2], consumer: "hw-test",
      config: { flags: gpio.LineFlag.OUTPUT, outputValues: { bits: 0b01n, mask: 0b11n } },
    });
    try {
      expect(readText(`${sysfs}/sim_gpio1/value`)).toBe("1");
      expect(readText(`${sysfs}/sim_gpio2/value`)).toBe("0");
      gpio.setValues(req, 0b10n, 0b11n);
      expect(readText(`${sysfs}/sim_gpio1/value`)).toBe("0");
      expect(readText(`${sysfs}/sim_gpio2/value`)).toBe("1");
      expect(gpio.getValues(req, 0b11n)).toBe(0b10n);
      const info = gpio.lineInfo(chip, 2);
      expect(info.consumer).toBe("hw-test");
      expect(info.flags & (gpio.LineFlag.USED | gpio.LineFlag.OUTPUT)).toBe(gpio.LineFlag.USED | gpio.LineFlag.OUTPUT);
    } finally {
      gpio.close(req);
    }
    expect(gpio.lineInfo(chip, 2).flags & gpio.LineFlag.USED).toBe(0n);
  });

  test("input values and edge events follow the simulated pull (read on the event source)", async () => {
    writeFileSync(`${sysfs}/sim_gpio5/pull`, "pull-down");
    const req = gpio.requestLines(chip, {
      offsets: [5], consumer: "hw-edges",
      config: { flags: gpio.LineFlag.INPUT | gpio.LineFlag.EDGE_RISING | gpio.LineFlag.EDGE_FALLING },
    });
    try {
      expect(gpio.getValues(req, 1n)).toBe(0n);
      expect(gpio.readEdgeEvents(req)).toEqual([]); // non-blocking: nothing queued yet
      const rising = collect<gpio.LineEvent>((push) => gpio.watchEdges(req, push), 1);
      writeFileSync(`${sysfs}/sim_gpio5/pull`, "pull-up");
      const [ev] = await rising;
      expect(ev).toMatchObject({ id: gpio.EVENT_RISING_EDGE, offset: 5, seqno: 1, lineSeqno: 1 });
      expect(ev!.timestampNs).toBeGreaterThan(0n);
      expect(gpio.getValues(req, 1n)).toBe(1n);
      // The guest's kernel (as the firmware's) relays readiness itself: no poller thread.
      expect(loopStats.source()).toBe("kernel");
      const falling = collect<gpio.LineEvent>((push) => gpio.watchEdges(req, push), 1);
      writeFileSync(`${sysfs}/sim_gpio5/pull`, "pull-down");
      expect((await falling)[0]).toMatchObject({ id: gpio.EVENT_FALLING_EDGE, offset: 5, seqno: 2 });
    } finally {
      gpio.close(req);
    }
  });

  test("edge events are read without blocking: what is queued now, [] when nothing is", async () => {
    writeFileSync(`${sysfs}/sim_gpio0/pull`, "pull-down");
    const req = gpio.requestLines(chip, {
      offsets: [0], consumer: "hw-queue",
      config: { flags: gpio.LineFlag.INPUT | gpio.LineFlag.EDGE_RISING | gpio.LineFlag.EDGE_FALLING },
    });
    try {
      expect(gpio.readEdgeEvents(req)).toEqual([]);
      // Each edge reaches the request through an interrupt thread that reads the
      // line's level then: edges closer together than it runs merge. Space them out
      // on timers (nothing reads meanwhile), then poll the non-blocking read.
      for (const pull of ["pull-up", "pull-down", "pull-up"]) {
        writeFileSync(`${sysfs}/sim_gpio0/pull`, pull);
        await Bun.sleep(100);
      }
      const events: gpio.LineEvent[] = [];
      for (const end = Date.now() + 2000; events.length < 3 && Date.now() < end; await Bun.sleep(20)) {
        events.push(...gpio.readEdgeEvents(req));
      }
      expect(events.map((e) => e.id)).toEqual([gpio.EVENT_RISING_EDGE, gpio.EVENT_FALLING_EDGE, gpio.EVENT_RISING_EDGE]);
      expect(events.map((e) => e.lineSeqno)).toEqual([1, 2, 3]);
      expect(gpio.readEdgeEvents(req)).toEqual([]);
    } finally {
      gpio.close(req);
      writeFileSync(`${sysfs}/sim_gpio0/pull`, "pull-down");
    }
  });

  test("reconfiguring a request turns an input into an output", () => {
    const req = gpio.requestLines(chip, { offsets: [6], consumer: "hw-config", config: { flags: gpio.LineFlag.INPUT } });
    try {
      gpio.setConfig(req, { flags: gpio.LineFlag.OUTPUT, outputValues: { bits: 1n, mask: 1n } });
      expect(readText(`${sysfs}/sim_gpio6/value`)).toBe("1");
      expect(gpio.lineInfo(chip, 6).flags & gpio.LineFlag.OUTPUT).toBe(gpio.LineFlag.OUTPUT);
    } finally {
      gpio.close(req);
    }
  });

  test("watched line info reports request, reconfiguration and release (on the event source)", async () => {
    const watcher = gpio.openChip(`/dev/${readText(`${SIM}/bank0/chip_name`)}`);
    try {
      expect(gpio.addLineInfoWatch(watcher, 4).flags & gpio.LineFlag.USED).toBe(0n);
      expect(gpio.readLineInfoChanges(watcher)).toEqual([]);
      const changes = collect<gpio.LineInfoChanged>((push) => gpio.watchLineInfo(watcher, push), 3);
      const req = gpio.requestLines(chip, { offsets: [4], consumer: "hw-watch", config: { flags: gpio.LineFlag.INPUT } });
      gpio.setConfig(req, { flags: gpio.LineFlag.OUTPUT });
      gpio.close(req);
      const seen = await changes;
      expect(seen.map((c) => c.info.offset)).toEqual([4, 4, 4]);
      expect(seen.map((c) => c.eventType)).toEqual([gpio.LINE_CHANGED_REQUESTED, gpio.LINE_CHANGED_CONFIG, gpio.LINE_CHANGED_RELEASED]);
      expect(seen[0]!.info.consumer).toBe("hw-watch");
      gpio.removeLineInfoWatch(watcher, 4);
    } finally {
      gpio.close(watcher);
    }
  });

  test("a line already requested is busy", () => {
    const a = gpio.requestLines(chip, { offsets: [7], consumer: "first", config: { flags: gpio.LineFlag.INPUT } });
    try {
      expect(() => gpio.requestLines(chip, { offsets: [7], consumer: "second", config: { flags: gpio.LineFlag.INPUT } }))
        .toThrow(expect.objectContaining({ errno: 16 })); // EBUSY
    } finally {
      gpio.close(a);
    }
  });
});
