// The tests leave the host's accounts alone: their groups and users are in the run's
// own files (test/layer/accounts.ts), and the preload checks after the last test file
// that /etc/group, /etc/passwd and their shadows are unchanged. That check cannot see
// a test that would add a group the host already has (a getent-or-groupadd); this one
// does: no host test runs a command that adds or changes accounts.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { ROOT } from "../helpers/harness";

/** Run only elsewhere: in the firmware image (test/firmware), the packaging checks' own image (test/packaging), the virtual-board guest (test/hw). */
const ELSEWHERE = ["test/firmware", "test/packaging", "test/hw"];
const ACCOUNT_COMMANDS = /\b(groupadd|groupmod|groupdel|useradd|usermod|userdel|adduser|addgroup|gpasswd|chpasswd|newusers)\b/;

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    const rel = relative(ROOT, p);
    if (ELSEWHERE.some((d) => rel === d || rel.startsWith(`${d}/`))) continue;
    if (statSync(p).isDirectory()) out.push(...sources(p));
    else if (/\.(ts|sh|py)$/.test(e)) out.push(p);
  }
  return out;
}

test("no host test adds or changes a group or a user on the host", () => {
  const self = relative(ROOT, import.meta.path);
  const found = sources(join(ROOT, "test"))
    .filter((p) => relative(ROOT, p) !== self)
    .flatMap((p) => readFileSync(p, "utf8").split("\n").map((line, i) => ({ where: `${relative(ROOT, p)}:${i + 1}`, line })))
    .filter(({ line }) => ACCOUNT_COMMANDS.test(line))
    .map(({ where, line }) => `${where}: ${line.trim()}`);
  expect(found).toEqual([]);
});
