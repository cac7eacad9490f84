// devservices: one binary that serves the device services and calls them.
// The CLI only: the subcommands live in src/cli/ (parsing, then the runtime for
// serve/demo, the client for call, the schemas for describe).
//
// `serve` loads only its own modules (the runtime and the services): the other
// subcommands (the board check and scan, the demo, describe's JSON Schemas) are
// loaded when one of them runs, so that the process a unit starts does not spend its
// start-up evaluating them nor keep their code and objects in its heap
// (docs/performance.md).
import { setCommand, usage, usageText, wantsHelp } from "./cli/args";
import pkg from "../package.json" with { type: "json" };

const help = (COMMANDS: Record<string, { USAGE: string }>) => `devservices ${pkg.version}: the device services of this platform, and their command line.

Usage:
${Object.values(COMMANDS)
  .map((c) => `  ${c.USAGE.trimEnd()}\n`)
  .join("\n")}
  devservices --version | --help | help COMMAND
      COMMAND --help (or -h) and help COMMAND print one command's usage.
`;

async function main() {
  // arm64: 128-bit SVE vectors where wider ones crashed the runtime (src/ffi/sve.ts).
  if (process.arch === "arm64") (await import("./ffi/sve")).ensureSafeVectorLength();
  const [cmd, ...argv] = process.argv.slice(2);
  if (cmd === "serve" && !wantsHelp(argv)) {
    const { serve } = await import("./cli/serve");
    setCommand(cmd);
    return serve(argv);
  }
  if (cmd === "--version" || cmd === "version") return console.log(pkg.version);
  const { COMMANDS } = await import("./cli");
  const isCommand = (name: string | undefined): name is string => name !== undefined && Object.hasOwn(COMMANDS, name);
  if (isCommand(cmd)) {
    // Every subcommand: --help/-h prints its usage; its usage errors name it.
    if (wantsHelp(argv)) return process.stdout.write(usageText(COMMANDS[cmd]!.USAGE));
    setCommand(cmd);
    return COMMANDS[cmd]!.run(argv);
  }
  switch (cmd) {
    case "help":
      if (argv.length > 1) usage("help takes at most one COMMAND");
      if (argv.length === 1) {
        if (!isCommand(argv[0])) usage(`unknown command ${argv[0]}`);
        return process.stdout.write(usageText(COMMANDS[argv[0]]!.USAGE));
      }
      return process.stdout.write(help(COMMANDS));
    case undefined:
    case "-h":
    case "--help":
      return process.stdout.write(help(COMMANDS));
    default:
      usage(`unknown command ${cmd}`);
  }
}

main().catch((e) => {
  process.stderr.write(`devservices: ${(e as Error).message}\n`);
  process.exit(1);
});
