// The client's types come from the services' zod schemas: test/clients/types-check.ts
// type-checks (tsc), and each line there marked @ts-expect-error (a wrong field type,
// an unknown method, subscribe on a method that cannot keep a call open) is refused.
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "bun";
import { ROOT } from "../helpers/harness";

test("request and response types are the schemas' (tsc on types-check.ts)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "clients-tsc-"));
  try {
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        extends: join(ROOT, "tsconfig.json"),
        compilerOptions: { typeRoots: [join(ROOT, "node_modules/@types")] },
        include: [],
        files: [join(ROOT, "test/clients/types-check.ts")],
      }),
    );
    const p = spawn([join(ROOT, "node_modules/.bin/tsc"), "--noEmit", "-p", join(dir, "tsconfig.json")], { stdout: "pipe", stderr: "pipe" });
    const [out, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
    expect(out).toBe("");
    expect(code).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60000);
