// The method tables the client is typed and checked with: each service's `api` from
// its schemas module (the zod schemas the service validates every call with), and
// its bus name. Only schemas modules are imported here, never a service or a backend,
// so an application that uses the client loads no service code.
import { api as testautomation } from "../services/testautomation/schemas";
import { api as intent } from "../services/intent/schemas";
import { api as power2 } from "../services/power/schemas";
import { api as filecache } from "../services/filecache/schemas";
import { api as nettools } from "../services/nettools/schemas";
import { api as camera2 } from "../services/camera/schemas";
import { api as mediaindexer } from "../services/mediaindexer/schemas";
import { api as peripheralmanager } from "../services/peripheralmanager/schemas";
import { api as record } from "../services/record/schemas";
import { api as videooutput } from "../services/videooutput/schemas";

/**
 * Each service by its short name (the last label of its bus name, as `describe`
 * lists them). `record` is a family: one bus name per pipeline ID
 * (`com.vendor.pipeline.record.<id>`), chosen with the `instance` option.
 */
export const SERVICE_APIS = {
  testautomation: { busName: "com.vendor.service.testautomation", api: testautomation },
  intent: { busName: "com.vendor.service.intent", api: intent },
  power2: { busName: "com.vendor.service.power2", api: power2 },
  filecache: { busName: "com.vendor.service.filecache", api: filecache },
  nettools: { busName: "com.vendor.service.nettools", api: nettools },
  camera2: { busName: "com.vendor.service.camera2", api: camera2 },
  mediaindexer: { busName: "com.vendor.service.mediaindexer", api: mediaindexer },
  peripheralmanager: { busName: "com.vendor.service.peripheralmanager", api: peripheralmanager },
  record: { busName: "com.vendor.pipeline.record.<pipeline_id>", api: record },
  videooutput: { busName: "com.vendor.service.videooutput", api: videooutput },
} as const;

export type ServiceName = keyof typeof SERVICE_APIS;

/** The bus name to call: a family's `<...>` placeholder replaced by the instance. */
export function busNameFor(name: ServiceName, instance?: string): string {
  const { busName } = SERVICE_APIS[name];
  const family = /^(.*)\.<[^>]+>$/.exec(busName);
  if (!family) {
    if (instance !== undefined) throw new TypeError(`${name} has no instances (instance '${instance}' given)`);
    return busName;
  }
  if (instance === undefined) throw new TypeError(`${name} is one service per instance: pass the instance (e.g. { instance: "main" } for ${family[1]}.main)`);
  if (!/^[A-Za-z0-9_]+$/.test(instance)) throw new TypeError(`'${instance}' is not an instance ID (letters, digits, _)`);
  return `${family[1]}.${instance}`;
}
