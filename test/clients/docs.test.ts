// docs/clients.md's examples are run as they are written: each ```ts block as a
// script of its own (its import of ./src/clients pointed at this checkout) against
// the virtual board's services on a private bus ($DEVSERVICES_BUS), and what it
// prints is what its `// prints:` comments say.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "bun";
import { BUN, ROOT, testEnv, type Env } from "../helpers/harness";

const doc = readFileSync(join(ROOT, "docs/clients.md"), "utf8");
const blocks = [...doc.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);

let env: Env;
let dir: string;
beforeAll(async () => {
  env = await testEnv();
  await env.start(["power2", "peripheralmanager", "camera2"]);
  dir = mkdtempSync(join(tmpdir(), "clients-doc-"));
}, 30000);
afterAll(async () => {
  await env?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("docs/clients.md has examples, each importing the client", () => {
  expect(blocks.length).toBeGreaterThanOrEqual(4);
  for (const b of blocks) expect(b).toContain('from "./src/clients"');
});

for (const [i, block] of blocks.entries()) {
  const expected = [...block.matchAll(/\/\/ prints: (.*)$/gm)].map((m) => m[1]!.trim());
  test(`example ${i + 1} runs and prints ${JSON.stringify(expected)}`, async () => {
    const file = join(dir, `example${i + 1}.ts`);
    writeFileSync(file, block.replaceAll('"./src/clients"', JSON.stringify(join(ROOT, "src/clients"))));
    const p = spawn([BUN, file], { stdout: "pipe", stderr: "pipe", env: { ...process.env, DEVSERVICES_BUS: env.bus.address } });
    const timer = setTimeout(() => p.kill(), 20000);
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    clearTimeout(timer);
    expect({ code, err }).toEqual({ code: 0, err: "" });
    expect(out.trim().split("\n")).toEqual(expected);
    expect(env.rt!.server.stats().subscriptions).toBe(0);
  }, 30000);
}
