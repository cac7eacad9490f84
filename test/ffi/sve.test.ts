// When an arm64 process re-executes itself with 128-bit SVE vectors (src/ffi/sve.ts,
// docs/decisions/arm64-sve.md): vectors wider than 128 bits under a kernel older than
// 6.12. The re-execution itself is checked by the arm64 firmware test on -cpu max
// (scripts/firmware test --arch arm64, FIRMWARE_CPU=max: docs/firmware.md).
import { expect, test } from "bun:test";
import { ensureSafeVectorLength, KEEP, MARK, wantsSafeLength } from "../../src/ffi/sve";

test("vectors wider than 128 bits on a kernel before 6.12 are limited to 128", () => {
  // Debian 12's kernel, QEMU max (512 bits) and Neoverse V1 (256 bits): limited.
  expect(wantsSafeLength(64, "6.1.0-56-arm64")).toBe(true);
  expect(wantsSafeLength(32, "6.1.0-56-arm64")).toBe(true);
  // Yocto scarthgap's 6.6 and other releases between: limited too (not shown to pass).
  expect(wantsSafeLength(32, "6.6.52-yocto-standard")).toBe(true);
  expect(wantsSafeLength(256, "5.15.0")).toBe(true);
  expect(wantsSafeLength(32, "6.11.9")).toBe(true);
  // 6.12 and later: as they are.
  expect(wantsSafeLength(64, "6.12.117+deb13-arm64")).toBe(false);
  expect(wantsSafeLength(64, "6.18.0")).toBe(false);
  expect(wantsSafeLength(64, "7.0.1")).toBe(false);
  // 128-bit vectors (Neoverse V2, Cortex-A710) need nothing, whatever the kernel.
  expect(wantsSafeLength(16, "6.1.0-56-arm64")).toBe(false);
  // A release this cannot read is left as it is.
  expect(wantsSafeLength(64, "unknown")).toBe(false);
});

test("the re-executed process drops its mark, so a devservices it starts decides for itself; keep is kept", () => {
  const reexecuted: NodeJS.ProcessEnv = { [MARK]: "64", PATH: "/usr/bin" };
  ensureSafeVectorLength(reexecuted);
  expect(reexecuted).toEqual({ PATH: "/usr/bin" });
  const kept: NodeJS.ProcessEnv = { [MARK]: KEEP };
  ensureSafeVectorLength(kept);
  expect(kept).toEqual({ [MARK]: KEEP });
});
