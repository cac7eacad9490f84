// The start's record of its parses (src/core/config.ts: recordParses, parseRecorded,
// saveParses): a start of the same build with the same state directory takes the
// output recorded for an input seen before without building the schema; anything
// else (another input, a failed parse, an output that is not plain data, another
// build or state directory, an unreadable record, a run from source) is zod's parse.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn } from "bun";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { parseRecorded, recordParses, saveParses } from "../../src/core/config";
import { BINARY, binaryBuilt, eventually, ROOT } from "../helpers/harness";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "parse-record-"));
});
afterAll(() => {
  saveParses();
  rmSync(dir, { recursive: true, force: true });
});

/** A schema factory that counts the schemas it built. */
function counted<S extends z.ZodType>(make: () => S) {
  const f = () => {
    f.built++;
    return make();
  };
  f.built = 0;
  return f;
}

const options = () => z.object({ size: z.number().int().positive().default(4096), name: z.string().default("cache"), tags: z.array(z.string()).default([]) });

/** One "start": opens the record, runs `parses`, saves it. */
function start<T>(file: string, build: string | undefined, stateDir: string, parses: () => T): T {
  recordParses(file, stateDir, build);
  try {
    return parses();
  } finally {
    expect(saveParses()).toBeUndefined();
  }
}

describe("parseRecorded", () => {
  test("the next start of the build takes the recorded output for the same input, without building the schema", () => {
    const file = join(dir, "same.json");
    const make = counted(options);
    const first = start(file, "b1", dir, () => parseRecorded("options", make, { size: 8192, tags: ["a"] }));
    expect(first).toEqual({ success: true, data: { size: 8192, name: "cache", tags: ["a"] } });
    expect(make.built).toBe(1);
    expect(existsSync(file)).toBe(true);
    const second = start(file, "b1", dir, () => parseRecorded("options", make, { size: 8192, tags: ["a"] }));
    expect(make.built).toBe(1);
    expect(second).toEqual(first);
    // A copy of its own: what a caller changes is not what the next caller gets.
    const third = start(file, "b1", dir, () => [parseRecorded("options", make, { size: 8192, tags: ["a"] }), parseRecorded("options", make, { size: 8192, tags: ["a"] })]);
    expect(make.built).toBe(1);
    expect(third[0]!.data).not.toBe(third[1]!.data);
    expect(third[0]!.data).toEqual(third[1]!.data);
  });

  test("another input, or the same input under another name, is parsed by zod", () => {
    const file = join(dir, "other.json");
    const make = counted(options);
    start(file, "b1", dir, () => parseRecorded("options", make, { size: 1 }));
    expect(start(file, "b1", dir, () => parseRecorded("options", make, { size: 2 })).data).toEqual({ size: 2, name: "cache", tags: [] });
    expect(make.built).toBe(2);
    expect(start(file, "b1", dir, () => parseRecorded("options of another", make, { size: 2 })).data).toEqual({ size: 2, name: "cache", tags: [] });
    expect(make.built).toBe(3);
  });

  test("a failed parse is not recorded: every start gets zod's error", () => {
    const file = join(dir, "failed.json");
    const make = counted(options);
    for (let i = 0; i < 2; i++) {
      const r = start(file, "b1", dir, () => parseRecorded("options", make, { size: -1 }));
      expect(r.success).toBe(false);
      expect(z.prettifyError(r.error!)).toContain("size");
    }
    expect(make.built).toBe(2);
  });

  test("an output that is not plain data is parsed at every start", () => {
    const file = join(dir, "not-plain.json");
    const cases: [string, () => z.ZodType, unknown][] = [
      ["a date", () => z.object({ at: z.string().transform((s) => new Date(s)) }), { at: "2026-01-01T00:00:00Z" }],
      ["a set", () => z.object({ ids: z.array(z.number()).transform((a) => new Set(a)) }), { ids: [1, 2] }],
      ["an undefined member", () => z.object({ x: z.string() }).transform((o) => ({ ...o, y: undefined })), { x: "a" }],
      ["a function", () => z.object({ x: z.string() }).transform((o) => ({ ...o, f: () => o.x })), { x: "a" }],
      ["a class", () => z.object({ x: z.string() }).transform((o) => Object.assign(new (class Options {})(), o)), { x: "a" }],
    ];
    for (const [what, schema, input] of cases) {
      const make = counted(schema);
      const a = start(file, "b1", dir, () => parseRecorded(what, make, input));
      const b = start(file, "b1", dir, () => parseRecorded(what, make, input));
      expect([what, make.built]).toEqual([what, 2]);
      expect(b.success && a.success).toBe(true);
    }
  });

  test("another build, another state directory or an unreadable record: zod's parse", () => {
    const file = join(dir, "stamp.json");
    const make = counted(options);
    start(file, "b1", dir, () => parseRecorded("options", make, { size: 5 }));
    start(file, "b2", dir, () => parseRecorded("options", make, { size: 5 }));
    expect(make.built).toBe(2);
    start(file, "b2", join(dir, "elsewhere"), () => parseRecorded("options", make, { size: 5 }));
    expect(make.built).toBe(3);
    for (const junk of ["", "{", "[]", JSON.stringify({ stamp: `1 b2 ${join(dir, "elsewhere")}`, entries: [[1, 2], "x"] })]) {
      writeFileSync(file, junk);
      expect(start(file, "b2", join(dir, "elsewhere"), () => parseRecorded("options", make, { size: 5 })).data).toEqual({ size: 5, name: "cache", tags: [] });
    }
    expect(make.built).toBe(7);
  });

  test("run from source (no build): nothing recorded, nothing written", () => {
    const file = join(dir, "source.json");
    const make = counted(options);
    start(file, undefined, dir, () => parseRecorded("options", make, { size: 5 }));
    start(file, undefined, dir, () => parseRecorded("options", make, { size: 5 }));
    expect(make.built).toBe(2);
    expect(existsSync(file)).toBe(false);
  });

  test("the record is rewritten only when it changed, and keeps only what the start used", () => {
    const file = join(dir, "rewrite.json");
    const make = counted(options);
    start(file, "b1", dir, () => [parseRecorded("a", make, {}), parseRecorded("b", make, {})]);
    const written = statSync(file).mtimeMs;
    const before = readFileSync(file, "utf8");
    start(file, "b1", dir, () => [parseRecorded("a", make, {}), parseRecorded("b", make, {})]);
    expect(readFileSync(file, "utf8")).toBe(before);
    expect(statSync(file).mtimeMs).toBe(written);
    start(file, "b1", dir, () => parseRecorded("a", make, {}));
    const kept = JSON.parse(readFileSync(file, "utf8")) as { entries: [string, string][] };
    expect(kept.entries.map(([k]) => k.split("\n")[0])).toEqual(["a"]);
    expect(make.built).toBe(2);
  });
});

