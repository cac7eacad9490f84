// The network tools tests' world, made by each test file for itself:
//
//   namespace S (the service)                      namespace P (the peer)
//   s0 192.0.2.1/24 2001:db8::1/64  <-- veth -->   p0 192.0.2.2/24 (+ .3) 2001:db8::2/64 (+ ::3)
//   default via 192.0.2.2 / 2001:db8::2            HTTP on 192.0.2.2:80 and [2001:db8::2]:80
//   unreachable 203.0.113.0/24                     blackhole 198.51.100.0/24, 2001:db8:1::/64
//   s1 (a second veth, down)                       (forwarding off: nothing is routed on)
//
// Every address is from the documentation ranges and exists only in these
// namespaces. The service is the shipped binary, run as
// `ip netns exec S unshare --uts dist/devservices serve --bus <private bus> nettools`:
// `ip netns exec` gives it a mount namespace in which /etc/netns/S/hosts and
// resolv.conf are /etc/hosts and /etc/resolv.conf (names of the tests resolve to P;
// no DNS server, so other names fail at once), and its own UTS namespace keeps the
// machine's host name out of reach. The bus socket is a file, reachable from any
// network namespace. afterAll() removes the namespaces, /etc/netns/S and the files.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { BusClient } from "../../src/bus/client";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BINARY, BUN, ROOT, eachLine, eventually, openBusToAll } from "../helpers/harness";

const IP = "/usr/sbin/ip";
const UNSHARE = "/usr/bin/unshare";

/** Whether this machine can run the tests: root, iproute2 with netns, unshare, the built binary. */
export function canRun(): string | null {
  if (process.getuid?.() !== 0) return "not root";
  if (!existsSync(IP) || !existsSync(UNSHARE)) return "iproute2 or util-linux missing";
  if (!existsSync(BINARY)) return "dist/devservices is not built (bun run build)";
  return null;
}

export interface World {
  /** Namespace names. */
  S: string;
  P: string;
  bus: PrivateBus;
  dir: string;
  /** The hostname file the service writes. */
  hostnameFile: string;
  service: Subprocess;
  /** The service's output (JSON log lines). */
  log: string[];
  client(): Promise<BusClient>;
  call(method: string, payload?: Record<string, unknown> | string): Promise<Record<string, any>>;
  /** Runs a command in a namespace (argv, no shell), returns stdout; throws on failure. */
  inNs(ns: string, ...argv: string[]): string;
  /** p0's hardware address. */
  peerMac: string;
  stop(): Promise<void>;
}

