#!/usr/bin/env bun
// Writes the D-Bus policy files of meta-devservices and the access table of
// docs/security.md from the services' method tables (src/policy.ts).
//   bun scripts/policy.ts           write them
//   bun scripts/policy.ts --check   exit 1 when a file differs from what the tables make
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { policyFiles, accessTable, TABLE_BEGIN, TABLE_END } from "../src/policy";

const root = join(import.meta.dir, "..");
const dbusDir = join(root, "meta-devservices/recipes-core/devservices/files/dbus");
const securityDoc = join(root, "docs/security.md");
const check = process.argv.includes("--check");
let differ = 0;

function put(file: string, text: string) {
  const old = existsSync(file) ? readFileSync(file, "utf8") : "";
  if (old === text) return;
  differ++;
  if (check) console.error(`${file} differs from what the method tables make (bun scripts/policy.ts writes it)`);
  else writeFileSync(file, text);
}

for (const { file, text } of policyFiles()) put(join(dbusDir, file), text);
const doc = readFileSync(securityDoc, "utf8");
const a = doc.indexOf(TABLE_BEGIN);
const b = doc.indexOf(TABLE_END);
if (a < 0 || b < a) throw new Error(`${securityDoc} has no generated-table markers`);
put(securityDoc, doc.slice(0, a + TABLE_BEGIN.length) + "\n" + accessTable() + "\n" + doc.slice(b));
if (check && differ) process.exit(1);
if (!check) console.log(differ ? `policy: ${differ} file(s) written` : "policy: up to date");
