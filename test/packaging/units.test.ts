// The layer's systemd units as systemd reads them: `systemd-analyze verify` accepts
// devservices.service and every devservices@NAME.service instance (with its drop-in),
// and `systemd-analyze security --offline` shows the capabilities and groups each
// one ends up with. ExecStart points at the built executable (verify checks that it
// exists and is executable).
import { test, expect, beforeAll, afterAll, describe } from "bun:test";
import { spawnSync } from "bun";
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY } from "../helpers/harness";
import { LAYER_FILES, SERVICE_NAMES } from "./layer";

const UNITS = join(LAYER_FILES, "systemd");

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "units-"));
  cpSync(UNITS, dir, { recursive: true });
  for (const unit of ["devservices.service", "devservices@.service"]) {
    const p = join(dir, unit);
    writeFileSync(p, readFileSync(p, "utf8").replaceAll("/usr/bin/devservices", BINARY));
  }
  for (const s of SERVICE_NAMES) symlinkSync("devservices@.service", join(dir, `devservices@${s}.service`));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** systemd-analyze with the test's unit directory first (then the host's, for dbus.socket). */
function analyze(args: string[]) {
  const r = spawnSync(["systemd-analyze", ...args], { cwd: dir, env: { ...process.env, SYSTEMD_UNIT_PATH: `${dir}:`, SYSTEMD_LOG_COLOR: "0" }, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

const ALL = ["devservices.service", ...SERVICE_NAMES.map((s) => `devservices@${s}.service`)];

test("systemd-analyze verify accepts every unit and instance, without a single warning", () => {
  // verify exits 0 on unknown keys or bad values (it only warns), so its output must be empty too.
  const r = analyze(["verify", "--man=no", ...ALL]);
  expect({ code: r.code, output: (r.out + r.err).trim() }).toEqual({ code: 0, output: "" });
});

test("verify would catch a mistake (the check is not blind)", () => {
  const bad = join(dir, "broken.service");
  writeFileSync(bad, "[Service]\nType=notiffy\nExecStart=/bin/true\nProtectSystem=strictly\n");
  const r = analyze(["verify", "--man=no", bad]);
  expect(r.err).toContain("Failed to parse service type");
  expect(r.err).toContain("Failed to parse protect system value");
  rmSync(bad);
});

/** What `systemd-analyze security --offline` reports for the unit: setting -> granted (✗) or not (✓). */
function exposure(unit: string): { items: Record<string, boolean>; overall: number } {
  const r = analyze(["security", "--offline=yes", "--no-pager", unit]);
  const items: Record<string, boolean> = {};
  for (const m of r.out.matchAll(/^([✓✗]) (\S+)/gm)) items[m[2]!] = m[1] === "✗";
  const overall = Number(/Overall exposure level for \S+: ([\d.]+)/.exec(r.out)?.[1]);
  return { items, overall };
}

describe("capabilities and device groups per unit (as systemd merges template and drop-in)", () => {
  const want: Record<string, { netAdmin: boolean; netRaw: boolean; boot: boolean; groups: boolean; setid: boolean }> = {
    "devservices.service": { netAdmin: true, netRaw: true, boot: true, groups: true, setid: true },
    "devservices@nettools.service": { netAdmin: true, netRaw: true, boot: false, groups: false, setid: false },
    "devservices@power2.service": { netAdmin: false, netRaw: false, boot: true, groups: false, setid: false },
    "devservices@peripheralmanager.service": { netAdmin: false, netRaw: false, boot: false, groups: true, setid: false },
    "devservices@camera2.service": { netAdmin: false, netRaw: false, boot: false, groups: true, setid: true },
    "devservices@videooutput.service": { netAdmin: false, netRaw: false, boot: false, groups: true, setid: false },
    "devservices@record.service": { netAdmin: false, netRaw: false, boot: false, groups: true, setid: true },
    "devservices@mediaindexer.service": { netAdmin: false, netRaw: false, boot: false, groups: false, setid: true },
    "devservices@filecache.service": { netAdmin: false, netRaw: false, boot: false, groups: false, setid: true },
  };
  for (const unit of ALL) {
    test(unit, () => {
      const { items, overall } = exposure(unit);
      const w = want[unit] ?? { netAdmin: false, netRaw: false, boot: false, groups: false, setid: false };
      expect({
        netAdmin: items["CapabilityBoundingSet=~CAP_NET_ADMIN"],
        netRaw: items["CapabilityBoundingSet=~CAP_NET_(BIND_SERVICE|BROADCAST|RAW)"],
        boot: items["CapabilityBoundingSet=~CAP_SYS_BOOT"],
        groups: items["SupplementaryGroups="],
        // CAP_SETUID/CAP_SETGID: only where a service touches paths with a client's rights (docs/security.md).
        setid: items["CapabilityBoundingSet=~CAP_SET(UID|GID|PCAP)"],
      }).toEqual(w);
      // Ambient capabilities exactly where there are capabilities; nothing else ever.
      expect(items["AmbientCapabilities="]).toBe(w.netAdmin || w.boot || w.setid);
      for (const cap of ["CAP_SYS_ADMIN", "CAP_(DAC_*|FOWNER|IPC_OWNER)", "CAP_SYS_MODULE", "CAP_SYS_PTRACE"]) {
        expect({ cap, granted: items[`CapabilityBoundingSet=~${cap}`] }).toEqual({ cap, granted: false });
      }
      expect({ NoNewPrivileges: items["NoNewPrivileges="], ProtectSystem: items["ProtectSystem="], ProtectHome: items["ProtectHome="] }).toEqual({
        NoNewPrivileges: false,
        ProtectSystem: false,
        ProtectHome: false,
      });
      expect(overall).toBeLessThan(5); // systemd's "OK" band for a service that must touch hardware
    });
  }
});

test("devservices.service and devservices@.service share one hardening block", () => {
  const keys = /^(StateDirectory|ReadWritePaths|NoNewPrivileges|Protect\w+|Private\w+|Restrict\w+|LockPersonality|SystemCallArchitectures|UMask|Type|NotifyAccess|WatchdogSec|Restart\w*|User|Group|Environment\w*|Standard\w+|SyslogLevelPrefix)=/;
  const block = (f: string) => readFileSync(join(UNITS, f), "utf8").split("\n").filter((l) => keys.test(l));
  expect(block("devservices@.service")).toEqual(block("devservices.service"));
  // The all-in-one unit grants the union of the drop-ins.
  const dropins = readdirSync(UNITS).filter((f) => f.endsWith(".service.d")).map((d) => readFileSync(join(UNITS, d, "devservices.conf"), "utf8"));
  const union = (key: string) => [...new Set(dropins.flatMap((t) => [...t.matchAll(new RegExp(`^${key}=(.*)$`, "gm"))].flatMap((m) => m[1]!.split(/\s+/))))].sort();
  const allInOne = readFileSync(join(UNITS, "devservices.service"), "utf8");
  for (const key of ["CapabilityBoundingSet", "AmbientCapabilities", "SupplementaryGroups"]) {
    expect({ key, v: new RegExp(`^${key}=(.*)$`, "m").exec(allInOne)![1]!.split(/\s+/).sort() }).toEqual({ key, v: union(key) });
  }
});

test("the D-Bus activation file template names the unit and the service user", () => {
  const t = readFileSync(join(LAYER_FILES, "dbus/activation.service.in"), "utf8");
  expect(t.trim().split("\n")).toEqual(["[D-BUS Service]", "Name=@BUSNAME@", "Exec=/bin/false", "User=devservices", "SystemdService=@UNIT@"]);
});
