// Request payloads per method, for checking the published JSON Schemas against the
// zod schemas: those the test suite and the service pages send (object literals
// after a method name in test/**/*.ts, JSON after a method URI in docs/ and the
// README), and bad ones made from them (a field of the wrong type, a field left out,
// an extra field, a non-object).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { SERVICES } from "../../src/services";
import { ROOT } from "../helpers/harness";

export interface Payload {
  service: string;
  method: string;
  payload: unknown;
  /** Where it came from (file, or the mutation made). */
  origin: string;
}

/** Test folders named after a service other than its short name. */
const DIR_SERVICE: Record<string, string> = { power: "power2", camera: "camera2" };

function files(dir: string, ext: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out.push(...files(p, ext));
    else if (p.endsWith(ext)) out.push(p);
  }
  return out;
}

/** The text of a balanced `{...}` starting at i (strings and template literals skipped), or undefined. */
function balanced(text: string, i: number): string | undefined {
  let depth = 0;
  for (let j = i; j < text.length && j < i + 20000; j++) {
    const ch = text[j]!;
    if (ch === '"' || ch === "'" || ch === "`") {
      for (j++; j < text.length && text[j] !== ch; j++) if (text[j] === "\\") j++;
    } else if (ch === "{") depth++;
    else if (ch === "}" && --depth === 0) return text.slice(i, j + 1);
  }
  return undefined;
}

/** A literal's value when it is one (no identifiers but keys, no calls but string methods), else undefined. */
function literal(src: string): unknown {
  if (/=>|\bawait\b|\bnew\b|\$\{|\.\.\./.test(src)) return undefined;
  try {
    const v = new Function(`"use strict"; return (${src});`)();
    return JSON.parse(JSON.stringify(v)); // what goes on the wire
  } catch {
    return undefined;
  }
}

const methodsOf = (service: string) => Object.keys(SERVICES[service]!.spec.api);
const byBusName = new Map(Object.values(SERVICES).map((m) => [m.spec.busName.replace(/\.<.*$/, ""), m.spec.name]));

const serviceOfBus = (bus: string) => byBusName.get(bus) ?? byBusName.get(bus.replace(/\.\w+$/, ""));

/** Services a file talks to: its folder's, and every service whose bus name it spells. */
function servicesOf(file: string, text: string): string[] {
  const found = new Set<string>();
  const dir = relative(join(ROOT, "test"), file).split("/")[0]!;
  const own = DIR_SERVICE[dir] ?? dir;
  if (SERVICES[own]) found.add(own);
  for (const [bus, name] of byBusName) if (text.includes(bus)) found.add(name);
  return [...found];
}

/** Valid requests for methods the tests send only with computed values (written out here). */
const SEEDS: [string, string, unknown][] = [
  ["record", "start", { video: { videoSrc: "camera1", width: 640, height: 480, codec: "H264", fps: 30, bitRate: 1000000 }, format: "MP4", path: "/tmp/a.mp4" }],
  ["record", "start", { audio: { codec: "AAC", sampleRate: 48000, channelCount: 2, bitRate: 128000 }, format: "MP4", path: "/tmp/a.mp4" }],
  ["record", "start", { image: { videoSrc: "camera1", codec: "JPEG", width: 640, height: 480, quality: 90 }, format: "JPEG", path: "/tmp/a.jpg" }],
  ["camera2", "close", { handle: 1 }],
  ["camera2", "startCamera", { handle: 1 }],
  ["camera2", "stopPreview", { handle: 1 }],
  ["camera2", "stopCapture", { handle: 1 }],
  ["camera2", "startCapture", { handle: 1, params: { width: 640, height: 480, format: "JPEG", mode: "MODE_ONESHOT" } }],
  ["camera2", "setProperties", { handle: 1, params: { brightness: 10 } }],
  ["mediaindexer", "getVideoList", {}],
];

/** The payloads the test suite and the documentation send, per service and method. */
export function sentPayloads(): Payload[] {
  const out: Payload[] = [];
  const seen = new Set<string>();
  const add = (service: string, method: string, payload: unknown, origin: string) => {
    const key = `${service}/${method}/${JSON.stringify(payload)}`;
    if (payload === undefined || seen.has(key)) return;
    seen.add(key);
    out.push({ service, method, payload, origin });
  };
  const testFiles = files(join(ROOT, "test"), ".ts").filter((f) => !f.includes("/test/schemas/"));
  // Constants naming a service (const POWER = "com.vendor.service.power2"), across the tests.
  const constants = new Map<string, string | null>();
  for (const file of testFiles)
    for (const m of readFileSync(file, "utf8").matchAll(/const\s+(\w+)\s*=\s*"(com\.vendor\.[\w.]+)"/g)) {
      const service = serviceOfBus(m[2]!);
      const had = constants.get(m[1]!);
      constants.set(m[1]!, had === undefined || had === service ? (service ?? null) : null);
    }
  for (const file of testFiles) {
    const text = readFileSync(file, "utf8");
    const services = servicesOf(file, text);
    if (!services.length) continue;
    // X, "method", { ... }   or   "service", "method", { ... }   or   `${X}/method`, { ... }   or   "com.vendor.service.x/method", { ... }
    for (const m of text.matchAll(/(?:(?:\b(\w+)|["'](\w+)["'])\s*,\s*)?["'`](?:\$\{(\w+)\}\/|(com\.vendor\.[\w.]+)\/)?([A-Za-z]\w*(?:\/\w+)*)["'`]\s*,\s*(?=\{)/g)) {
      const name = m[5]!;
      const named = m[4] ? serviceOfBus(m[4]) : m[3] ? constants.get(m[3]) : m[2] && SERVICES[m[2]] ? m[2] : constants.get(m[1] ?? "");
      const owners = named ? [named].filter((s) => methodsOf(s).includes(name)) : services.filter((s) => methodsOf(s).includes(name));
      if (owners.length !== 1) continue;
      const src = balanced(text, m.index! + m[0].length);
      if (src) add(owners[0]!, name, literal(src), relative(ROOT, file));
    }
  }
  // The documentation's example calls: devservices call [...] [luna://]BUSNAME/METHOD 'JSON'
  const docs = [join(ROOT, "README.md"), ...files(join(ROOT, "docs"), ".md")];
  for (const file of docs) {
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/(?:luna:\/\/)?(com\.vendor\.[\w.]+?)\/([A-Za-z]\w*(?:\/\w+)*) '(\{[^'\n]*\})'/g)) {
      const service = byBusName.get(m[1]!) ?? byBusName.get(m[1]!.replace(/\.\w+$/, ""));
      if (!service || !methodsOf(service).includes(m[2]!)) continue;
      try {
        add(service, m[2]!, JSON.parse(m[3]!), relative(ROOT, file));
      } catch {
        /* an example with a placeholder (<id>, ...) */
      }
    }
  }
  for (const [service, method, payload] of SEEDS) add(service, method, payload, "test/schemas/payloads.ts");
  return out;
}

