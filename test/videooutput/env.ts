// The video output service on the virtual display (two planes, 1920x1080), hosted
// in this process on a private dbus-daemon.
import { testEnv, type Env } from "../helpers/harness";
import type { BusClient } from "../../src/bus/client";
import type { Json } from "../../src/core/errors";

export const VO = "com.vendor.service.videooutput";
export const OK = { returnValue: true };
export const row = (errorCode: number) => ({ returnValue: false, errorCode });

export interface VoEnv {
  env: Env;
  client: BusClient;
  call(method: string, payload?: Json | string): Promise<Json>;
  /** The status list, by sink. */
  status(): Promise<Record<string, Json>>;
  stop(): Promise<void>;
}

export async function voEnv(config: Json = {}): Promise<VoEnv> {
  const env = await testEnv();
  await env.start(["videooutput"], { serviceConfig: { videooutput: { configFile: null, ...config } } } as any);
  const client = await env.client();
  const call = (method: string, payload: Json | string = {}) => client.call(VO, method, payload);
  return {
    env,
    client,
    call,
    async status() {
      const r = await call("getStatus");
      return Object.fromEntries((r.video as Json[]).map((v) => [v.sink as string, v]));
    },
    stop: () => env.stop(),
  };
}
