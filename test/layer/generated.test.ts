// The D-Bus policy the layer ships and the access table of docs/security.md are the
// ones the method tables make (src/policy.ts, written by scripts/policy.ts): a rule
// changed in a table and not regenerated fails here.
import { test, expect } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { policyFiles, accessTable, rulesOf, TABLE_BEGIN, TABLE_END } from "../../src/policy";
import { SERVICES } from "../../src/services";
import { ROOT } from "../helpers/harness";

const DIR = join(ROOT, "meta-devservices/recipes-core/devservices/files/dbus");

test("every shipped policy file is the generated one, and there is no other", () => {
  const made = policyFiles();
  for (const { file, text } of made) expect({ file, text: readFileSync(join(DIR, file), "utf8") }).toEqual({ file, text });
  expect(readdirSync(DIR).filter((f) => f.endsWith(".conf")).sort()).toEqual(made.map((m) => m.file).sort());
});

test("docs/security.md carries the generated table of every method's rule", () => {
  const doc = readFileSync(join(ROOT, "docs/security.md"), "utf8");
  const table = doc.slice(doc.indexOf(TABLE_BEGIN) + TABLE_BEGIN.length, doc.indexOf(TABLE_END)).trim();
  expect(table).toBe(accessTable());
  const methods = Object.values(SERVICES).reduce((n, m) => n + Object.keys(m.spec.api).length, 0);
  expect(table.split("\n").length).toBe(methods + 2);
});

test("deny by default: a method whose rule names groups is allowed to those groups only, and to no one by default", () => {
  const net = policyFiles().find((f) => f.file === "com.vendor.service.nettools.conf")!.text;
  const rules = rulesOf(SERVICES.nettools!);
  const restricted = rules.filter((r) => typeof r.who === "object");
  expect(restricted.map((r) => r.method)).toContain("sethostname");
  const byDefault = net.slice(net.indexOf('<policy context="default">'), net.indexOf("</policy>", net.indexOf('<policy context="default">')));
  for (const r of restricted) expect(byDefault).not.toContain(`send_member="${r.member}"`);
  expect(byDefault).not.toMatch(/<allow send_destination="[^"]+" send_path="[^"]+"\/>/); // no whole-service allow
  for (const r of restricted) for (const g of (r.who as { groups: string[] }).groups) expect(net).toContain(`<policy group="${g}">`);
});
