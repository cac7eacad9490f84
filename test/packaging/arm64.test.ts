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
// memcpy; that model is traced (-d in_asm over the executable's SVE code) and the test
// counts the runtime's SVE instructions that ran, so it shows Bun's SVE path ran, not
// only that the call answered.
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

const isSve = (word: number) => ((word >>> 25) & 0xf) === 0b0010; // A64 op0 = bits 28:25

/**
 * The parts of the executable's code that hold SVE instructions, as qemu -dfilter ranges
 * (START+LENGTH), runs closer than 4 KiB merged: the trace logs only these, which keeps
 * it cheap. Each starts 1 KiB early, since qemu filters a block by its first address and
 * a block can begin a few instructions before its first SVE one. The code is the PT_LOAD
 * segment with PF_X (ELF64, little-endian, not PIE).
 */
function sveRanges(file: string): string[] {
  const f = readFileSync(file);
  const v = new DataView(f.buffer, f.byteOffset, f.byteLength);
  const phoff = Number(v.getBigUint64(32, true));
  const [phentsize, phnum] = [v.getUint16(54, true), v.getUint16(56, true)];
  for (let i = 0; i < phnum; i++) {
    const o = phoff + i * phentsize;
    if (v.getUint32(o, true) !== 1 || !(v.getUint32(o + 4, true) & 1)) continue;
    const offset = Number(v.getBigUint64(o + 8, true));
    const vaddr = Number(v.getBigUint64(o + 16, true));
    const size = Number(v.getBigUint64(o + 32, true));
    const ranges: [number, number][] = [];
    for (let at = 0; at + 4 <= size; at += 4) {
      if (!isSve(v.getUint32(offset + at, true))) continue;
      const last = ranges[ranges.length - 1];
      if (last && vaddr + at - last[1] < 4096) last[1] = vaddr + at + 4;
      else ranges.push([vaddr + at, vaddr + at + 4]);
    }
    return ranges.map(([lo, hi]) => `0x${(lo - 1024).toString(16)}+0x${(hi - lo + 1024).toString(16)}`);
  }
  throw new Error(`${file}: no executable segment`);
}

/**
 * Distinct SVE instructions in a qemu -d in_asm log. Lines are "0xADDR:  WORD  text";
 * when the disassembler does not know an instruction, text is ".byte b0, b1, b2, b3" in
 * memory order.
 */
function sveInstructions(log: string): number {
  const pcs = new Set<string>();
  for (const m of log.matchAll(/^0x([0-9a-f]+):\s+([0-9a-f]{8})\s+(.*)$/gm)) {
    const b = /\.byte\s+0x(..),\s*0x(..),\s*0x(..),\s*0x(..)/.exec(m[3]);
    if (isSve(parseInt(b ? b[4] + b[3] + b[2] + b[1] : m[2], 16))) pcs.add(m[1]);
  }
  return pcs.size;
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
    const trace = m.trace ? ["-d", "in_asm,nochain", "-dfilter", sveRanges(ARM64).join(","), "-D", log] : [];
    const { reply, exit, stderr } = await serveAndPing(m.cpu, String(n), trace);
    expect(stderr).toBe("");
    expect(reply.Message).toBe("hi");
    expect(exit).toBe(0);
    if (m.trace) {
      const ran = sveInstructions(readFileSync(log, "latin1"));
      rmSync(log, { force: true });
      // Bun's SVE2 code: its length probe alone is 1 instruction (a cntb), at every length.
      expect(ran).toBeGreaterThan(1);
    }
  }, 120000);
}
