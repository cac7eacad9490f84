// devservices: one binary that serves the device services and calls them.
// The CLI only: the subcommands live in src/cli/ (parsing, then the runtime for
// serve/demo, the client for call, the schemas for describe).
import { COMMANDS } from "./cli";
import { setCommand, usage, usageText, wantsHelp } from "./cli/args";
import pkg from "../package.json" with { type: "json" };

const HELP = `devservices ${pkg.version}: the device services of this platform, and their command line.

Usage:
${Object.values(COMMANDS)
  .map((c) => `  ${c.USAGE.trimEnd()}\n`)
  .join("\n")}
  devservices --version | --help | help COMMAND
      COMMAND --help (or -h) and help COMMAND print one command's usage.
`;

const isCommand = (name: string | undefined): name is string => name !== undefined && Object.hasOwn(COMMANDS, name);

async function main() {
  const [cmd, ...argv] = process.argv.slice(2);
  if (isCommand(cmd)) {
    // Every subcommand: --help/-h prints its usage; its usage errors name it.
    if (wantsHelp(argv)) return process.stdout.write(usageText(COMMANDS[cmd]!.USAGE));
    setCommand(cmd);
    return COMMANDS[cmd]!.run(argv);
  }
  switch (cmd) {
    case "--version":
    case "version":
      return console.log(pkg.version);
    case "help":
      if (argv.length > 1) usage("help takes at most one COMMAND");
      if (argv.length === 1) {
        if (!isCommand(argv[0])) usage(`unknown command ${argv[0]}`);
        return process.stdout.write(usageText(COMMANDS[argv[0]]!.USAGE));
      }
      return process.stdout.write(HELP);
    case undefined:
    case "-h":
    case "--help":
      return process.stdout.write(HELP);
    default:
      usage(`unknown command ${cmd}`);
  }
}

main().catch((e) => {
  process.stderr.write(`devservices: ${(e as Error).message}\n`);
  process.exit(1);
});
