// spidev on the loopback controller (scripts/vboard.d/modules/spi-loopback): what is
// sent comes back, and the device settings round-trip through the kernel.
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as spi from "../../src/ffi/spi.ts";
import { guest } from "./vboard.ts";

guest("SPI on the loopback controller", () => {
  let fd = -1;
  beforeAll(() => { fd = spi.openDevice(0, 0); });
  afterAll(() => spi.close(fd));

  test("mode, word size and speed round-trip", () => {
    spi.setMode(fd, spi.Mode.MODE_3);
    expect(spi.getMode(fd)).toBe(spi.Mode.MODE_3);
    spi.setMode(fd, spi.Mode.MODE_0);
    expect(spi.getMode(fd)).toBe(spi.Mode.MODE_0);
    spi.setBitsPerWord(fd, 16);
    expect(spi.getBitsPerWord(fd)).toBe(16);
    spi.setBitsPerWord(fd, 8);
    spi.setMaxSpeedHz(fd, 500_000);
    expect(spi.getMaxSpeedHz(fd)).toBe(500_000);
    spi.setLsbFirst(fd, true);
    expect(spi.getLsbFirst(fd)).toBe(true);
    spi.setLsbFirst(fd, false);
    // A mode the controller lacks is refused.
    expect(() => spi.setMode(fd, spi.Mode.THREE_WIRE)).toThrow(expect.objectContaining({ errno: 22 }));
  });

  test("transmitted bytes loop back", () => {
    const tx = Uint8Array.from({ length: 64 }, (_, i) => (i * 7 + 3) & 0xff);
    expect([...spi.exchange(fd, tx)]).toEqual([...tx]);
  });

  test("a multi-transfer message returns each segment", () => {
    const [a, b, c] = spi.transfer(fd, [
      { tx: Uint8Array.of(0x9f) },
      { tx: Uint8Array.of(1, 2, 3), speedHz: 100_000, csChange: true },
      { length: 4 },
    ]);
    expect([...a!]).toEqual([0x9f]);
    expect([...b!]).toEqual([1, 2, 3]);
    expect([...c!]).toEqual([0, 0, 0, 0]);
  });
});
