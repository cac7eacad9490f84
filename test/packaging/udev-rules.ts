// A syntax check of udev rules files, after udev(7) and systemd's udev-rules.c (252),
// for hosts whose udevadm has no `verify` (systemd < 253, e.g. Debian 12).
// A rule is one line (continued with a trailing "\"): comma-separated
// KEY[{attr}]OP"value" pairs; match keys take == and !=, assignment keys = += -= :=.

export interface Pair {
  key: string;
  attr?: string;
  op: "==" | "!=" | "=" | "+=" | "-=" | ":=";
  value: string;
}
export interface Rule {
  line: number;
  pairs: Pair[];
}

const MATCH = ["==", "!="];
const ASSIGN = ["=", "+=", "-=", ":="];
/** key -> [needs {attr}: yes/no/optional, operators allowed] */
const KEYS: Record<string, [attr: "yes" | "no" | "optional", ops: string[]]> = {
  ACTION: ["no", MATCH], DEVPATH: ["no", MATCH], KERNEL: ["no", MATCH], SUBSYSTEM: ["no", MATCH], DRIVER: ["no", MATCH],
  KERNELS: ["no", MATCH], SUBSYSTEMS: ["no", MATCH], DRIVERS: ["no", MATCH], ATTRS: ["yes", MATCH], TAGS: ["no", MATCH],
  CONST: ["yes", MATCH], TEST: ["optional", MATCH], PROGRAM: ["no", MATCH], RESULT: ["no", MATCH],
  NAME: ["no", [...MATCH, "=", ":="]], SYMLINK: ["no", [...MATCH, ...ASSIGN]], ENV: ["yes", [...MATCH, "=", "+=", ":="]],
  TAG: ["no", [...MATCH, "=", "+=", "-=", ":="]], ATTR: ["yes", [...MATCH, "=", ":="]], SYSCTL: ["yes", [...MATCH, "=", ":="]],
  OWNER: ["no", ["=", ":="]], GROUP: ["no", ["=", ":="]], MODE: ["no", ["=", ":="]], SECLABEL: ["yes", ["=", "+=", ":="]],
  RUN: ["optional", ["=", "+=", "-=", ":="]], IMPORT: ["yes", MATCH.concat("=")], OPTIONS: ["no", ["=", "+=", ":="]],
  LABEL: ["no", ["="]], GOTO: ["no", ["="]],
};

/** Parses a rules file; syntax errors are returned with their line numbers. */
export function parseRules(text: string): { rules: Rule[]; errors: string[] } {
  const rules: Rule[] = [];
  const errors: string[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const start = i + 1;
    let line = lines[i]!;
    while (line.endsWith("\\") && i + 1 < lines.length) line = line.slice(0, -1) + lines[++i]!;
    line = line.trim();
    if (line === "" || line.startsWith("#")) continue;
    const pairs: Pair[] = [];
    let rest = line;
    while (rest.length) {
      const m = /^([A-Z_]+)(?:\{([^}]*)\})?\s*(==|!=|\+=|-=|:=|=)\s*"((?:[^"\\]|\\.)*)"\s*(,\s*|$)/.exec(rest);
      if (!m) {
        // also a pair not followed by a comma or the end of the line
        errors.push(`line ${start}: cannot parse at: ${rest}`);
        break;
      }
      const [all, key, attr, op, value] = m;
      pairs.push({ key: key!, ...(attr !== undefined ? { attr } : {}), op: op as Pair["op"], value: value! });
      rest = rest.slice(all.length);
    }
    for (const p of pairs) {
      const spec = KEYS[p.key];
      if (!spec) {
        errors.push(`line ${start}: unknown key ${p.key}`);
        continue;
      }
      if (spec[0] === "yes" && !p.attr) errors.push(`line ${start}: ${p.key} needs an {attribute}`);
      if (spec[0] === "no" && p.attr !== undefined) errors.push(`line ${start}: ${p.key} takes no {attribute}`);
      if (!spec[1].includes(p.op)) errors.push(`line ${start}: ${p.key} does not take ${p.op}`);
      if (p.key === "MODE" && !/^0?[0-7]{3}$/.test(p.value)) errors.push(`line ${start}: MODE ${p.value} is not octal`);
      if (MATCH.includes(p.op) && !balancedGlob(p.value)) errors.push(`line ${start}: unbalanced [ ] in ${p.value}`);
    }
    if (pairs.length) rules.push({ line: start, pairs });
  }
  // Every GOTO goes forward to a LABEL of this file.
  rules.forEach((r, idx) => {
    for (const p of r.pairs.filter((p) => p.key === "GOTO")) {
      if (!rules.slice(idx + 1).some((later) => later.pairs.some((q) => q.key === "LABEL" && q.value === p.value))) {
        errors.push(`line ${r.line}: GOTO ${p.value} has no LABEL after it`);
      }
    }
  });
  return { rules, errors };
}

function balancedGlob(v: string): boolean {
  let open = false;
  for (const c of v) {
    if (c === "[") {
      if (open) return false;
      open = true;
    } else if (c === "]") open = false;
  }
  return !open;
}

/** Matches a udev glob (*, ?, [..], alternatives with |) against a name. */
export function globMatch(pattern: string, name: string): boolean {
  return pattern.split("|").some((alt) => {
    const re = alt.replace(/[.+^${}()\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
    return new RegExp(`^${re}$`).test(name);
  });
}
