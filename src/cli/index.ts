// The subcommands of the devservices binary: each one's usage text and entry point.
// A new subcommand is a file of this folder and one entry here.
import * as serve from "./serve";
import * as call from "./call";
import * as describe from "./describe";
import * as demo from "./demo";
import * as health from "./health";
import * as board from "./board";

export interface Command {
  /** Its usage: the first line is the synopsis, the rest is indented description. */
  USAGE: string;
  run(argv: string[]): unknown;
}

export const COMMANDS: Record<string, Command> = {
  serve: { USAGE: serve.USAGE, run: serve.serve },
  call: { USAGE: call.USAGE, run: call.call },
  describe: { USAGE: describe.USAGE, run: describe.describe },
  demo: { USAGE: demo.USAGE, run: demo.demo },
  health: { USAGE: health.USAGE, run: health.health },
  board: { USAGE: board.USAGE, run: board.board },
};