// The executable records the start's parses in its state directory and takes them at
// the next start; a recipe changed between starts is the recipe that counts.
describe.if(binaryBuilt())("serve", () => {
  let bus: PrivateBus;
  beforeAll(async () => {
    bus = await startPrivateBus();
  });
  afterAll(async () => {
    await bus?.stop();
  });

  const virtual = JSON.parse(readFileSync(join(ROOT, "recipes/boards/virtual.json"), "utf8"));
  const board = (total: unknown, services = ["filecache"]) => {
    const file = join(dir, `board-${String(total)}-${services.length}.json`);
    writeFileSync(file, JSON.stringify({ ...virtual, services, serviceConfig: { ...virtual.serviceConfig, filecache: { configFile: null, totalCacheSpace: total } } }));
    return file;
  };
  const stateDir = () => join(dir, "serve-state");

  /** Starts serve on `boardFile`; the cache's free space once its name is owned, or the exit status and output when it fails. */
  async function run(boardFile: string, services: string[] = []): Promise<{ availSpace?: number; exit?: number; output: string }> {
    const p = spawn([BINARY, "serve", "--bus", bus.address, "--board", boardFile, "--state-dir", stateDir(), "--log-level", "warn", ...services], { stdout: "pipe", stderr: "pipe" });
    const output = new Response(p.stdout).text();
    const client = await BusClient.connect(bus.address);
    try {
      const owned = await eventually(async () => (p.exitCode !== null ? "exited" : (await client.hasOwner("com.vendor.service.filecache")) ? "owned" : undefined), 15000, 20).catch(() => "exited");
      if (owned === "exited" || !owned) return { exit: await p.exited, output: await output };
      const status = (await client.call("filecache", "GetCacheStatus", {})) as { availSpace: number };
      return { availSpace: status.availSpace, output: "" };
    } finally {
      client.close();
      p.kill("SIGTERM");
      await p.exited;
    }
  }

  test("a restart takes the recorded options; a changed recipe is read afresh; an invalid one still fails with zod's error", async () => {
    const mib = 1 << 20;
    expect((await run(board(8 * mib))).availSpace).toBe(8 * mib);
    const record = join(stateDir(), "start-parses.json");
    const first = readFileSync(record, "utf8");
    expect(JSON.parse(first).stamp).toMatch(/^1 [0-9a-f]{32} /);
    expect(first).toContain("options of filecache");
    expect((await run(board(8 * mib))).availSpace).toBe(8 * mib);
    expect(readFileSync(record, "utf8")).toBe(first);
    expect((await run(board(4 * mib))).availSpace).toBe(4 * mib);
    const failed = await run(board("lots"));
    expect(failed.exit).not.toBe(0);
    expect(failed.output).toContain("serviceConfig.filecache is invalid");
    expect(failed.output).toContain("totalCacheSpace");
  }, 60_000);

  test("processes that host other sets of services (the per-service units) keep records of their own in the shared state directory", async () => {
    const mib = 1 << 20;
    const file = board(8 * mib, ["filecache", "testautomation"]);
    expect((await run(file)).availSpace).toBe(8 * mib);
    const all = readFileSync(join(stateDir(), "start-parses.json"), "utf8");
    expect(all).toContain("options of testautomation");
    expect((await run(file, ["filecache"])).availSpace).toBe(8 * mib);
    const one = readFileSync(join(stateDir(), "start-parses-filecache.json"), "utf8");
    expect((await run(file, ["com.vendor.service.filecache"])).availSpace).toBe(8 * mib);
    expect(existsSync(join(stateDir(), "start-parses-com.vendor.service.filecache.json"))).toBe(true);
    // Each start found its own record whole and left the others as they were.
    expect((await run(file)).availSpace).toBe(8 * mib);
    expect((await run(file, ["filecache"])).availSpace).toBe(8 * mib);
    expect(readFileSync(join(stateDir(), "start-parses.json"), "utf8")).toBe(all);
    expect(readFileSync(join(stateDir(), "start-parses-filecache.json"), "utf8")).toBe(one);
  }, 60_000);
});
