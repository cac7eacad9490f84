// The D-Bus system policy and the access table of docs/security.md, made from the
// services' method tables (each method's `access` rule): one source of truth for
// who may call what. `bun scripts/policy.ts` writes them; test/layer/generated.test.ts
// fails when the shipped files differ from what the tables make.
//
// Per service: the devservices user owns the name and may call it; by default
// nobody may call a method (deny by default); everyone may call the standard
// interfaces (Introspectable, Peer, Properties, the Subscription Cancel) and each
// method whose rule is "any" or a decision on the request (the service decides);
// each group named by a method's rule may call that method; root may call all. The
// service checks the same rules itself: a private bus has no policy.
//
// Receiving: a subscribable method's shared topics may reach its subscribers as
// broadcast signals (interface com.vendor.devservices.Topic, member = the method's,
// on the service's path; docs/decisions/fanout.md), which the daemon delivers to any
// connection with a matching rule that its receive policy allows. Nobody may receive
// them (deny by default) except: everyone those of a method whose rule is "any", each
// group those of the methods its rule names, root all. The service broadcasts a
// method limited to root or groups only where it is told the bus enforces this
// policy (DEVSERVICES_BUS_POLICY=layer); on any other bus those stay addressed.
import type { ServiceModule } from "./core/service";
import { describeRule, type AccessRule } from "./core/access";
import { memberName } from "./bus/wire";
import { SERVICES } from "./services";
import { loadBoard } from "./core/board";
import { readdirSync } from "node:fs";
import { join } from "node:path";

const SUBSCRIPTION = "com.vendor.devservices.Subscription";
const TOPIC = "com.vendor.devservices.Topic";
/** The members of the standard interfaces every service answers (src/bus/server.ts). */
const STANDARD: [string, string][] = [
  ["org.freedesktop.DBus.Introspectable", "Introspect"],
  ["org.freedesktop.DBus.Peer", "Ping"],
  ["org.freedesktop.DBus.Peer", "GetMachineId"],
  ["org.freedesktop.DBus.Properties", "Get"],
  ["org.freedesktop.DBus.Properties", "GetAll"],
  ["org.freedesktop.DBus.Properties", "Set"],
  [SUBSCRIPTION, "Cancel"],
  [SUBSCRIPTION, "Shared"],
  [SUBSCRIPTION, "Attach"],
];

export interface MethodRule {
  method: string;
  member: string;
  /** "any": everyone; "root": root only; groups: root and these groups; request: everyone at the bus, the service decides on the request. */
  who: "any" | "root" | "request" | { groups: string[] };
  describe: string;
  /** Its calls can open subscriptions (whose shared topics may be broadcast). */
  subscribes: boolean;
}

export function rulesOf(module: ServiceModule<any>): MethodRule[] {
  return Object.entries(module.spec.api)
    .map(([method, spec]) => {
      const { access: rule, subscribable, alwaysSubscribes } = spec as { access?: AccessRule; subscribable?: boolean; alwaysSubscribes?: boolean };
      const who: MethodRule["who"] = !rule || rule === "any" ? "any" : rule === "root" ? "root" : "groups" in rule ? { groups: rule.groups } : "request";
      return { method, member: memberName(method), who, describe: describeRule(rule), subscribes: !!(subscribable || alwaysSubscribes) };
    })
    .sort((a, b) => a.method.localeCompare(b.method));
}

const pathOf = (bus: string) => "/" + bus.replaceAll(".", "/");
const destination = (bus: string) => `send_destination="${bus}" send_path="${pathOf(bus)}"`;

/**
 * The bus names a module is hosted on: its own, or for a service hosted as instances
 * (the recording pipeline, com.vendor.pipeline.record.<id>) those of every board
 * recipe shipped in recipes/boards (a rule per member needs the exact name and path).
 */
function namesOf(module: ServiceModule<any>): string[] {
  if (!module.instances) return [module.spec.busName];
  const dir = join(import.meta.dir, "../recipes/boards");
  const boards = readdirSync(dir).filter((f) => f.endsWith(".json")).sort().map((f) => loadBoard(join(dir, f)));
  return [...new Set(boards.flatMap((b) => module.instances!(b).map((m) => m.spec.busName)))].sort();
}

const esc = (s: string) => s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll("--", "- -");

