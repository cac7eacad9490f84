// devservices describe: the services, and each method's request and response schemas.
import { memberName } from "../bus/wire";
import { SERVICES } from "../services";
import type { MethodSpec } from "../core/service";
import { methodJsonSchema } from "../core/jsonschema";
import { cli, usage, serviceOrUsage } from "./args";

export const USAGE = `devservices describe [SERVICE] [--json]
      Lists the services, or one service's methods with their request and response
      JSON Schemas (the same schemas validate every call).
`;

export function describe(argv: string[]) {
  const { flags, rest } = cli(argv, { json: { type: "boolean" } });
  if (rest.length > 1) usage("describe takes at most one SERVICE");
  if (rest.length === 0) {
    const list = Object.values(SERVICES).map((m) => ({ name: m.spec.name, busName: m.spec.busName, description: m.spec.description }));
    if (flags.json) return console.log(JSON.stringify(list, null, 2));
    for (const s of list) console.log(`${s.busName}\n  ${s.description}\n`);
    return;
  }
  const m = serviceOrUsage(rest[0]!);
  const methods = Object.entries(m.spec.api as Record<string, MethodSpec>).map(([name, spec]) => ({
    method: name,
    member: memberName(name),
    summary: spec.summary,
    subscribable: !!spec.subscribable,
    passesFd: !!spec.passesFd,
    request: methodJsonSchema(spec, "request"),
    response: methodJsonSchema(spec, "response"),
  }));
  if (flags.json) return console.log(JSON.stringify({ busName: m.spec.busName, description: m.spec.description, methods }, null, 2));
  console.log(`${m.spec.busName}\n  ${m.spec.description}\n`);
  for (const x of methods) {
    console.log(`${m.spec.busName}/${x.method}${x.subscribable ? "  (subscribable)" : ""}${x.passesFd ? "  (reply carries an fd)" : ""}`);
    console.log(`  ${x.summary}`);
    console.log(`  request:  ${JSON.stringify(x.request)}`);
    console.log(`  response: ${JSON.stringify(x.response)}\n`);
  }
}