function run(argv: string[]): string {
  const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${argv.join(" ")}: exit ${r.exitCode}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

export interface WorldOptions {
  /** Extra serviceConfig.nettools options. */
  config?: Record<string, unknown>;
  /** Extra lines for S's /etc/hosts. */
  hosts?: string[];
  /** Environment of the service process (PATH is a directory without DHCP clients unless given). */
  env?: Record<string, string>;
}

let counter = 0;

export async function makeWorld(tag: string, opts: WorldOptions = {}): Promise<World> {
  const id = `${tag}${process.pid % 100000}${counter++}`;
  const S = `nts-${id}`, P = `ntp-${id}`;
  const dir = mkdtempSync(join(tmpdir(), `nettools-${tag}-`));
  chmodSync(dir, 0o755);
  const etc = `/etc/netns/${S}`;
  const cleanups: (() => void | Promise<void>)[] = [];
  const world = { S, P, dir } as World;
  const stop = async () => {
    for (const c of cleanups.reverse()) {
      try {
        await c();
      } catch (e) {
        console.error("nettools test cleanup:", e);
      }
    }
  };
  world.stop = stop;
  try {
    const inNs = (ns: string, ...argv: string[]) => run([IP, "netns", "exec", ns, ...argv]);
    world.inNs = inNs;
    for (const ns of [S, P]) {
      run([IP, "netns", "add", ns]);
      cleanups.push(() => void Bun.spawnSync([IP, "netns", "del", ns]));
    }
    run([IP, "link", "add", "s0", "netns", S, "type", "veth", "peer", "name", "p0", "netns", P]);
    run([IP, "link", "add", "s1", "netns", S, "type", "veth", "peer", "name", "p1", "netns", P]);
    const ipS = (...a: string[]) => inNs(S, IP, ...a);
    const ipP = (...a: string[]) => inNs(P, IP, ...a);
    for (const [f, dev] of [[ipS, "lo"], [ipS, "s0"], [ipP, "lo"], [ipP, "p0"]] as const) f("link", "set", dev, "up");
    ipS("addr", "add", "192.0.2.1/24", "dev", "s0");
    ipS("addr", "add", "2001:db8::1/64", "dev", "s0", "nodad");
    ipP("addr", "add", "192.0.2.2/24", "dev", "p0");
    ipP("addr", "add", "192.0.2.3/24", "dev", "p0");
    ipP("addr", "add", "2001:db8::2/64", "dev", "p0", "nodad");
    ipP("addr", "add", "2001:db8::3/64", "dev", "p0", "nodad");
    ipS("route", "add", "default", "via", "192.0.2.2", "dev", "s0");
    ipS("-6", "route", "add", "default", "via", "2001:db8::2", "dev", "s0");
    ipS("route", "add", "unreachable", "203.0.113.0/24");
    ipP("route", "add", "blackhole", "198.51.100.0/24");
    ipP("-6", "route", "add", "blackhole", "2001:db8:1::/64");
    world.peerMac = inNs(P, "cat", "/sys/class/net/p0/address").trim();

    // The service's resolver view: /etc/hosts and resolv.conf of namespace S.
    mkdirSync(etc, { recursive: true });
    cleanups.push(() => rmSync(etc, { recursive: true, force: true }));
    writeFileSync(join(etc, "hosts"), [
      "127.0.0.1 localhost",
      "192.0.2.2 www.example.com peer.test",
      "2001:db8::2 www.example.com peer6.test",
      "192.0.2.3 www.closed.net",
      "198.51.100.1 www.silent.org",
      ...(opts.hosts ?? []),
    ].join("\n") + "\n");
    writeFileSync(join(etc, "resolv.conf"), "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n");

    // The peer's HTTP server on port 80 (not on 192.0.2.3 and 2001:db8::3: those refuse).
    const http = spawn([IP, "netns", "exec", P, BUN, join(ROOT, "test/nettools/fixtures/http-server.ts"), "192.0.2.2", "2001:db8::2"], {
      stdout: "pipe", stderr: "inherit",
    });
    cleanups.push(async () => {
      http.kill("SIGKILL");
      await http.exited;
    });
    const reader = http.stdout.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    if (!first.includes("LISTENING")) throw new Error(`HTTP server: ${first}`);

    const bus = await startPrivateBus();
    world.bus = bus;
    cleanups.push(() => bus.stop());
    openBusToAll(bus.address);

    world.hostnameFile = join(dir, "etc", "hostname");
    mkdirSync(join(dir, "etc"));
    writeFileSync(world.hostnameFile, "before\n");
    const board = join(dir, "board.json");
    writeFileSync(board, JSON.stringify({
      name: `nettools-test-${tag}`,
      backend: "virtual",
      services: ["nettools"],
      serviceConfig: {
        nettools: { configFile: null, hostnameFile: world.hostnameFile, arpTimeoutMs: 1000, httpTimeoutMs: 1500, ...opts.config },
      },
    }));
    const emptyPath = join(dir, "bin");
    mkdirSync(emptyPath);
    const service = spawn([IP, "netns", "exec", S, UNSHARE, "--uts", BINARY, "serve", "--bus", bus.address, "--board", board,
      "--state-dir", join(dir, "state"), "--log-level", "info", "nettools"], {
      stdout: "pipe", stderr: "pipe",
      env: { HOME: dir, PATH: emptyPath, DEVSERVICES_LOG_PRIORITY_PREFIX: "0", DEVSERVICES_GROUP_FILE: process.env.DEVSERVICES_GROUP_FILE!, ...opts.env },
    });
    world.service = service;
    world.log = [];
    cleanups.push(async () => {
      service.kill("SIGTERM");
      const t = setTimeout(() => service.kill("SIGKILL"), 3000);
      await service.exited;
      clearTimeout(t);
    });
    void eachLine(service.stdout, (l) => world.log.push(l));

    const clients: BusClient[] = [];
    cleanups.push(() => clients.forEach((c) => c.close()));
    world.client = async () => {
      const c = await BusClient.connect(bus.address);
      clients.push(c);
      return c;
    };
    const main = await world.client();
    world.call = (method, payload = {}) => main.call("nettools", method, payload as any, { timeoutMs: 20000 }) as Promise<Record<string, any>>;
    await eventually(async () => {
      if (service.exitCode !== null) throw new Error(`the service exited (${service.exitCode}): ${await new Response(service.stderr).text()}\n${world.log.join("\n")}`);
      return main.hasOwner("com.vendor.service.nettools");
    }, 20000, 50);
    return world;
  } catch (e) {
    await stop();
    throw e;
  }
}
