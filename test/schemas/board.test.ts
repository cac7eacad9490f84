// The board recipe's published JSON Schema (docs/schemas/board-recipe.schema.json,
// written by scripts/schemas.ts): it is the generator's output, it compiles with ajv
// in strict mode, every shipped recipe validates, broken recipes do not, and ajv and
// the services' zod schemas agree on recipes made wrong field by field.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020";
import { BOARD_SCHEMA_FILE, boardRecipeZod, boardSchemaText } from "../../scripts/schemas";
import { parseBoard } from "../../src/core/board";
import { ROOT } from "../helpers/harness";

const ajv = new Ajv2020({ strict: true, allowUnionTypes: true });
const published = JSON.parse(readFileSync(BOARD_SCHEMA_FILE, "utf8"));
const validate = ajv.compile(published);
const zod = boardRecipeZod();
const DIR = join(ROOT, "recipes/boards");
const shipped = readdirSync(DIR)
  .filter((f) => f.endsWith(".json"))
  .map((f) => ({ file: f, recipe: JSON.parse(readFileSync(join(DIR, f), "utf8")) }));
const virtual = shipped.find((s) => s.file === "virtual.json")!.recipe;

test("the committed schema is what scripts/schemas.ts makes (run `bun scripts/schemas.ts` after a schema change)", () => {
  expect(readFileSync(BOARD_SCHEMA_FILE, "utf8")).toBe(boardSchemaText());
});

test("it is a JSON Schema that ajv compiles in strict mode, describing every service's options and the hardware sections", () => {
  expect(ajv.validateSchema(published)).toBe(true);
  expect(Object.keys(published.properties.serviceConfig.properties).sort()).toEqual(
    ["camera2", "filecache", "intent", "mediaindexer", "nettools", "peripheralmanager", "power2", "record", "testautomation", "videooutput"],
  );
  for (const section of ["peripheralmanager", "record", "power2"]) expect(published.properties[section].type).toBe("object");
});

test("every shipped recipe validates (ajv), as the services read it (zod) and as the board loader does", () => {
  expect(shipped.length).toBeGreaterThanOrEqual(2);
  for (const { file, recipe } of shipped) {
    expect({ file, ok: validate(recipe), errors: validate.errors ?? null }).toEqual({ file, ok: true, errors: null });
    expect({ file, ok: zod.safeParse(recipe).success }).toEqual({ file, ok: true });
    expect(() => parseBoard(recipe, file)).not.toThrow();
  }
});

/**
 * The virtual recipe with a value for every service's options that it leaves to
 * their defaults where the published schema states a check (intent, testautomation,
 * mediaindexer's paths), so that the field-by-field comparison reaches them too.
 */
const full = structuredClone(virtual);
full.serviceConfig.intent = {
  applicationDirs: ["/usr/share/devservices/applications"],
  sessions: { driver: ["/home/driver/applications"] },
  launcher: "exec",
  launchTimeoutMs: 10000,
  maxIntents: 1024,
  maxLaunchesPerUidPerSecond: 4,
  handlerNice: 10,
};
full.serviceConfig.testautomation = { replyTimeoutMs: 10000 };
full.serviceConfig.mediaindexer = { ...full.serviceConfig.mediaindexer, mediaRoots: ["/srv/media"], database: "/var/lib/devservices/db/media.db" };

/** A copy of the recipe (the full one by default) with one change. */
const broken = (change: (r: any) => void, base: unknown = full) => {
  const r = structuredClone(base) as any;
  change(r);
  return r;
};

test("the full recipe the comparisons start from validates in ajv and zod", () => {
  expect({ ajv: validate(full), errors: validate.errors ?? null, zod: zod.safeParse(full).success }).toEqual({ ajv: true, errors: null, zod: true });
});

test("a broken recipe does not validate, in ajv and in zod alike", () => {
  const cases: [string, any][] = [
    ["no name", broken((r) => delete r.name)],
    ["backend qemu", broken((r) => (r.backend = "qemu"))],
    ["services a string", broken((r) => (r.services = "power2"))],
    ["no services", broken((r) => (r.services = []))],
    ["a pin ID that is not gpio<N>", broken((r) => (r.peripheralmanager.gpio = { pin4: { line: 4 } }))],
    ["an I2C slave address as text", broken((r) => (r.peripheralmanager.i2c = { I2C1: { slaveAddresses: ["0x50"] } }))],
    ["camera2 ringSlots as text", broken((r) => (r.serviceConfig.camera2.ringSlots = "8"))],
    ["a record pipeline ID with a dot", broken((r) => (r.record.pipelines = ["front.left"]))],
    ["a power machine without its states", broken((r) => delete r.power2.states)],
    ["a limit below its minimum", broken((r) => (r.limits = { payloadBytes: 10 }))],
    ["an unknown limit", broken((r) => (r.limits = { callsPerSecond: 5 }))],
    ["a service section that is not an object", broken((r) => (r.serviceConfig.intent = 5))],
    ["an intent launcher that does not exist", broken((r) => (r.serviceConfig.intent.launcher = "systemd"))],
    ["an intent maxIntents of 0", broken((r) => (r.serviceConfig.intent.maxIntents = 0))],
    ["an intent session whose directories are not a list", broken((r) => (r.serviceConfig.intent.sessions = { driver: "/home/driver" }))],
    ["a testautomation replyTimeoutMs as text", broken((r) => (r.serviceConfig.testautomation.replyTimeoutMs = "10s"))],
    ["a testautomation replyTimeoutMs of 0", broken((r) => (r.serviceConfig.testautomation.replyTimeoutMs = 0))],
    ["a relative mediaindexer media root", broken((r) => (r.serviceConfig.mediaindexer.mediaRoots = ["media"]))],
    ["a relative mediaindexer removableRoot", broken((r) => (r.serviceConfig.mediaindexer.removableRoot = "media"))],
    ["a relative mediaindexer database", broken((r) => (r.serviceConfig.mediaindexer.database = "db/media.db"))],
  ];
  for (const [what, recipe] of cases) expect({ what, ajv: validate(recipe), zod: zod.safeParse(recipe).success }).toEqual({ what, ajv: false, zod: false });
});

test("ajv and zod agree on recipes made wrong field by field (every field of every section, two levels deep), with no exception", () => {
  const WRONG: unknown[] = ["text", "relative/path", "/absolute/path", "", 7, -1, 1.5, true, null, [], {}, [7], ["relative"]];
  let n = 0;
  const disagree: string[] = [];
  const check = (recipe: unknown, what: string) => {
    n++;
    const a = validate(recipe), z = zod.safeParse(recipe).success;
    if (a !== z) disagree.push(`${what}: ajv ${a}, zod ${z}`);
  };
  const walk = (path: string[], value: unknown, depth: number) => {
    if (!value || typeof value !== "object" || depth > 3) return;
    for (const k of Object.keys(value)) {
      const at = [...path, k];
      for (const w of WRONG) check(broken((r) => (at.slice(0, -1).reduce((o, p) => o[p], r)[k] = w)), `${at.join(".")} = ${JSON.stringify(w)}`);
      check(broken((r) => delete at.slice(0, -1).reduce((o, p) => o[p], r)[k]), `without ${at.join(".")}`);
      walk(at, (value as any)[k], depth + 1);
    }
  };
  walk([], full, 0);
  expect(disagree).toEqual([]);
  expect(n).toBeGreaterThan(500);
});
