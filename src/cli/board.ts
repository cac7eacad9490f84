// devservices board check | scan: a board recipe against the running system, and a
// draft recipe from it (src/boardcheck/, docs/board-recipes.md "Checking a board").
import { loadBoard } from "../core/board";
import { checkBoard } from "../boardcheck/check";
import { fails, line, summary } from "../boardcheck/part";
import { scanSystem } from "../boardcheck/scan";
import { DEFAULT_TIMEOUT_MS, defaults } from "../boardcheck/system";
import { cli, usage, wholeNumber, type Flags } from "./args";

export const USAGE = `devservices board check [--board NAME|PATH] [--json] [--rules FILE] [--timeout MS]
  devservices board scan [--name NAME] [--timeout MS]
      check: probes the running system for every part the board recipe names (GPIO
      lines, I2C adapters and the addresses listed, spidev nodes, UARTs, V4L2 formats,
      DRM planes, network interfaces, power states, mount points, node groups and
      modes by the installed 70-devservices.rules or --rules FILE) and prints one line
      per part: ok, missing, mismatch or unchecked, with the fix. Exit 1 when a
      required part is missing or mismatched. --timeout: the longest one probe waits
      (default ${DEFAULT_TIMEOUT_MS} ms). scan: prints a draft recipe (JSON) of what the kernel shows.
`;

const OPTIONS = {
  board: { type: "string" }, json: { type: "boolean" }, rules: { type: "string" }, timeout: { type: "string" }, name: { type: "string" },
} as const;
const ONLY: Record<string, readonly string[]> = { check: ["board", "json", "rules", "timeout"], scan: ["name", "timeout"] };

export async function board(argv: string[]) {
  const { flags, rest } = cli(argv, OPTIONS);
  const [sub, ...extra] = rest;
  if (sub === undefined) usage("board takes check or scan");
  if (!Object.hasOwn(ONLY, sub)) usage(`unknown board command ${sub} (check or scan)`);
  if (extra.length) usage(`board ${sub} takes no arguments, got '${extra[0]}'`);
  const other = Object.keys(flags).find((f) => flags[f] !== undefined && !ONLY[sub]!.includes(f));
  if (other) usage(`board ${sub} has no option --${other}`);
  const timeoutMs = wholeNumber(flags, "timeout", "--timeout", 1) ?? DEFAULT_TIMEOUT_MS;
  return sub === "check" ? check(flags, timeoutMs) : scan(flags, timeoutMs);
}

async function check(flags: Flags, timeoutMs: number) {
  const b = loadBoard(flags.board as string | undefined);
  const parts = await checkBoard(b, { ...defaults({ timeoutMs }), rules: flags.rules as string | undefined });
  const failed = fails(parts);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ board: b.name, ok: !failed, summary: summary(parts), parts }, null, 2)}\n`);
  } else {
    const s = summary(parts);
    process.stdout.write(`board ${b.name}\n${parts.map((p) => `${line(p)}\n`).join("")}` +
      `${failed ? "FAILED" : "passed"}: ${s.ok} ok, ${s.missing} missing, ${s.mismatch} mismatch, ${s.unchecked} unchecked\n`);
  }
  // The I2C transfer thread or a netlink socket must not hold the verdict back.
  process.exit(failed ? 1 : 0);
}

async function scan(flags: Flags, timeoutMs: number) {
  const draft = await scanSystem(defaults({ timeoutMs }), flags.name as string | undefined);
  process.stdout.write(`${JSON.stringify(draft, null, 2)}\n`);
  process.exit(0);
}
