// The example in docs/services/videooutput.md works as written: each `devservices
// call` line is run by the shipped binary as its own process (root, as the media
// framework on a device) against the service on the virtual board; a `# {...}` line
// after a call is its answer; the `call -i` line holds its subscription in another
// process, which sees the changes the other lines make.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { spawn } from "bun";
import { binaryBuilt, eventually, ROOT } from "../helpers/harness";
import { serveVideoOutput, type Held, type Served } from "./served";

const skip = process.getuid?.() !== 0 ? "needs root (setpriv)" : !binaryBuilt() ? "dist/devservices is not built (bun run build)" : null;
if (skip) console.warn(`videooutput docs example test skipped: ${skip}`);

/** The words of a shell line that quotes with single quotes only (as the example does). */
function words(line: string): string[] {
  const out: string[] = [];
  const re = /'([^']*)'|(\S+)/g;
  for (let m; (m = re.exec(line)); ) out.push(m[1] ?? m[2]!);
  return out;
}

interface Step {
  line: string;
  argv: string[];
  expected?: unknown;
}

function example(): Step[] {
  const md = readFileSync(join(ROOT, "docs/services/videooutput.md"), "utf8");
  const block = /```sh\n([\s\S]*?)```/.exec(md);
  if (!block) throw new Error("docs/services/videooutput.md has no sh example");
  const steps: Step[] = [];
  for (const line of block[1]!.split("\n").map((l) => l.trim()).filter(Boolean)) {
    if (line.startsWith("devservices ")) steps.push({ line, argv: words(line).slice(1) });
    else if (line.startsWith("# {")) steps.at(-1)!.expected = JSON.parse(line.slice(2));
    else if (!line.startsWith("#")) throw new Error(`not a call or a comment: ${line}`);
  }
  return steps;
}

describe.skipIf(skip !== null)("docs/services/videooutput.md's example", () => {
  let s: Served;
  beforeAll(async () => {
    s = await serveVideoOutput();
  }, 40000);
  afterAll(async () => {
    await s?.stop();
  });

  test("every call answers as shown; the subscribed terminal sees every change", async () => {
    const steps = example();
    expect(steps.length).toBeGreaterThan(10);
    let held: Held | undefined;
    for (const step of steps) {
      const [cmd, ...rest] = step.argv;
      expect(cmd).toBe("call");
      const flags = rest.filter((w) => w.startsWith("-"));
      const [uri, payload] = rest.filter((w) => !w.startsWith("-"));
      if (flags.includes("-i")) {
        const [service, ...path] = uri!.split("/");
        expect(service).toBe("com.vendor.service.videooutput");
        held = s.hold(0, [], path.join("/"), JSON.parse(payload!));
        await eventually(() => held!.messages.length === 1, 10000);
        expect(held.messages[0]).toMatchObject({ returnValue: true, subscribed: true });
        continue;
      }
      // As written, on the test's bus.
      const p = spawn([s.app, "call", "--bus", s.env.bus.address, ...rest], { cwd: s.dir, stdout: "pipe", stderr: "pipe" });
      const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      expect([step.line, code, err]).toEqual([step.line, 0, ""]);
      const answer = JSON.parse(out.trim());
      if (step.expected !== undefined) expect([step.line, answer]).toEqual([step.line, step.expected]);
      else expect([step.line, answer.returnValue]).toEqual([step.line, true]);
    }
    // connect MAIN, setVideoData, setDisplayWindow, connect SUB0, setCompositing, disconnect SUB0, unregister.
    expect(held).toBeDefined();
    await eventually(() => held!.messages.length === 8, 10000);
    const last = held!.messages[7].video as Record<string, unknown>[];
    expect(last.map((v) => [v.sink, v.connected])).toEqual([["MAIN", false], ["SUB0", false]]);
    expect(held!.messages[3].video[0]).toMatchObject({ width: 4096, height: 2160, displayOutput: { x: 100, y: 100, width: 1024, height: 540 } });
    held!.proc.kill("SIGTERM");
    expect(await held!.proc.exited).toBe(0);
  }, 60000);
});
