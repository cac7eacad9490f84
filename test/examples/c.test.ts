// The C examples (examples/c, sd-bus), built with the commands of examples/README.md
// into a temporary directory, against `devservices serve` of the virtual board.
import { afterAll } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../helpers/harness";
import { exampleSuite } from "./setup";

const out = mkdtempSync(join(tmpdir(), "examples-c-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

/** The build lines of examples/README.md ("gcc ... -o NAME NAME.c ..."), run in examples/c with NAME written to `out`. */
function buildCommands(): string[] {
  const readme = readFileSync(join(ROOT, "examples/README.md"), "utf8");
  return readme.split("\n").filter((l) => l.startsWith("gcc "));
}

exampleSuite("C", async () => {
  if (Bun.spawnSync(["sh", "-c", "command -v gcc"]).exitCode !== 0) return "no C compiler (scripts/setup installs gcc)";
  if (Bun.spawnSync(["pkg-config", "--exists", "libsystemd"]).exitCode !== 0) return "pkg-config or libsystemd-dev missing (scripts/setup installs them)";
  const lines = buildCommands();
  if (lines.length !== 3) throw new Error(`examples/README.md should give 3 build lines, has ${lines.length}`);
  for (const line of lines) {
    const cmd = line.replace(/ -o (\w+) /, ` -Werror -o ${out}/$1 `);
    const cc = Bun.spawnSync(["sh", "-c", cmd], { cwd: join(ROOT, "examples/c") });
    if (cc.exitCode !== 0) throw new Error(`${cmd}\n${cc.stderr.toString()}`);
  }
  return { argv: (program, args) => [join(out, program), ...args] };
});
