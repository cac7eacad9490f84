// The import directions docs/architecture.md states ("The layers"), checked on every
// import of src/**/*.ts: a layer imports only what the picture lets it, so the
// picture stays true as the code changes.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const SRC = join(ROOT, "src");

/** Every .ts file under dir, as a path relative to the repository ("src/ffi/libc.ts"). */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [relative(ROOT, join(dir, e.name))] : [],
  );
}

/** The module specifiers a file imports: static imports and re-exports (type-only ones too), dynamic import() and require(). */
export function specifiers(text: string): string[] {
  // Comments go first: an import written in a comment is no import.
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
  const out: string[] = [];
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?(?:[\w*${}\s,]+?\s+from\s+)?["']([^"']+)["']/g,
    /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g,
    /\brequire\s*\(\s*["']([^"']+)["']\s*\)/g,
  ];
  for (const re of patterns) for (const m of code.matchAll(re)) out.push(m[1]!);
  return out;
}

/** An import of a file of src/, as a path relative to the repository (without extension: "src/ffi/libc"); undefined for packages and node: modules. */
function target(from: string, spec: string): string | undefined {
  if (!spec.startsWith(".")) return undefined;
  return relative(ROOT, resolve(ROOT, dirname(from), spec)).replace(/\.(ts|js|json)$/, "");
}

/** What a file of src/ is, for the rules: its layer, and its service when it is one's. */
function placeOf(path: string): { layer: string; service?: string } {
  const p = path.replace(/^src\//, "");
  const parts = p.split("/");
  if (parts.length === 1) return { layer: parts[0]!.replace(/\.ts$/, "") };
  if (p === "services/index.ts") return { layer: "registry" };
  if (parts[0] === "services" && parts.length > 2) return { layer: "services", service: parts[1] };
  return { layer: parts[0]! };
}

/** Files of src/services/<name>/ a client library may import: the API a service publishes (its method schemas and the spec's error table). */
const PUBLISHED = /^src\/services\/[^/]+\/(schemas|errors)$/;

/**
 * The rules, one per layer: whether `from` may import `to` (both relative to the
 * repository, to without extension). The same rules, in words, are the table of
 * docs/architecture.md.
 */
const RULES: Record<string, { says: string; may: (from: string, to: string) => boolean }> = {
  ffi: { says: "src/ffi imports only src/ffi", may: (_f, to) => to.startsWith("src/ffi/") },
  core: { says: "src/core imports only src/core", may: (_f, to) => to.startsWith("src/core/") },
  bus: { says: "src/bus imports src/bus, src/core and src/ffi", may: (_f, to) => /^src\/(bus|core|ffi)\//.test(to) },
  files: { says: "src/files.ts imports src/core and src/ffi", may: (_f, to) => /^src\/(core|ffi)\//.test(to) },
  services: {
    says: "a service imports its own folder, src/core, src/ffi, src/files.ts, the bus's one client (src/bus/client.ts) and the client libraries (src/clients/); never another service",
    may: (from, to) => {
      const own = from.split("/").slice(0, 3).join("/") + "/";
      return to.startsWith(own) || /^src\/(core|ffi|clients)\//.test(to) || to === "src/files" || to === "src/bus/client";
    },
  },
  registry: {
    says: "src/services/index.ts (the services the binary hosts) imports each service's service.ts and src/core",
    may: (_f, to) => /^src\/services\/[^/]+\/service$/.test(to) || to.startsWith("src/core/"),
  },
  clients: {
    says: "src/clients imports src/clients, src/bus, src/core, src/ffi and of a service only what it publishes (schemas.ts, errors.ts)",
    may: (_f, to) => /^src\/(clients|bus|core|ffi)\//.test(to) || PUBLISHED.test(to),
  },
};

/**
 * Imports that break a rule until a change outside the services lands, each with
 * that change. Listed here so that the rule holds for every other file meanwhile.
 */
const PENDING = new Set<string>([]);

const files = sources(SRC);
const edges = files.flatMap((from) =>
  specifiers(readFileSync(join(ROOT, from), "utf8"))
    .map((s) => target(from, s))
    .filter((to): to is string => to !== undefined && to.startsWith("src/"))
    .map((to) => ({ from, to })),
);

describe("import directions (docs/architecture.md, The layers)", () => {
  test("the imports are read: every layer's files import something, and relative imports resolve to files of src/", () => {
    expect(files.length).toBeGreaterThan(100);
    for (const layer of Object.keys(RULES)) expect(edges.some((e) => placeOf(e.from).layer === layer)).toBe(true);
    const known = new Set(files.map((f) => f.replace(/\.ts$/, "")));
    // A module of src/ imported without its file (a directory, a .json) would escape the rules.
    const unresolved = edges.filter((e) => !known.has(e.to) && !known.has(`${e.to}/index`)).map((e) => `${e.from} -> ${e.to}`);
    expect(unresolved).toEqual([]);
  });

  for (const [layer, rule] of Object.entries(RULES))
    test(rule.says, () => {
      const wrong = edges.filter((e) => placeOf(e.from).layer === layer && !rule.may(e.from, e.to)).map((e) => `${e.from} -> ${e.to}`);
      expect(wrong.filter((w) => !PENDING.has(w))).toEqual([]);
    });

  test("every pending exception is still needed (remove it once its change landed)", () => {
    const now = new Set(edges.map((e) => `${e.from} -> ${e.to}`));
    expect([...PENDING].filter((p) => !now.has(p))).toEqual([]);
  });

  test("nothing below the runtime imports it, the CLI or the entry point", () => {
    const top = /^src\/(main|runtime|policy|cli\/|boardcheck\/)/;
    const wrong = edges.filter((e) => ["ffi", "core", "bus", "files", "services", "registry", "clients"].includes(placeOf(e.from).layer) && top.test(e.to));
    expect(wrong.map((e) => `${e.from} -> ${e.to}`)).toEqual([]);
  });

  test("the import reader finds what it must and ignores comments", () => {
    const text = [
      'import { a } from "./a";',
      'import type { B } from "../b";',
      "import {\n  c,\n  d,\n} from './c';",
      'export { e } from "./e";',
      'export * from "./f";',
      'import "./g";',
      'const h = await import("./h");',
      '// import { x } from "./commented";',
      '/* import { y } from "./block"; */',
      'const url = "https://example.com"; // not an import',
    ].join("\n");
    expect(specifiers(text).sort()).toEqual(["../b", "./a", "./c", "./e", "./f", "./g", "./h"]);
  });
});
