// Makes the state directory that test/store keeps as committed test data: the state a
// given binary leaves in /var/lib/devservices, made through the bus as a device would
// make it, so the current binary's upgrade of it can be tested (docs/updates.md).
//
//   bun scripts/make-state-fixture.ts [--binary PATH] [--out DIR] [--label TEXT]
//
// --binary: the executable that writes the state (default dist/devservices; for a
// released format, the binary of that release). --out: where the state directory goes
// (default test/data/state-v1; replaced), with manifest.json beside it: what was made
// (cache types and objects, media entries, IDs handed out, the power-on reason), and
// --label (which release made it) as its madeBy.
//
// It starts `serve` on a private bus with the services that keep state, then: defines a
// file cache type and writes two objects; scans a directory of three small media files
// (MEDIA_ROOT, a fixed path: the media database keeps the device's path, so the test
// makes the same files there); hands out intent IDs (through a handler application
// installed in the state directory's applications/) and teCommandIds; sets the
// power-on reason; stops the binary (SIGTERM) and copies the state directory out.
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startPrivateBus } from "../src/bus/daemon";
import { BusClient } from "../src/bus/client";
import { mp3, jpeg, PNG_1x1 } from "../test/mediaindexer/media";

export const ROOT = resolve(import.meta.dir, "..");
/** Where the scanned media live, when the fixture is made and when it is tested. */
export const MEDIA_ROOT = "/tmp/devservices-state-v1-media";
/** The services whose state the fixture holds. */
export const FIXTURE_SERVICES = ["testautomation", "intent", "power2", "filecache", "nettools", "mediaindexer"];
export const FIXTURE_APP = "com.vendor.fixture.viewer";
/** Each service's board configuration while the fixture is made and tested (nothing of the host's). */
export const FIXTURE_BOARD = {
  serviceConfig: {
    filecache: { configFile: null },
    mediaindexer: { removableRoot: null, plugins: ["storage"], detect: false, rescanInterval: 0, fallbackRescanInterval: 0 },
  },
};

/** The media of the scan: the same bytes whenever they are made. */
export function writeFixtureMedia(dir = MEDIA_ROOT): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, "music"), { recursive: true });
  writeFileSync(join(dir, "music", "a.mp3"), mp3({ title: "Fixture Alpha", artist: "Ann", album: "State", frames: 4 }));
  writeFileSync(join(dir, "music", "b.mp3"), mp3({ title: "Fixture Beta", artist: "Bo", album: "State", frames: 4 }));
  writeFileSync(join(dir, "photo.jpg"), jpeg({ width: 32, height: 16, description: "fixture" }));
  void PNG_1x1;
}

export interface Manifest {
  madeBy: string;
  services: string[];
  filecache: { type: Record<string, unknown>; objects: { fileName: string; relPath: string; content: string; size?: number }[] };
  mediaindexer: { root: string; device: string; audioTitles: string[]; imageCount: number };
  intentIds: number[];
  teCommandIds: number[];
  powerOnReason: string;
}

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, ms = 20000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

