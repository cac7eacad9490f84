// Shared set-up of the camera tests: a private bus and the camera service on the
// virtual board, one fixed camera plus a plug directory for hotplug, and a directory
// for captures (outside the state directory, which no client may name).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testEnv, type Env } from "../helpers/harness";
import type { BusClient } from "../../src/bus/client";
import type { Json } from "../../src/core/errors";

export const CAMERA = "com.vendor.service.camera2";

export interface CameraEnv {
  env: Env;
  client: BusClient;
  plugDir: string;
  captureDir: string;
  call(method: string, payload?: Json | string): Promise<Json>;
  stop(): Promise<void>;
}

export async function cameraEnv(config: Json = {}): Promise<CameraEnv> {
  const env = await testEnv();
  const plugDir = mkdtempSync(join(tmpdir(), "camera-plug-"));
  const captureDir = mkdtempSync(join(tmpdir(), "camera-pictures-"));
  await env.start(["camera2"], {
    serviceConfig: { camera2: { plugDir, windows: ["window0"], ...config } },
  } as any);
  const client = await env.client();
  return {
    env,
    client,
    plugDir,
    captureDir,
    call: (method, payload = {}) => client.call(CAMERA, method, payload),
    async stop() {
      await env.stop();
      rmSync(plugDir, { recursive: true, force: true });
      rmSync(captureDir, { recursive: true, force: true });
    },
  };
}

export const err = (code: number, text: string) => ({ returnValue: false, errorCode: code, errorText: text });
