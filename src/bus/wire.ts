// The D-Bus mapping of a service (docs/bus.md): names, paths, member names and the
// subscription interface. Shared by the server and the client.

export const SUBSCRIPTION_INTERFACE = "com.vendor.devservices.Subscription";
export const ERROR_PREFIX = "com.vendor.devservices.Error";

/** `com.vendor.service.power2` -> `/com/vendor/service/power2` */
export function objectPath(busName: string): string {
  return "/" + busName.replace(/\./g, "/").replace(/[^A-Za-z0-9_/]/g, "_");
}

/** `gpio/open` -> `gpio_open`; `InsertCacheObject` stays. */
export function memberName(method: string): string {
  return method.replace(/\//g, "_");
}

export function busNameOf(service: string): string {
  return service.includes(".") ? service : `com.vendor.service.${service}`;
}

/** Parses `luna://com.vendor.service.x/method/path` or `com.vendor.service.x/method/path`. */
export function parseUri(uri: string): { busName: string; method: string } {
  const s = uri.replace(/^luna:\/\//, "");
  const i = s.indexOf("/");
  if (i <= 0 || i === s.length - 1) throw new Error(`not a service URI: ${uri} (expected com.vendor.service.NAME/method)`);
  return { busName: s.slice(0, i), method: s.slice(i + 1) };
}
