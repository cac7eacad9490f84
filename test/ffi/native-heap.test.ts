// glibc's heap with the mmap threshold serve fixes (ffi/libc.ts,
// fixNativeMmapThreshold): a large block freed goes back to the kernel, also after an
// earlier one of its size was freed (glibc's moving threshold would keep the second
// in the heap, resident). Each case runs in a process of its own (the setting is
// process-wide), one with the threshold fixed and one without, to show the difference.
import { expect, test } from "bun:test";
import { join } from "node:path";
import { M_MMAP_THRESHOLD, NATIVE_MMAP_THRESHOLD } from "../../src/ffi/libc";
import { probe } from "./cabi";

test("M_MMAP_THRESHOLD is malloc.h's", () => {
  const abi = probe({ headers: ["malloc.h"], values: { minus_M_MMAP_THRESHOLD: "-(M_MMAP_THRESHOLD)" } });
  expect(-M_MMAP_THRESHOLD).toBe(abi.values.minus_M_MMAP_THRESHOLD!);
});

const BLOCK = 8 << 20;
const child = `
import { dlopen, FFIType } from "bun:ffi";
import { readFileSync } from "node:fs";
import { fixNativeMmapThreshold } from ${JSON.stringify(join(import.meta.dir, "../../src/ffi/libc"))};
const { malloc, free, memset } = dlopen("libc.so.6", {
  malloc: { args: [FFIType.u64], returns: FFIType.ptr },
  free: { args: [FFIType.ptr], returns: FFIType.void },
  memset: { args: [FFIType.ptr, FFIType.i32, FFIType.u64], returns: FFIType.ptr },
}).symbols;
const fixed = process.argv.at(-1) === "fixed" ? fixNativeMmapThreshold() : false;
const anon = () => Number(/RssAnon:\\s+(\\d+)/.exec(readFileSync("/proc/self/status", "utf8"))![1]) * 1024;
const block = () => { const p = malloc(${BLOCK}); memset(p, 1, ${BLOCK}); return p; };
free(block()); // glibc maps this one either way; freeing it moves an unfixed threshold past its size
const p = block();
const before = anon();
free(p);
console.log(JSON.stringify({ fixed, given: before - anon() }));
`;

async function run(mode: "fixed" | "default"): Promise<{ fixed: boolean; given: number }> {
  const p = Bun.spawn([process.execPath, "-e", child, mode], { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = [await new Response(p.stdout).text(), await new Response(p.stderr).text(), await p.exited];
  if (code !== 0) throw new Error(`child failed (${code}): ${err}`);
  return JSON.parse(out);
}

test("with the threshold fixed, a large block freed is given back; with glibc's default it stays resident", async () => {
  expect(NATIVE_MMAP_THRESHOLD).toBeLessThan(BLOCK);
  const [fixed, unfixed] = await Promise.all([run("fixed"), run("default")]);
  expect(fixed.fixed).toBe(true);
  expect(fixed.given).toBeGreaterThan(BLOCK * 0.9);
  expect(unfixed.given).toBeLessThan(BLOCK * 0.5);
});
