// Introspection XML for hosted services (every spec method with `s` in, `s` out,
// or `sh` out for fd methods) and for the ancestor paths, so `busctl tree` works.
import type { ServiceSpec } from "../core/service";
import { memberName, SUBSCRIPTION_INTERFACE } from "./wire";

const HEADER =
  '<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"\n "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">\n';

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");

const STANDARD = `  <interface name="org.freedesktop.DBus.Introspectable">
    <method name="Introspect"><arg name="xml_data" type="s" direction="out"/></method>
  </interface>
  <interface name="org.freedesktop.DBus.Properties">
    <method name="Get"><arg name="interface_name" type="s" direction="in"/><arg name="property_name" type="s" direction="in"/><arg name="value" type="v" direction="out"/></method>
    <method name="GetAll"><arg name="interface_name" type="s" direction="in"/><arg name="props" type="a{sv}" direction="out"/></method>
  </interface>
  <interface name="org.freedesktop.DBus.Peer">
    <method name="Ping"/>
    <method name="GetMachineId"><arg name="machine_uuid" type="s" direction="out"/></method>
  </interface>
`;

export function introspectXml(spec: ServiceSpec): string {
  const methods = Object.entries(spec.api)
    .map(([name, m]) => {
      const out = m.passesFd
        ? '<arg name="response" type="s" direction="out"/><arg name="fd" type="h" direction="out"/>'
        : '<arg name="response" type="s" direction="out"/>';
      return `    <method name="${esc(memberName(name))}"><arg name="payload" type="s" direction="in"/>${out}<annotation name="com.vendor.devservices.Method" value="${esc(name)}"/></method>`;
    })
    .join("\n");
  return `${HEADER}<node>
  <interface name="${esc(spec.busName)}">
${methods}
  </interface>
  <interface name="${SUBSCRIPTION_INTERFACE}">
    <method name="Cancel"><arg name="serial" type="u" direction="in"/><arg name="cancelled" type="b" direction="out"/></method>
    <signal name="Push"><arg name="serial" type="u"/><arg name="message" type="s"/></signal>
    <signal name="Ended"><arg name="serial" type="u"/></signal>
  </interface>
${STANDARD}</node>
`;
}

/** Child nodes of an ancestor path of hosted objects, or null when the path is not one. */
export function childNodesXml(path: string, hostedPaths: string[]): string | null {
  const prefix = path === "/" ? "/" : path + "/";
  const children = new Set<string>();
  for (const p of hostedPaths) if (p.startsWith(prefix)) children.add(p.slice(prefix.length).split("/")[0]!);
  if (!children.size) return null;
  return `${HEADER}<node>\n${STANDARD}${[...children].map((c) => `  <node name="${esc(c)}"/>`).join("\n")}\n</node>\n`;
}
