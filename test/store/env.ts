// Shared set-up of the store tests: the committed state directory of a released
// format (test/data/state-v1, made by scripts/make-state-fixture.ts) copied into a
// temporary state directory, a compiled binary serving it on a private bus, and
// `devservices health` against it.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "bun";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { ROOT, BINARY, eventually } from "../helpers/harness";
import { FIXTURE_BOARD, FIXTURE_SERVICES, writeFixtureMedia, MEDIA_ROOT, type Manifest } from "../../scripts/make-state-fixture";

export const FIXTURE = join(ROOT, "test/data/state-v1");
export const MANIFEST = JSON.parse(readFileSync(join(FIXTURE, "manifest.json"), "utf8")) as Manifest;
/** The binary under test ($DEVSERVICES_TEST_BINARY: an older build, to compare). */
export const CURRENT = process.env.DEVSERVICES_TEST_BINARY ?? BINARY;
/** The test build whose power-on reason file is one format newer (DEVSERVICES_STORE_BUMP=1). */
export const BUMPED = join(ROOT, "dist/devservices-storebump");

/** Builds the bumped binary (beside dist/devservices, which stays the product's build). */
export function buildBumped(): void {
  const r = Bun.spawnSync(["flock", "/tmp/devservices-build.lock", process.execPath, "run", "build"], {
    cwd: ROOT,
    env: { ...process.env, DEVSERVICES_STORE_BUMP: "1", DEVSERVICES_OUTFILE: "dist/devservices-storebump" },
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0) throw new Error(`bumped build failed: ${r.stderr.toString()}`);
}

export interface Served {
  bus: PrivateBus;
  client: BusClient;
  /** serve's log lines (JSON) so far. */
  lines: Record<string, any>[];
  /** Resolves with the "devservices ready" line. */
  ready: Promise<Record<string, any>>;
  call(service: string, method: string, payload?: Record<string, unknown>): Promise<Record<string, any>>;
  health(extra?: string[]): Promise<{ code: number; out: Record<string, any> }>;
  stop(): Promise<number>;
}

/** A working copy of the fixture's state directory, the fixture's media at their path, and a board file. */
export function fixtureCopy(): { dir: string; stateDir: string; board: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), "devservices-store-"));
  const stateDir = join(dir, "state");
  cpSync(join(FIXTURE, "state"), stateDir, { recursive: true });
  writeFixtureMedia();
  const virtual = JSON.parse(readFileSync(join(ROOT, "recipes/boards/virtual.json"), "utf8"));
  const board = join(dir, "board.json");
  writeFileSync(board, JSON.stringify({ ...virtual, name: "virtual", services: FIXTURE_SERVICES, serviceConfig: { ...virtual.serviceConfig, ...FIXTURE_BOARD.serviceConfig } }));
  return {
    dir,
    stateDir,
    board,
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
      rmSync(MEDIA_ROOT, { recursive: true, force: true });
    },
  };
}

/** `binary serve` of the fixture's services on a new private bus, over stateDir. */
export async function serve(binary: string, stateDir: string, board: string, services = FIXTURE_SERVICES): Promise<Served> {
  const bus = await startPrivateBus();
  const proc = spawn([binary, "serve", "--bus", bus.address, "--board", board, "--state-dir", stateDir, "--log-level", "info", ...services], { env: { ...process.env },
    stdout: "pipe",
    stderr: "inherit",
  });
  const lines: Record<string, any>[] = [];
  let readyLine!: (l: Record<string, any>) => void;
  const ready = new Promise<Record<string, any>>((r) => (readyLine = r));
  (async () => {
    let rest = "";
    for await (const chunk of proc.stdout) {
      rest += new TextDecoder().decode(chunk);
      const parts = rest.split("\n");
      rest = parts.pop()!;
      for (const p of parts) {
        try {
          const l = JSON.parse(p);
          lines.push(l);
          if (l.msg === "devservices ready") readyLine(l);
        } catch {}
      }
    }
  })();
  const client = await BusClient.connect(bus.address);
  return {
    bus,
    client,
    lines,
    ready,
    call: (service, method, payload = {}) => client.call(`com.vendor.service.${service}`, method, payload as any, { timeoutMs: 5000 }) as Promise<Record<string, any>>,
    async health(extra = []) {
      const p = spawn([binary, "health", "--bus", bus.address, "--board", board, "--timeout", "5000", ...extra], { stdout: "pipe", stderr: "inherit" });
      const [text, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
      const out = text.trim().split("\n");
      if (out.length !== 1) throw new Error(`health printed ${out.length} lines: ${text}`);
      return { code, out: JSON.parse(out[0]!) };
    },
    async stop() {
      client.close();
      proc.kill("SIGTERM");
      const code = await proc.exited;
      await bus.stop();
      return code;
    },
  };
}

/** Waits until the media indexer has the fixture's device scanned and idle. */
export async function mediaIdle(s: Served) {
  await eventually(
    async () => {
      const r = await s.call("mediaindexer", "getDeviceList").catch(() => null);
      const d = ((r?.pluginList as any[]) ?? []).flatMap((p) => p.deviceList).find((d: any) => d.uri === MANIFEST.mediaindexer.device);
      return d && d.state === "idle";
    },
    15000,
    50,
  );
}
