// Shared set-up of the file cache tests: a private bus, the service on it with a
// given configuration, and a short way to call it.
import { expect } from "bun:test";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { testEnv, type Env } from "../helpers/harness";
import type { BusClient } from "../../src/bus/client";
import type { Json } from "../../src/core/errors";

export const FC = "com.vendor.service.filecache";
export const BLOCK = 4096;

/** Writes a filler file into dir until its file system has no block left; returns the file. */
export function fillBlocks(dir: string, name = "filler"): string {
  const f = join(dir, name);
  const chunk = Buffer.alloc(BLOCK, 0x66);
  for (;;) {
    try {
      appendFileSync(f, chunk);
    } catch (e: any) {
      if (e.code === "ENOSPC") return f;
      throw e;
    }
  }
}

export interface FcEnv {
  env: Env;
  client: BusClient;
  /** Calls a file cache method. */
  call(method: string, payload?: Json | string): Promise<Json>;
  /** (Re)starts the service with the given serviceConfig.filecache. */
  restart(config?: Json): Promise<void>;
  stop(): Promise<void>;
}

/** configFile null: no FileCache.conf is read, whatever the host has. */
export async function fcEnv(config: Json = {}): Promise<FcEnv> {
  const env = await testEnv();
  let current: Json = config;
  const start = (cfg: Json) => env.start(["filecache"], { serviceConfig: { filecache: { configFile: null, ...cfg } } } as any);
  await start(config);
  const client = await env.client();
  return {
    env,
    client,
    call: (method, payload = {}) => client.call(FC, method, payload),
    async restart(cfg?: Json) {
      if (cfg) current = cfg;
      await start(current);
    },
    stop: () => env.stop(),
  };
}

/** Asserts a spec error: returnValue false, the code, and a text naming the method (and more). */
export function expectError(r: Json, code: number, ...parts: (string | RegExp)[]) {
  expect(r.returnValue).toBe(false);
  expect(r.errorCode).toBe(code);
  expect(typeof r.errorText).toBe("string");
  for (const p of parts) expect(r.errorText as string).toMatch(p);
}
