// Every subcommand answers --help and -h with its own usage (stdout, exit 0), as
// `devservices help CMD` does; an unknown option names that subcommand's --help.
import { test, expect } from "bun:test";
import { spawn } from "bun";
import { BINARY } from "../helpers/harness";
import { COMMANDS } from "../../src/cli";

const run = async (...args: string[]) => {
  const p = spawn([BINARY, ...args], { stdout: "pipe", stderr: "pipe", env: { ...process.env, DEVSERVICES_BUS: "unix:path=/nonexistent" } });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
};

const names = Object.keys(COMMANDS);

test("the subcommands are those of src/cli/index.ts", () => {
  expect(names).toEqual(expect.arrayContaining(["serve", "call", "describe", "demo"]));
});

for (const name of names) {
  test(`${name} --help, ${name} -h and help ${name} print ${name}'s usage on stdout, exit 0`, async () => {
    const usage = COMMANDS[name]!.USAGE;
    for (const args of [[name, "--help"], [name, "-h"], ["help", name], [name, "--log-level", "x", "--help"]]) {
      const r = await run(...args);
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: "" });
      expect(r.stdout).toContain(usage);
      // Its own usage, not the whole list.
      for (const other of names.filter((n) => n !== name)) expect(r.stdout).not.toContain(COMMANDS[other]!.USAGE);
    }
  });

  test(`${name} with an unknown option names ${name}'s usage, exit 2`, async () => {
    const r = await run(name, "--no-such-option");
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("--no-such-option");
    expect(r.stderr).toContain(`Try 'devservices ${name} --help'.`);
  });
}

test("call's usage errors name call's usage", async () => {
  const r = await run("call");
  expect(r.code).toBe(2);
  expect(r.stderr).toContain("Try 'devservices call --help'.");
});

test("help with no command prints every command; an unknown one is a usage error", async () => {
  const all = await run("help");
  expect(all.code).toBe(0);
  for (const name of names) expect(all.stdout).toContain(COMMANDS[name]!.USAGE.split("\n")[0]!);
  const r = await run("help", "frobnicate");
  expect(r.code).toBe(2);
  expect(r.stderr).toContain("unknown command frobnicate");
  expect(r.stderr).toContain("Try 'devservices --help'.");
});

test("--help after -- is an argument, not a request for help", async () => {
  const r = await run("describe", "--", "--help");
  expect(r.code).toBe(2);
  expect(r.stderr).toContain("unknown service --help");
});
