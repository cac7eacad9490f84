// The D-Bus policy files against the busconfig DTD (Debian: libdbus-1-dev,
// /usr/share/xml/dbus-1/busconfig.dtd) with xmllint. That DTD predates most rule
// attributes dbus-daemon(1) documents (send_destination, send_path, own_prefix, ...)
// and so fails every real policy file; the files are validated against it as it is
// (only those attributes may be undeclared) and against the same DTD with them
// declared (everything valid). test/layer/policy.test.ts loads them into dbus-daemon.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { spawnSync } from "bun";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LAYER_FILES } from "./layer";

const DTD = "/usr/share/xml/dbus-1/busconfig.dtd";
const POLICIES = readdirSync(join(LAYER_FILES, "dbus"))
  .filter((f) => f.endsWith(".conf"))
  .map((f) => join(LAYER_FILES, "dbus", f));

/** Rule attributes of <allow>/<deny> in dbus-daemon(1) (1.14) that the DTD does not declare. */
const DOCUMENTED = [
  "send_interface", "send_member", "send_error", "send_broadcast", "send_destination", "send_destination_prefix",
  "send_type", "send_path", "send_requested_reply", "receive_interface", "receive_member", "receive_error",
  "receive_sender", "receive_type", "receive_path", "receive_requested_reply", "eavesdrop", "own_prefix",
  "group", "max_fds", "min_fds",
];

let dir: string;
let extended: string;
beforeAll(() => {
  if (!existsSync(DTD)) throw new Error(`${DTD} is missing: scripts/setup installs libdbus-1-dev`);
  dir = mkdtempSync(join(tmpdir(), "busconfig-"));
  extended = join(dir, "busconfig-dbus-daemon.dtd");
  const attlist = DOCUMENTED.map((a) => `          ${a} CDATA #IMPLIED`).join("\n");
  writeFileSync(extended, `<!ENTITY % upstream SYSTEM "file://${DTD}">\n%upstream;\n<!ATTLIST allow\n${attlist}>\n<!ATTLIST deny\n${attlist}>\n`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function xmllint(dtd: string, file: string) {
  const r = spawnSync(["xmllint", "--noout", "--nonet", "--dtdvalid", dtd, file], { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, err: r.stderr.toString() };
}

test("there is a policy file for every service and one for the recording pipelines", () => {
  expect(POLICIES.map((p) => p.split("/").pop()).sort()).toEqual(
    ["camera2", "filecache", "intent", "mediaindexer", "nettools", "peripheralmanager", "power2", "testautomation", "videooutput"]
      .map((s) => `com.vendor.service.${s}.conf`)
      .concat("com.vendor.pipeline.record.conf")
      .sort(),
  );
});

for (const file of POLICIES) {
  const name = file.split("/").pop()!;
  test(`${name}: valid against the busconfig DTD with dbus-daemon's rule attributes`, () => {
    expect(xmllint(extended, file)).toEqual({ code: 0, err: "" });
  });

  test(`${name}: against Debian's busconfig DTD alone, only documented rule attributes are undeclared`, () => {
    const r = xmllint(DTD, file);
    const problems = r.err.split("\n").filter((l) => /validity error/.test(l));
    const undeclared = problems.map((l) => /No declaration for attribute (\w+) of element (allow|deny)/.exec(l)?.[1] ?? `other: ${l}`);
    expect(undeclared.filter((a) => !DOCUMENTED.includes(a))).toEqual([]);
  });
}

test("the extended DTD still rejects what dbus-daemon would reject", () => {
  const bad = join(dir, "bad.conf");
  writeFileSync(bad, `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><policy user="x"><allow send_destinaton="a.b"/><permit own="a.b"/></policy></busconfig>`);
  const r = xmllint(extended, bad);
  expect(r.code).not.toBe(0);
  expect(r.err).toContain("No declaration for attribute send_destinaton");
  expect(r.err).toContain("No declaration for element permit");
});
