// No zod schema is built while the modules `serve` loads are evaluated
// (docs/performance.md, "Start" and "Idle memory"): the schemas a service's methods
// share are built on their first use (`once`, src/core/service.ts), the methods' own
// when first called (`schemaOf`), and the options, board and recipe-section schemas
// when a service starts, as garbage after it. A module-level schema was built at
// every start and kept for good whether or not any method used it.
import { expect, test } from "bun:test";
import { Glob } from "bun";
import { join } from "node:path";
import { BUN, ROOT } from "../helpers/harness";

/** Runs the counter on `mods` in a process of its own: { module: schemas built while importing it }. */
async function count(mods: string[]): Promise<Record<string, number>> {
  const p = Bun.spawn([BUN, join(ROOT, "test/fixtures/zod-at-import.ts"), ...mods], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(p.stdout).text();
  expect(await p.exited).toBe(0);
  return JSON.parse(out.trim().split("\n").pop()!);
}

/** Every module of the platform and the services, leaves of a folder before its index, then serve's entry. */
function modules(): string[] {
  const files = [...new Glob("src/{core,bus,ffi,services}/**/*.ts").scanSync(ROOT)]
    .filter((f) => !f.endsWith(".d.ts") && !/-worker\.ts$/.test(f) && !f.includes("/c/"))
    .sort((a, b) => b.split("/").length - a.split("/").length || a.localeCompare(b));
  return [...files, "src/runtime.ts", "src/cli/serve.ts"].map((f) => join(ROOT, f));
}

test("importing every module serve loads builds no zod schema", async () => {
  const counts = await count(modules());
  expect(Object.keys(counts).length).toBeGreaterThan(50);
  const built = Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0).map(([m, n]) => [m.slice(ROOT.length + 1), n]));
  expect(built).toEqual({});
}, 60_000);

test("the counter sees a schema built at module evaluation", async () => {
  // The probe builds z.string().min(1) when evaluated: the string, its min-length check
  // and the checked copy, three of zod's objects.
  expect(Object.values(await count([join(ROOT, "test/fixtures/zod-at-import-probe.ts")]))).toEqual([3]);
}, 30_000);
