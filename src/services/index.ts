// Every service the binary can host, by short name. The order is that of describe,
// --help and the policy files; the runtime starts a board's services side by side.
import type { ServiceModule } from "../core/service";
import testautomation from "./testautomation/service";
import intent from "./intent/service";
import power2 from "./power/service";
import filecache from "./filecache/service";
import nettools from "./nettools/service";
import camera from "./camera/service";
import peripheralmanager from "./peripheralmanager/service";
import mediaindexer from "./mediaindexer/service";
import record from "./record/service";
import videooutput from "./videooutput/service";

/** Keyed by each service's short name (spec.name: the last label of its bus name). */
export const SERVICES: Record<string, ServiceModule<any>> = Object.fromEntries(
  [testautomation, intent, power2, filecache, nettools, camera, mediaindexer, peripheralmanager, record, videooutput].map((m) => [m.spec.name, m]),
);

/** Resolves a short name (`testautomation`) or full bus name to a module. */
export function findService(nameOrBusName: string): ServiceModule<any> | undefined {
  if (SERVICES[nameOrBusName]) return SERVICES[nameOrBusName];
  return Object.values(SERVICES).find((m) => m.spec.busName === nameOrBusName || (m.instances && nameOrBusName.startsWith(`${m.spec.busName.replace(/\.<.*$/, "")}.`)));
}
