// The short names the service pages give for `serve` and `serviceConfig` are the
// names the binary knows (src/services/index.ts), and each page's title is that
// service's bus name.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../helpers/harness";
import { SERVICES } from "../../src/services/index";

const DOCS = join(ROOT, "docs/services");

test("every short name a service page gives is a service of the binary, the one its title names", () => {
  const pages = readdirSync(DOCS).filter((f) => f.endsWith(".md"));
  let named = 0;
  for (const page of pages) {
    const text = readFileSync(join(DOCS, page), "utf8").replace(/\s+/g, " ");
    const title = text.match(/^# [^(]*\(`([^`]+)`\)/)?.[1];
    const m = text.match(/Short name for `serve`[^:]*: `([^`]+)`/);
    if (!m) continue;
    named++;
    const short = m[1]!;
    const module = SERVICES[short];
    expect({ page, short, known: !!module }).toEqual({ page, short, known: true });
    const busName = module!.spec.busName;
    // The record page's title is the family (com.vendor.pipeline.record.<id>).
    expect({ page, title: title?.replace(/<[^>]*>$/, "") }).toEqual({ page, title: busName.replace(/<[^>]*>$/, "") });
  }
  expect(named).toBeGreaterThan(0);
});
