// Shared set-up of the power tests: the private bus, the fake logind (a separate
// process owning org.freedesktop.login1 on it), a power configuration file, and
// the power service on a `linux` board talking to logind on its own bus. The
// backend is pinned to logind so that no test can ever reach reboot(2); the
// automatic choice is tested in machine.test.ts.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { testEnv, spawnScript, type Env } from "../helpers/harness";
import type { BusClient } from "../../src/bus/client";
import type { Json } from "../../src/core/errors";

export const POWER = "com.vendor.service.power2";

export interface PowerEnv {
  env: Env;
  logind: ReturnType<typeof spawnScript>;
  client: BusClient;
  call(method: string, payload?: Json | string): Promise<Json>;
  /** Starts a power-client.ts process; resolves once it is registered. */
  registered(state: string, votes?: string, lockSeconds?: number): Promise<{ proc: ReturnType<typeof spawnScript>; clientId: string }>;
  /** (Re)starts the service with the same state directory and configuration. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export interface PowerEnvOptions {
  /** Contents of the power configuration file. */
  conf?: string;
  /** serviceConfig.power2 additions. */
  config?: Json;
  /** Board recipe overrides (such as another power2 machine). */
  board?: Json;
  logindEnv?: Record<string, string>;
}

export async function powerEnv(o: PowerEnvOptions = {}): Promise<PowerEnv> {
  const env = await testEnv();
  const bus = { DEVSERVICES_BUS: env.bus.address };
  const logind = spawnScript("test/fixtures/power-logind.ts", [], { ...bus, ...o.logindEnv });
  await logind.waitFor("READY");
  const configFile = join(env.stateDir, "power.conf");
  writeFileSync(configFile, o.conf ?? "TransitionTimeout=00:00:01\n");
  const procs: ReturnType<typeof spawnScript>[] = [];
  const start = () =>
    env.start(["power2"], {
      backend: "linux",
      serviceConfig: { power2: { configFile, backend: "logind", ...o.config } },
      ...o.board,
    } as any);
  await start();
  const client = await env.client();
  return {
    env,
    logind,
    client,
    call: (method, payload = {}) => client.call(POWER, method, payload),
    async registered(state, votes = "", lockSeconds) {
      const args = [state, votes];
      if (lockSeconds !== undefined) args.push(String(lockSeconds));
      const proc = spawnScript("test/fixtures/power-client.ts", args, bus);
      procs.push(proc);
      const line = await proc.waitFor("REGISTERED");
      const first = JSON.parse(line.slice("REGISTERED ".length));
      if (first.returnValue !== true) throw new Error(`registration failed: ${line}`);
      if (lockSeconds !== undefined) await proc.waitFor("LOCKED");
      return { proc, clientId: first.clientId };
    },
    async restart() {
      await start();
    },
    async stop() {
      for (const p of procs) await p.kill();
      await logind.kill();
      await env.stop();
    },
  };
}