async function main() {
  const { values } = parseArgs({ args: Bun.argv.slice(2), options: { binary: { type: "string" }, out: { type: "string" }, label: { type: "string" } }, strict: true });
  const binary = resolve(values.binary ?? join(ROOT, "dist/devservices"));
  const out = resolve(values.out ?? join(ROOT, "test/data/state-v1"));
  const work = mkdtempSync(join(tmpdir(), "devservices-fixture-"));
  const stateDir = join(work, "state");
  // The intent handler: an application that exits at once (its launch is all the fixture needs).
  const app = join(stateDir, "applications", FIXTURE_APP);
  mkdirSync(app, { recursive: true });
  writeFileSync(join(app, "main"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
  writeFileSync(join(app, "appinfo.json"), JSON.stringify({ id: FIXTURE_APP, main: "main", intentFilters: [{ actions: ["view"], uris: ["fixture:"] }] }));
  writeFixtureMedia();
  const board = join(work, "board.json");
  const virtual = JSON.parse(await Bun.file(join(ROOT, "recipes/boards/virtual.json")).text());
  writeFileSync(board, JSON.stringify({ ...virtual, name: "virtual", serviceConfig: { ...virtual.serviceConfig, ...FIXTURE_BOARD.serviceConfig } }));

  const bus = await startPrivateBus();
  const proc = Bun.spawn([binary, "serve", "--bus", bus.address, "--board", board, "--state-dir", stateDir, "--log-level", "warn", ...FIXTURE_SERVICES], {
    stdout: "inherit",
    stderr: "inherit",
  });
  const client = await BusClient.connect(bus.address);
  try {
    for (const s of FIXTURE_SERVICES) await until(`${s} on the bus`, () => client.hasOwner(`com.vendor.service.${s}`));
    const call = async (service: string, method: string, payload: Record<string, unknown> = {}) => {
      const r = (await client.call(`com.vendor.service.${service}`, method, payload as any)) as Record<string, any>;
      return r;
    };
    const must = async (service: string, method: string, payload: Record<string, unknown> = {}) => {
      const r = await call(service, method, payload);
      if (r.returnValue !== true) throw new Error(`${service}/${method}: ${JSON.stringify(r)}`);
      return r;
    };

    // File cache: a type and two objects with their contents.
    const type = { typeName: "fixture", loWatermark: 0, hiWatermark: 1048576, size: 64, cost: 2, lifetime: 100 };
    await must("filecache", "DefineType", type);
    const cacheDir = join(stateDir, "filecache", "cache");
    const objects: Manifest["filecache"]["objects"] = [];
    for (const [fileName, content, size] of [["note.txt", "kept across updates\n", 32], ["data.bin", "abc", undefined]] as const) {
      const r = await must("filecache", "InsertCacheObject", { typeName: "fixture", fileName, ...(size ? { size } : {}) });
      writeFileSync(r.pathName, content);
      objects.push({ fileName, relPath: relative(cacheDir, r.pathName), content, ...(size ? { size } : {}) });
    }

    // Media indexer: a scan of three small files.
    await must("mediaindexer", "requestMediaScan", { path: MEDIA_ROOT });
    const device = `storage://${MEDIA_ROOT}`;
    await until("the scan", async () => {
      const r = await call("mediaindexer", "getDeviceList");
      const d = (r.pluginList as any[]).flatMap((p) => p.deviceList).find((d: any) => d.uri === device);
      return d && d.state === "idle" && d.audioCount === 2 && d.imageCount === 1;
    });
    const audio = await must("mediaindexer", "getAudioList", { uri: device });
    const audioTitles = (audio.audioList.results as any[]).map((e) => e.title).sort();

    // Intent IDs and teCommandIds handed out.
    const intentIds: number[] = [];
    for (let i = 0; i < 3; i++) intentIds.push((await must("intent", "start", { intent: { action: "view", uri: `fixture:${i}` } })).intentId);
    const teCommandIds: number[] = [];
    for (let i = 0; i < 3; i++) teCommandIds.push((await call("testautomation", "handleRequest", { command: "noSuchCommand" })).teCommandId);
    if (teCommandIds.some((id) => typeof id !== "number")) throw new Error(`testautomation: no teCommandId: ${teCommandIds}`);

    // The power-on reason.
    const powerOnReason = "fixture: kept across updates";
    await must("power2", "setPowerOnReason", { reason: powerOnReason });

    const manifest: Manifest = {
      madeBy: binary,
      services: FIXTURE_SERVICES,
      filecache: { type, objects },
      mediaindexer: { root: MEDIA_ROOT, device, audioTitles, imageCount: 1 },
      intentIds,
      teCommandIds,
      powerOnReason,
    };
    client.close();
    proc.kill("SIGTERM");
    if ((await proc.exited) !== 0) throw new Error(`serve exited with ${proc.exitCode}`);
    // Copied out: the state directory (with the handler application; without the file
    // cache's reserve, which is made again at start, and without SQLite's shared-memory
    // index, which is rebuilt from the write-ahead log).
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    cpSync(stateDir, join(out, "state"), {
      recursive: true,
      filter: (src) => !src.endsWith("-reserve") && !src.endsWith("-shm"),
    });
    writeFileSync(join(out, "manifest.json"), JSON.stringify({ ...manifest, madeBy: values.label ?? relative(ROOT, binary) }, null, 2) + "\n");
    let bytes = 0;
    const walk = (d: string) => {
      for (const n of readdirSync(d)) {
        const p = join(d, n);
        const st = statSync(p);
        if (st.isDirectory()) walk(p);
        else bytes += st.size;
      }
    };
    walk(out);
    console.log(`state directory written to ${relative(ROOT, out)} (${bytes} bytes)`);
  } finally {
    client.close();
    if (proc.exitCode === null) proc.kill("SIGKILL");
    await bus.stop();
    rmSync(work, { recursive: true, force: true });
    rmSync(MEDIA_ROOT, { recursive: true, force: true });
  }
}

if (import.meta.main) await main();
