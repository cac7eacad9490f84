// The arm64 executable (DEVSERVICES_TARGET=bun-linux-arm64 bun run build ->
// dist/devservices-arm64) under qemu-aarch64 with Debian's arm64 C library: it
// answers --help, and serves a call on a private bus of this host.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { spawn, spawnSync } from "bun";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, ROOT, eventually } from "../helpers/harness";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";

const ARM64 = join(ROOT, "dist/devservices-arm64");
const QEMU = ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"];
let bus: PrivateBus;
let dir: string;

beforeAll(async () => {
  if (!existsSync(ARM64)) {
    const r = spawnSync(["bun", "run", "build"], { cwd: ROOT, env: { ...process.env, DEVSERVICES_TARGET: "bun-linux-arm64" }, stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`arm64 build failed: ${r.stderr}`);
  }
  for (const f of ["/usr/bin/qemu-aarch64", "/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1"]) {
    if (!existsSync(f)) throw new Error(`${f} is missing: scripts/setup installs qemu-user and libc6-arm64-cross`);
  }
  bus = await startPrivateBus();
  dir = mkdtempSync(join(tmpdir(), "arm64-"));
});
afterAll(async () => {
  await bus?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("it is an aarch64 executable", () => {
  const head = Bun.file(ARM64).slice(0, 20);
  return head.arrayBuffer().then((b) => {
    const v = new DataView(b);
    expect(v.getUint32(0)).toBe(0x7f454c46); // \x7fELF
    expect(v.getUint8(4)).toBe(2); // 64-bit
    expect(v.getUint16(18, true)).toBe(183); // EM_AARCH64
  });
});

test("under qemu-aarch64 it answers --help", () => {
  const r = spawnSync([...QEMU, ARM64, "--help"], { stdout: "pipe", stderr: "pipe", timeout: 60000 });
  expect(r.exitCode).toBe(0);
  expect(r.stdout.toString()).toContain("devservices serve [--bus ADDRESS|system|session]");
});

test("under qemu-aarch64 it serves testautomation on a private bus; the host's binary calls it", async () => {
  const p = spawn([...QEMU, ARM64, "serve", "--bus", bus.address, "--state-dir", join(dir, "state"), "--log-level", "error", "testautomation"], {
    stdout: "ignore",
    stderr: "inherit",
  });
  try {
    const call = () => spawnSync([BINARY, "call", "--bus", bus.address, "-w", "2000", "com.vendor.service.testautomation/ping", '{"Message":"hi"}'], { stdout: "pipe", stderr: "pipe" });
    const r = await eventually(() => {
      const c = call();
      return c.exitCode === 0 ? c : null;
    }, 60000, 250);
    expect(r!.stdout.toString()).toBe('{"Message":"hi"}\n');
  } finally {
    p.kill("SIGTERM");
    expect(await p.exited).toBe(0);
  }
}, 90000);
