// The error table as data, and how kernel errors map onto it (the rows the virtual
// board cannot produce are reached here: busy, not supported, internal).
import { test, expect } from "bun:test";
import { E } from "../../src/services/peripheralmanager/errors";
import { ioRow, openRow } from "../../src/services/peripheralmanager/service";
import { SysError } from "../../src/ffi/libc";

test("codes are distinct, 1 to 17, each with a text", () => {
  const rows = Object.values(E);
  expect(rows.map((r): number => r.code).sort((a, b) => a - b)).toEqual(Array.from({ length: 17 }, (_, i) => i + 1));
  for (const r of rows) expect(r.text.length).toBeGreaterThan(0);
});

test("errnos of transfers, settings and tty calls", () => {
  const row = (errno: number) => ioRow(new SysError("ioctl", errno));
  for (const n of [6, 121, 19]) expect(row(n)).toBe(E.noDevice); // ENXIO, EREMOTEIO, ENODEV
  for (const n of [95, 22, 25]) expect(row(n)).toBe(E.notSupported); // EOPNOTSUPP, EINVAL, ENOTTY
  expect(row(16)).toBe(E.busy); // EBUSY
  for (const n of [5, 110, 71]) expect(row(n)).toBe(E.ioError); // EIO, ETIMEDOUT, EPROTO
  expect(ioRow(new Error("a bug"))).toBe(E.internal);
});

test("errnos of opening a device", () => {
  const row = (errno: number) => openRow(new SysError("open", errno));
  expect(row(16)).toBe(E.busy);
  for (const n of [2, 13, 1, 19, 6]) expect(row(n)).toBe(E.deviceUnavailable); // ENOENT, EACCES, EPERM, ENODEV, ENXIO
  expect(row(22)).toBe(E.notSupported);
  expect(row(5)).toBe(E.ioError);
  expect(openRow(new TypeError("a bug"))).toBe(E.internal);
});
