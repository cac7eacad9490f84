// Shared set-up of the media indexer tests: a private bus with the media indexer
// hosted in this process by the runtime (or the compiled binary, startBinary), and
// short ways to call it and wait for scans.
import { expect } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testEnv, eventually, type Env } from "../helpers/harness";
import type { BusClient } from "../../src/bus/client";
import type { Json } from "../../src/core/errors";

export const MI = "com.vendor.service.mediaindexer";

export interface MiEnv {
  env: Env;
  client: BusClient;
  /** A temporary directory for media (removed by stop()). */
  media: string;
  /** The service's state directory (database, thumbnails). */
  stateDir: string;
  call(method: string, payload?: Json | string): Promise<Json>;
  /** (Re)starts the service with serviceConfig.mediaindexer (merged with the defaults of the tests). */
  start(config?: Json): Promise<void>;
  /** Waits until every device is idle, then returns the plugin list. */
  idle(timeoutMs?: number): Promise<Json[]>;
  device(uri: string): Promise<Json | undefined>;
  stop(): Promise<void>;
}

/** Defaults for tests: nothing from the host (no /media, no network, no libmtp). */
export const TEST_DEFAULTS: Json = { removableRoot: null, plugins: ["storage"], rescanInterval: 0 };

export async function miEnv(config: Json = {}): Promise<MiEnv> {
  const env = await testEnv();
  const media = mkdtempSync(join(tmpdir(), "mediaindexer-media-"));
  const stateDir = join(env.stateDir, "mediaindexer");
  mkdirSync(stateDir, { recursive: true });
  let client!: BusClient;
  let current: Json = config;
  const mi: MiEnv = {
    env,
    get client() {
      return client;
    },
    media,
    stateDir,
    call: (method, payload = {}) => client.call(MI, method, payload),
    async start(cfg?: Json) {
      if (cfg) current = cfg;
      await env.start(["mediaindexer"], { serviceConfig: { mediaindexer: { ...TEST_DEFAULTS, mediaRoots: [media], ...current } } } as any);
      if (!client) client = await env.client();
    },
    async idle(timeoutMs = 10000) {
      let list: Json[] = [];
      await eventually(async () => {
        const r = await mi.call("getDeviceList");
        list = r.pluginList as Json[];
        return list.every((p) => (p.deviceList as Json[]).every((d) => d.state === "idle"));
      }, timeoutMs, 20);
      return list;
    },
    async device(uri) {
      const r = await mi.call("getDeviceList");
      for (const p of r.pluginList as Json[]) for (const d of p.deviceList as Json[]) if (d.uri === uri) return d;
      return undefined;
    },
    async stop() {
      await env.stop();
      rmSync(media, { recursive: true, force: true });
    },
  };
  await mi.start(config);
  return mi;
}

export function expectError(r: Json, code: number, text: string | RegExp) {
  expect(r.returnValue).toBe(false);
  expect(r.errorCode).toBe(code);
  if (typeof text === "string") expect(r.errorText).toBe(text);
  else expect(r.errorText as string).toMatch(text);
}
