// The D-Bus mapping of a service (docs/bus.md): names, paths, member names and the
// subscription interface. Shared by the server and the client.

export const SUBSCRIPTION_INTERFACE = "com.vendor.devservices.Subscription";
/**
 * Broadcast signals of shared topics (docs/decisions/fanout.md): on the service's
 * path, member = the subscribing method's member, body (s topic id, s JSON message).
 */
export const TOPIC_INTERFACE = "com.vendor.devservices.Topic";
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

const BUS_NAME = /^[A-Za-z_-][A-Za-z0-9_-]*(\.[A-Za-z_-][A-Za-z0-9_-]*)+$/;
const METHOD = /^[A-Za-z_][A-Za-z0-9_]*(\/[A-Za-z_][A-Za-z0-9_]*)*$/;

/**
 * Parses `luna://com.vendor.service.x/method/path` or `com.vendor.service.x/method/path`;
 * throws for anything else (another scheme, a name D-Bus would refuse, no method).
 */
export function parseUri(uri: string): { busName: string; method: string } {
  const bad = (why: string) => new Error(`not a service URI: '${uri}' (${why}; expected [luna://]com.vendor.service.NAME/method)`);
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(uri);
  if (scheme && scheme[1]!.toLowerCase() !== "luna") throw bad(`the scheme ${scheme[1]}:// is not luna://`);
  const s = scheme ? uri.slice(scheme[0].length) : uri;
  const i = s.indexOf("/");
  if (i <= 0 || i === s.length - 1) throw bad("no method");
  const busName = s.slice(0, i), method = s.slice(i + 1);
  if (busName.length > 255 || !BUS_NAME.test(busName)) throw bad(`'${busName}' is not a bus name`);
  if (!METHOD.test(method)) throw bad(`'${method}' is not a method path`);
  return { busName, method };
}
