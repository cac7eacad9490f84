// The arm64 executable (DEVSERVICES_TARGET=bun-linux-arm64 bun run build ->
// dist/devservices-arm64) under qemu-aarch64 with Debian's arm64 C library: it
// answers --help, and serves a call on a private bus of this host, on CPU models with
// and without SVE (docs/decisions/arm64-sve.md: why these models, and what runs on each).
import { test, expect, beforeAll, afterAll } from "bun:test";
import { spawn, spawnSync } from "bun";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
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

// qemu-aarch64 -cpu models. qemu 7.2's default model is max: SVE2 at QEMU's default
// length of 512 bits, as in a qemu-system-aarch64 -cpu max guest (whose kernel also
// defaults to 64 bytes). At 128 bits Bun runs its own SVE2 code besides glibc's SVE
// memcpy; that model is traced (-d in_asm) and the test counts the SVE instructions that
// ran, so it shows the SVE paths ran, not only that the call answered (the trace costs
// about 10 s, so the other models are not traced).
const MODELS: { cpu: string; sve: boolean; trace?: boolean; what: string }[] = [
  { cpu: "neoverse-n1", sve: false, what: "Armv8.2 without SVE (Neoverse N1, Graviton2)" },
  { cpu: "max", sve: true, what: "SVE2 at 512 bits, the default: glibc's __memcpy_sve" },
  {
    cpu: "max,sve-default-vector-length=16",
    sve: true,
    trace: true,
    what: "SVE2 at 128 bits (Neoverse V2, Cortex-A710): Bun's own SVE2 string code and glibc's __memcpy_sve",
  },
  { cpu: "max,sve-default-vector-length=32", sve: true, what: "SVE2 at 256 bits (the length of Neoverse V1, Graviton3)" },
  { cpu: "a64fx", sve: true, what: "A64FX, 512 bits: glibc's A64FX SVE memcpy and memset, chosen by MIDR" },
];

const HWCAP_SVE = 1n << 22n; // asm/hwcap.h

/** AT_HWCAP as the arm64 dynamic loader sees it on this CPU model. */
function hwcap(cpu: string): bigint {
  const r = spawnSync([...QEMU, "-cpu", cpu, "/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1", "--list-diagnostics"], {
    stdout: "pipe",
    stderr: "pipe",
    timeout: 30000,
  });
  const m = /^dl_hwcap=(0x[0-9a-f]+)$/m.exec(r.stdout.toString());
  if (!m) throw new Error(`no dl_hwcap from ld.so --list-diagnostics on ${cpu}: ${r.stderr}`);
  return BigInt(m[1]);
}

/** The executable's code: its PT_LOAD segment with PF_X (ELF64, little-endian, non-PIE). */
function codeRange(file: string): [number, number] {
  const b = readFileSync(file).subarray(0, 64 * 1024);
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const phoff = Number(v.getBigUint64(32, true));
  const phentsize = v.getUint16(54, true);
  const phnum = v.getUint16(56, true);
  for (let i = 0; i < phnum; i++) {
    const o = phoff + i * phentsize;
    if (v.getUint32(o, true) === 1 && v.getUint32(o + 4, true) & 1) {
      const vaddr = Number(v.getBigUint64(o + 16, true));
      return [vaddr, vaddr + Number(v.getBigUint64(o + 40, true))];
    }
  }
  throw new Error(`${file}: no executable segment`);
}

/**
 * Distinct SVE instructions in a qemu -d in_asm log, split into the executable's and the
 * rest (the C library's). SVE is the A64 encoding space op0 = bits 28:25 = 0b0010. Lines
 * are "0xADDR:  WORD  text"; when the disassembler does not know an instruction, text is
 * ".byte b0, b1, b2, b3" in memory order.
 */
function sveInstructions(log: string, [lo, hi]: [number, number]): { runtime: number; other: number } {
  const runtime = new Set<number>();
  const other = new Set<number>();
  for (const m of log.matchAll(/^0x([0-9a-f]+):\s+([0-9a-f]{8})\s+(.*)$/gm)) {
    const b = /\.byte\s+0x(..),\s*0x(..),\s*0x(..),\s*0x(..)/.exec(m[3]);
    const word = b ? parseInt(b[4] + b[3] + b[2] + b[1], 16) : parseInt(m[2], 16);
    if (((word >>> 25) & 0xf) !== 0b0010) continue;
    const pc = parseInt(m[1], 16);
    (pc >= lo && pc < hi ? runtime : other).add(pc);
  }
  return { runtime: runtime.size, other: other.size };
}

/** Serves testautomation under qemu-aarch64 -cpu CPU; the host's binary calls ping. */
async function serveAndPing(cpu: string, name: string, qemuArgs: string[] = []) {
  const p = spawn(
    [...QEMU, "-cpu", cpu, ...qemuArgs, ARM64, "serve", "--bus", bus.address, "--state-dir", join(dir, `state-${name}`), "--log-level", "error", "testautomation"],
    { stdout: "ignore", stderr: "pipe" },
  );
  let reply: any;
  try {
    const call = () => spawnSync([BINARY, "call", "--bus", bus.address, "-w", "2000", "com.vendor.service.testautomation/ping", '{"Message":"hi"}'], { stdout: "pipe", stderr: "pipe" });
    const r = await eventually(() => {
      if (p.exitCode !== null) throw new Error(`serve on -cpu ${cpu} exited with ${p.exitCode} (signal ${p.signalCode})`);
      const c = call();
      return c.exitCode === 0 ? c : null;
    }, 60000, 250);
    reply = JSON.parse(r!.stdout.toString());
  } finally {
    if (p.exitCode === null) p.kill("SIGTERM");
  }
  const exit = await p.exited;
  return { reply, exit, stderr: await new Response(p.stderr).text() };
}

for (const [n, m] of MODELS.entries()) {
  test(`under qemu-aarch64 -cpu ${m.cpu} (${m.what}) it serves testautomation; the host's binary calls it`, async () => {
    expect((hwcap(m.cpu) & HWCAP_SVE) !== 0n).toBe(m.sve);
    const log = join(dir, `in_asm-${n}.log`);
    const { reply, exit, stderr } = await serveAndPing(m.cpu, String(n), m.trace ? ["-d", "in_asm,nochain", "-D", log] : []);
    expect(stderr).toBe("");
    expect(reply.Message).toBe("hi");
    expect(exit).toBe(0);
    if (m.trace) {
      const ran = sveInstructions(readFileSync(log, "latin1"), codeRange(ARM64));
      rmSync(log, { force: true });
      expect(ran.runtime).toBeGreaterThan(0); // Bun's SVE2 code
      expect(ran.other).toBeGreaterThan(0); // glibc's __memcpy_sve
    }
  }, 120000);
}
