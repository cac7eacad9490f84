// devservices: one binary that serves the device services and calls them.
// The CLI only: the subcommands live in src/cli/ (parsing, then the runtime for
// serve/demo, the client for call, the schemas for describe).
import { COMMANDS } from "./cli";
import { usage } from "./cli/args";
import pkg from "../package.json" with { type: "json" };

const HELP = `devservices ${pkg.version}: the device services of this platform, and their command line.

Usage:
${Object.values(COMMANDS)
  .map((c) => `  ${c.USAGE.trimEnd()}\n`)
  .join("\n")}
  devservices --version | --help | help COMMAND
`;

async function main() {
  const [cmd, ...argv] = process.argv.slice(2);
  if (cmd !== undefined && Object.hasOwn(COMMANDS, cmd)) return COMMANDS[cmd]!.run(argv);
  switch (cmd) {
    case "--version":
    case "version":
      return console.log(pkg.version);
    case undefined:
    case "-h":
    case "--help":
    case "help":
      return process.stdout.write(HELP);
    default:
      usage(`unknown command ${cmd}`);
  }
}

main().catch((e) => {
  process.stderr.write(`devservices: ${(e as Error).message}\n`);
  process.exit(1);
});
