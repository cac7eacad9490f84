// A private dbus-daemon for development, the demo and the tests: its own config,
// a socket in a temporary directory, stopped with the process that started it.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface PrivateBus {
  address: string;
  pid: number;
  dir: string;
  stop(): Promise<void>;
}

/** The private bus's config; `includes` are files of further policy (e.g. the layer's, src/policy.ts), read after its own. */
export function privateBusConfig(socketDir: string, includes: string[] = []): string {
  return `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir=${socketDir}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
${includes.map((f) => `  <include>${f}</include>\n`).join("")}  <limit name="max_replies_per_connection">50000</limit>
  <limit name="max_connections_per_user">4096</limit>
</busconfig>
`;
}

export interface PrivateBusOptions {
  /** Policy files' texts the daemon reads after the private bus's own rules (which let everyone do everything). */
  policies?: string[];
  /** Eavesdropping allowed (the default; a bus whose policy is under test leaves it off). */
  eavesdrop?: boolean;
  /** A command the daemon runs through (e.g. one that puts other account files in place). */
  prefix?: string[];
}

export async function startPrivateBus(daemon = process.env.DBUS_DAEMON ?? "dbus-daemon", opts: PrivateBusOptions = {}): Promise<PrivateBus> {
  const dir = mkdtempSync(join(tmpdir(), "devservices-bus-"));
  const conf = join(dir, "bus.conf");
  const includes = (opts.policies ?? []).map((text, i) => {
    const f = join(dir, `policy-${i}.conf`);
    writeFileSync(f, text);
    return f;
  });
  let config = privateBusConfig(dir, includes);
  if (opts.eavesdrop === false)
    config = config
      .replace(' send_destination="*" eavesdrop="true"', ' send_destination="*"')
      .replace('<allow eavesdrop="true"/>', ["method_call", "method_return", "error", "signal"].map((t) => `<allow receive_type="${t}"/>`).join("\n    "));
  writeFileSync(conf, config);
  const argv = [...(opts.prefix ?? []), daemon, "--config-file", conf, "--nofork", "--print-address=1", "--nopidfile"];
  const child: ChildProcess = spawn(argv[0]!, argv.slice(1), {
    stdio: ["ignore", "pipe", process.env.DEBUG_BUS ? "inherit" : "ignore"],
  });
  const address = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.once("error", (e) => reject(new Error(`cannot start ${daemon}: ${e.message} (install the dbus package)`)));
    child.once("exit", (code) => reject(new Error(`${daemon} exited with ${code}`)));
    child.stdout!.on("data", (d) => {
      out += d;
      const nl = out.indexOf("\n");
      if (nl >= 0) resolve(out.slice(0, nl).trim());
    });
  });
  child.removeAllListeners("exit");
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return {
    address,
    pid: child.pid!,
    dir,
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