/** The policy file of one service (meta-devservices/.../files/dbus/<name>.conf). */
export function policyFile(module: ServiceModule<any>): { file: string; text: string } {
  const rules = rulesOf(module);
  const instanced = !!module.instances;
  const prefix = module.spec.busName.replace(/\.<.*$/, "");
  const names = namesOf(module);
  const allow = (bus: string, member: string) => `    <allow ${destination(bus)} send_interface="${bus}" send_member="${member}"/>`;
  const open = rules.filter((r) => r.who === "any" || r.who === "request");
  const groups = new Map<string, string[]>();
  for (const r of rules) if (typeof r.who === "object") for (const g of r.who.groups) groups.set(g, [...(groups.get(g) ?? []), r.member]);
  const topicOf = (bus: string) => `receive_type="signal" receive_path="${pathOf(bus)}" receive_interface="${TOPIC}"`;
  const receive = (bus: string, member: string) => `    <allow receive_sender="${bus}" ${topicOf(bus)} receive_member="${member}"/>`;
  const subscribing = new Set(rules.filter((r) => r.subscribes).map((r) => r.member));
  const restricted = rules.filter((r) => r.who !== "any" && r.who !== "request");
  const summary = restricted.length
    ? `Anyone may call ${open.map((r) => r.method).join(", ") || "nothing"}; ${restricted.map((r) => `${r.method}: ${r.describe}`).join("; ")}.`
    : "Anyone may call every method; the service checks callers where a rule decides on the request.";
  const lines = [
    `<?xml version="1.0"?>`,
    `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"`,
    ` "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">`,
    `<!-- ${esc(module.spec.busName)} (devservices). Generated from the method tables by scripts/policy.ts: do not edit.`,
    `     ${esc(summary)}`,
    `     Deny by default: each method is allowed by its member (the spec's method path with "/"`,
    `     replaced by "_") to the callers its rule names; root may call all. The broadcast signals of a`,
    `     subscribable method's shared topics (${TOPIC}) reach only those its rule admits.` +
      (instanced ? `
     Instances: the pipeline ids of the boards in recipes/boards (${names.map(esc).join(", ")}).` : "") +
      ` -->`,
    `<busconfig>`,
    `  <!-- Only the devservices user may own the name; its services may call each other. -->`,
    `  <policy user="devservices">`,
    instanced ? `    <allow own_prefix="${prefix}"/>` : `    <allow own="${prefix}"/>`,
    instanced ? `    <allow send_destination_prefix="${prefix}"/>` : `    <allow ${destination(prefix)}/>`,
    `    <!-- Subscription messages are unicast signals from the service to each subscriber. -->`,
    `    <allow send_type="signal" send_interface="${SUBSCRIPTION}"/>`,
    `    <!-- Shared topics are broadcast signals that the receive rules below let through. -->`,
    `    <allow send_type="signal" send_interface="${TOPIC}"/>`,
    `  </policy>`,
    ``,
    `  <policy context="default">`,
    ...names.flatMap((bus) => [
      ...STANDARD.map(([i, m]) => `    <allow ${destination(bus)} send_interface="${i}" send_member="${m}"/>`),
      ...open.map((r) => allow(bus, r.member)),
      `    <allow receive_sender="${bus}" receive_type="signal" receive_interface="${SUBSCRIPTION}"/>`,
      `    <deny ${topicOf(bus)}/>`,
      ...open.filter((r) => r.who === "any" && r.subscribes).map((r) => receive(bus, r.member)),
    ]),
    `  </policy>`,
    ...[...groups]
      .sort(([a], [b]) => a.localeCompare(b))
      .flatMap(([g, members]) => [
        `  <policy group="${g}">`,
        ...names.flatMap((bus) => [...members.map((m) => allow(bus, m)), ...members.filter((m) => subscribing.has(m)).map((m) => receive(bus, m))]),
        `  </policy>`,
      ]),
    `  <policy user="root">`,
    instanced ? `    <allow send_destination_prefix="${prefix}"/>` : `    <allow ${destination(prefix)}/>`,
    ...names.map((bus) => `    <allow receive_sender="${bus}" ${topicOf(bus)}/>`),
    `  </policy>`,
    `</busconfig>`,
    ``,
  ];
  return { file: `${prefix}.conf`, text: lines.join("\n") };
}

export function policyFiles(modules = Object.values(SERVICES)): { file: string; text: string }[] {
  return modules.map(policyFile);
}

/** The rules table of docs/security.md (between its generated markers). */
export function accessTable(modules = Object.values(SERVICES)): string {
  const rows = ["| service | method | who may call |", "|---|---|---|"];
  for (const m of modules) for (const r of rulesOf(m)) rows.push(`| ${m.spec.name} | \`${r.method}\` | ${r.who === "request" ? `anyone at the bus; the service decides: ${r.describe}` : r.describe} |`);
  return rows.join("\n");
}

export const TABLE_BEGIN = "<!-- access table: generated by scripts/policy.ts from the method tables -->";
export const TABLE_END = "<!-- end of the generated access table -->";