/**
 * Values put in place of a field: other types, and strings a lenient schema might
 * read as numbers, on both sides of the bounds services check (a 7-bit address
 * 0x7f, a UART write's 65536 bytes, the largest safe integer), with leading zeros
 * and in both cases of hexadecimal.
 */
const WRONG: unknown[] = [
  "text", "", "12", " 12 ", "0012", "0x7f", "0x007F", "127", "128", "0x80", "0xfffff", "65536", "65537", "9007199254740991", "9007199254740992", "-1",
  7, 1.5, -1, 1e9, true, null, [], {}, [1], { x: 1 },
];

/** Bad payloads made from good ones: each field of the wrong type (at the top level and one level down), each field left out, an extra field, and non-objects. */
export function mutations(good: Payload[]): Payload[] {
  const out: Payload[] = [];
  const seen = new Set<string>();
  const add = (p: Payload, payload: unknown, what: string) => {
    const key = `${p.service}/${p.method}/${JSON.stringify(payload)}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push({ service: p.service, method: p.method, payload, origin: `${p.origin}: ${what}` });
  };
  const methods = new Set<string>();
  for (const p of good) {
    methods.add(`${p.service}\n${p.method}`);
    if (!p.payload || typeof p.payload !== "object" || Array.isArray(p.payload)) continue;
    const obj = p.payload as Record<string, unknown>;
    add(p, { ...obj, zzExtraField: 1 }, "an extra field");
    for (const [k, v] of Object.entries(obj)) {
      const { [k]: _, ...rest } = obj;
      add(p, rest, `without ${k}`);
      for (const w of WRONG) add(p, { ...obj, [k]: w }, `${k} = ${JSON.stringify(w)}`);
      if (v && typeof v === "object" && !Array.isArray(v)) {
        const inner = v as Record<string, unknown>;
        for (const ik of Object.keys(inner)) {
          const { [ik]: __, ...innerRest } = inner;
          add(p, { ...obj, [k]: innerRest }, `without ${k}.${ik}`);
          for (const w of WRONG) add(p, { ...obj, [k]: { ...inner, [ik]: w } }, `${k}.${ik} = ${JSON.stringify(w)}`);
        }
      }
      if (Array.isArray(v) && v.length) for (const w of WRONG) add(p, { ...obj, [k]: [w] }, `${k} = [${JSON.stringify(w)}]`);
    }
  }
  // Every method of every service, with payloads a client may send by mistake.
  for (const m of Object.values(SERVICES))
    for (const method of Object.keys(m.spec.api)) {
      const p = { service: m.spec.name, method, payload: undefined, origin: "generated" };
      for (const payload of [{}, { zzExtraField: 1 }, { subscribe: true }, { subscribe: "true" }]) add(p, payload, JSON.stringify(payload));
    }
  return out;
}
