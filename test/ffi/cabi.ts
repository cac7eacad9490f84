// Compiles a small C program against the kernel uAPI headers that prints the sizes,
// member offsets and ioctl numbers an FFI module mirrors, so tests can compare.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface StructLayout { c: string; size: number; fields: Record<string, number>; lengths?: Record<string, number> }

export interface CAbi {
  sizes: Record<string, number>;
  /** "<struct key>.<field>" -> offset */
  offsets: Record<string, number>;
  /** "<struct key>.<field>" -> sizeof the member (for the table's `lengths`) */
  lengths: Record<string, number>;
  values: Record<string, number>;
}

/**
 * Builds and runs the probe. `values` maps names to C expressions (ioctl macros,
 * constants); include paths beyond the defaults go in `includeDirs`.
 */
export function probe(opts: {
  headers: string[];
  structs?: Record<string, StructLayout>;
  values?: Record<string, string>;
  includeDirs?: string[];
  /** Feature macros defined before any header, e.g. _GNU_SOURCE. */
  defines?: string[];
}): CAbi {
  const lines = [...(opts.defines ?? []).map((d) => `#define ${d}`), "#include <stdio.h>", "#include <stddef.h>", "#include <sys/types.h>", "#include <sys/socket.h>"];
  for (const h of opts.headers) lines.push(`#include <${h}>`);
  lines.push("int main(void) {");
  for (const [key, s] of Object.entries(opts.structs ?? {})) {
    lines.push(`  printf("S %s %zu\\n", ${JSON.stringify(key)}, sizeof(${s.c}));`);
    for (const f of Object.keys(s.fields)) {
      lines.push(`  printf("F %s.%s %zu\\n", ${JSON.stringify(key)}, ${JSON.stringify(f)}, offsetof(${s.c}, ${f}));`);
    }
    for (const f of Object.keys(s.lengths ?? {})) {
      lines.push(`  printf("L %s.%s %zu\\n", ${JSON.stringify(key)}, ${JSON.stringify(f)}, sizeof(((${s.c} *)0)->${f}));`);
    }
  }
  for (const [name, expr] of Object.entries(opts.values ?? {})) {
    lines.push(`  printf("V %s %llu\\n", ${JSON.stringify(name)}, (unsigned long long)(${expr}));`);
  }
  lines.push("  return 0;", "}");
  const dir = mkdtempSync(join(tmpdir(), "cabi-"));
  try {
    const src = join(dir, "probe.c"), exe = join(dir, "probe");
    writeFileSync(src, lines.join("\n") + "\n");
    const cc = Bun.spawnSync(["gcc", "-w", "-D__user=", ...(opts.includeDirs ?? []).flatMap((d) => ["-idirafter", d]), "-o", exe, src]);
    if (cc.exitCode !== 0) throw new Error(`gcc failed:\n${cc.stderr.toString()}`);
    const run = Bun.spawnSync([exe]);
    const out: CAbi = { sizes: {}, offsets: {}, lengths: {}, values: {} };
    for (const line of run.stdout.toString().split("\n")) {
      const [kind, name, v] = line.split(" ");
      if (!kind || !name || v === undefined) continue;
      const n = Number(v);
      if (kind === "S") out.sizes[name] = n;
      else if (kind === "F") out.offsets[name] = n;
      else if (kind === "L") out.lengths[name] = n;
      else out.values[name] = n;
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Our layouts in the probe's shape, for a single toEqual per kind. */
export function expected(structs: Record<string, StructLayout>): Pick<CAbi, "sizes" | "offsets" | "lengths"> {
  const sizes: Record<string, number> = {}, offsets: Record<string, number> = {}, lengths: Record<string, number> = {};
  for (const [key, s] of Object.entries(structs)) {
    sizes[key] = s.size;
    for (const [f, o] of Object.entries(s.fields)) offsets[`${key}.${f}`] = o;
    for (const [f, n] of Object.entries(s.lengths ?? {})) lengths[`${key}.${f}`] = n;
  }
  return { sizes, offsets, lengths };
}

/** Each ioctl name is also its C expression. */
export function macros(ioctls: Record<string, number>): Record<string, string> {
  return Object.fromEntries(Object.keys(ioctls).map((k) => [k, k]));
}

export const hasGcc = Bun.which("gcc") !== null;
export { existsSync };

/**
 * The two checks every FFI module gets: its struct layouts, and its ioctl numbers
 * and constants (name -> [C expression, our value]) against the C headers.
 */
export function checkAgainstHeaders(
  title: string,
  opts: {
    headers: string[];
    includeDirs?: string[];
    defines?: string[];
    structs: Record<string, StructLayout>;
    ioctls?: Record<string, number>;
    consts?: Record<string, [string, number | bigint]>;
    skip?: boolean;
  },
): void {
  describe.skipIf(!hasGcc || !!opts.skip)(title, () => {
    const consts = opts.consts ?? {};
    const abi = probe({
      headers: opts.headers,
      includeDirs: opts.includeDirs,
      defines: opts.defines,
      structs: opts.structs,
      values: { ...macros(opts.ioctls ?? {}), ...Object.fromEntries(Object.entries(consts).map(([k, [c]]) => [k, c])) },
    });
    test("struct sizes and offsets", () => {
      const want = expected(opts.structs);
      expect(abi.sizes).toEqual(want.sizes);
      expect(abi.offsets).toEqual(want.offsets);
      expect(abi.lengths).toEqual(want.lengths);
    });
    test.skipIf(!opts.ioctls && !opts.consts)("ioctl numbers and constants", () => {
      for (const [k, v] of Object.entries(opts.ioctls ?? {})) expect([k, abi.values[k]]).toEqual([k, v]);
      for (const [k, [, v]] of Object.entries(consts)) expect([k, abi.values[k]]).toEqual([k, Number(v)]);
    });
  });
}

/** Constants whose C name is their key: { NAME: value } -> { NAME: ["NAME", value] }. */
export function sameNames(values: Record<string, number | bigint>): Record<string, [string, number | bigint]> {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, [k, v]]));
}
