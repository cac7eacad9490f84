// Crash safety: a process running the service and a busy application is SIGKILLed
// at random points, 20 rounds on one state directory. After every restart the
// cache's status equals what is on disk, no object's file is missing, no orphan
// file remains and every watermark and the total hold.
import { test, expect, afterAll, beforeAll } from "bun:test";
import { readdirSync, statSync, lstatSync } from "node:fs";
import { join } from "node:path";
import { testEnv, spawnScript, type Env } from "../helpers/harness";
import { FC, BLOCK } from "./env";
import type { BusClient } from "../../src/bus/client";

const ROUNDS = 20;
const TOTAL = 256 * 1024;
const config = { configFile: null, totalCacheSpace: TOTAL };
let env: Env;
let client: BusClient;
beforeAll(async () => {
  env = await testEnv();
  client = await env.client();
});
afterAll(() => env.stop());

const pad = (n: number) => Math.ceil(n / BLOCK) * BLOCK;

function bytesOnDisk(p: string): number {
  const st = lstatSync(p);
  if (!st.isDirectory()) return st.size;
  let n = 0;
  for (const e of readdirSync(p)) n += bytesOnDisk(join(p, e));
  return n;
}

async function checkConsistent(round: number) {
  const call = (m: string, p: Record<string, unknown> = {}) => client.call(FC, m, p);
  const cacheDir = join(env.stateDir, "filecache", "cache");
  const status = await call("GetCacheStatus");
  const types = ((await call("GetCacheTypes")).types as string[] | undefined) ?? [];
  // No directory but those of defined types.
  expect(readdirSync(cacheDir).sort()).toEqual([...types].sort());
  let numObjs = 0;
  let used = 0;
  for (const typeName of types) {
    const desc = await call("DescribeType", { typeName });
    const ts = await call("GetCacheTypeStatus", { typeName });
    let typeUsed = 0;
    const entries = readdirSync(join(cacheDir, typeName));
    for (const f of entries) {
      const p = join(cacheDir, typeName, f);
      // Every file is a known object (no orphan) whose recorded size covers what is written.
      const size = await call("GetCacheObjectSize", { pathName: p });
      if (size.returnValue !== true) throw new Error(`round ${round}: orphan ${p}: ${JSON.stringify(size)}`);
      expect(bytesOnDisk(p)).toBeLessThanOrEqual(size.size as number);
      typeUsed += pad(size.size as number);
    }
    // Every object has its file: the type's count is the number of files.
    expect({ round, typeName, size: ts.size, numObjs: ts.numObjs }).toEqual({ round, typeName, size: typeUsed, numObjs: entries.length });
    expect(typeUsed).toBeLessThanOrEqual(desc.hiWatermark as number);
    numObjs += entries.length;
    used += typeUsed;
  }
  expect({ round, status }).toEqual({ round, status: { returnValue: true, numTypes: types.length, size: used, numObjs, availSpace: TOTAL - used } });
  expect(used).toBeLessThanOrEqual(TOTAL);
  return numObjs;
}

test(`${ROUNDS} rounds of SIGKILL at random points, each followed by a consistent restart`, async () => {
  let seen = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    const child = spawnScript("test/fixtures/filecache-crashloop.ts", [], {
      DEVSERVICES_BUS: env.bus.address,
      FC_STATE_DIR: env.stateDir,
      FC_CONFIG: JSON.stringify(config),
    });
    // Most rounds are killed while the loop runs; some while the service starts and reconciles.
    if (round % 4 === 0) await Bun.sleep(80 + Math.random() * 250);
    else {
      await child.waitFor("ready", 10000);
      await Bun.sleep(20 + Math.random() * 250);
    }
    await child.kill("SIGKILL");
    await env.start(["filecache"], { serviceConfig: { filecache: config } } as any);
    seen += await checkConsistent(round);
    if (process.env.FC_VERBOSE) console.log(`round ${round}: ${seen}`);
    await env.stopServices();
  }
  // The loop did real work: objects were there to check.
  expect(seen).toBeGreaterThan(0);
}, 60000);
