// Board recipes (recipes/boards/*.json): what a board has and which services run
// on it. The format is documented in docs/board-recipes.md; hardware sections are
// added by the services that use them and validated there.
import { z } from "zod";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseRecorded } from "./config";
import virtualRecipe from "../../recipes/boards/virtual.json" with { type: "json" };

/** The board's own fields (a plain function: the schema is built for each load and is garbage after it). */
export const boardSchema = () => z.looseObject({
  name: z.string().min(1),
  description: z.string().default(""),
  /** `linux` drives real kernel interfaces; `virtual` simulates them. */
  backend: z.enum(["linux", "virtual"]).default("virtual"),
  /** Services hosted by `devservices serve` when none are named. */
  services: z.array(z.string()).min(1),
  /** Per-service options, keyed by the service's short name. */
  serviceConfig: z.record(z.string(), z.record(z.string(), z.unknown())).default({}),
  /** What one client may hold at once, for every service (docs/limits.md). */
  limits: z
    .strictObject({
      payloadBytes: z.int().min(1024).max(64 << 20).optional(),
      payloadDepth: z.int().min(2).max(1024).optional(),
      subscriptionsPerClient: z.int().positive().optional(),
      subscriptionsPerUser: z.int().positive().optional(),
    })
    .default({}),
});

export type Board = z.infer<ReturnType<typeof boardSchema>>;

/** Where named recipes are looked up, in order; the virtual board is also built in. */
export function recipeDirs(): string[] {
  const dirs = [];
  if (process.env.DEVSERVICES_RECIPES) dirs.push(process.env.DEVSERVICES_RECIPES);
  dirs.push("/etc/devservices/boards", "/usr/share/devservices/boards");
  dirs.push(join(import.meta.dir, "../../recipes/boards"));
  return dirs;
}

export function parseBoard(data: unknown, origin: string): Board {
  const r = parseRecorded("board", boardSchema, data);
  if (!r.success) {
    throw new Error(`board recipe ${origin} is invalid: ${z.prettifyError(r.error)}`);
  }
  return r.data;
}

/** Loads a board recipe by name or path; no name means the virtual board. */
export function loadBoard(nameOrPath?: string): Board {
  const want = nameOrPath ?? process.env.DEVSERVICES_BOARD ?? "virtual";
  const isPath = want.includes("/") || want.endsWith(".json");
  const candidates = isPath ? [want] : recipeDirs().map((d) => join(d, `${want}.json`));
  for (const file of candidates) {
    if (!existsSync(file)) continue;
    let data: unknown;
    try {
      data = JSON.parse(readFileSync(file, "utf8"));
    } catch (e) {
      throw new Error(`board recipe ${file} is not valid JSON: ${(e as Error).message}`);
    }
    return parseBoard(data, file);
  }
  if (want === "virtual") return parseBoard(virtualRecipe, "built-in virtual");
  throw new Error(`no board recipe named ${want} (looked in ${candidates.join(", ")})`);
}
