// Media indexer benchmark: one tree of media files (MP3 with ID3 tags and cover art,
// JPEG with EXIF and GPS, MP4 H.264/AAC), made once and reused; then, in one run,
// MiniDLNA's full scan of it (minidlnad -R with its own configuration on loopback,
// timed to its "Scanning ... finished" log line), devservices' full scan of the same
// tree (the compiled binary, requestMediaScan until the device is idle with every
// file counted), and devservices' rescan of the unchanged tree.
//   bun bench/mediaindexer/run.ts [--files 10000] [--dir /var/tmp/devservices-mediabench]
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawn, spawnSync } from "bun";
import { startPrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { mp3, jpeg, PNG_1x1, mp4 } from "../../test/mediaindexer/media";
import type { Json } from "../../src/core/errors";

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const FILES = Number(arg("--files") ?? 10000);
const TREE = resolve(arg("--dir") ?? "/var/tmp/devservices-mediabench");
const ROOT = resolve(import.meta.dir, "../..");
const BINARY = join(ROOT, "dist/devservices");
const MINIDLNAD = ["/usr/sbin/minidlnad", "/usr/bin/minidlnad"].find((p) => existsSync(p));
const PER_DIR = 100;

if (!existsSync(BINARY)) throw new Error("build first: bun run build");
if (!MINIDLNAD) throw new Error("minidlnad is not installed (scripts/setup installs it)");

/** The tree: 40 % MP3, 40 % JPEG, 20 % MP4, 100 files a directory; made once (a marker records the count). */
function makeTree() {
  const media = join(TREE, "media");
  const marker = join(TREE, "complete");
  if (existsSync(marker) && readFileSync(marker, "utf8") === String(FILES)) return media;
  rmSync(TREE, { recursive: true, force: true });
  mkdirSync(media, { recursive: true });
  console.log(`making ${FILES} media files in ${media} (once)`);
  const clips: string[] = [];
  for (let v = 0; v < 4; v++) {
    const p = join(TREE, `clip${v}.mp4`);
    mp4(p, { width: 320 + 16 * v, height: 240, rate: v % 2 ? "30000/1001" : "25", seconds: 2, title: `Clip ${v}`, created: "2022-05-06T07:08:09Z" });
    clips.push(p);
  }
  for (let i = 0; i < FILES; i++) {
    const dir = join(media, `artist${Math.floor(i / PER_DIR / 10)}`, `album${Math.floor(i / PER_DIR)}`);
    if (i % PER_DIR === 0) mkdirSync(dir, { recursive: true });
    const k = i % 5;
    if (k < 2)
      writeFileSync(join(dir, `track${i}.mp3`), mp3({
        title: `Track ${i}`, artist: `Artist ${Math.floor(i / 1000)}`, album: `Album ${Math.floor(i / PER_DIR)}`, genre: "Rock",
        track: `${(i % 20) + 1}/20`, year: "2020", cover: i % 10 === 0 ? PNG_1x1 : undefined, frames: 40,
      }));
    else if (k < 4)
      writeFileSync(join(dir, `photo${i}.jpg`), jpeg({ width: 1024 + (i % 7), height: 768, date: "2021:02:03 04:05:06", lat: 48.1 + i / 1e5, lon: 11.5, description: `Photo ${i}` }));
    else copyFileSync(clips[i % clips.length]!, join(dir, `video${i}.mp4`));
  }
  writeFileSync(marker, String(FILES));
  return media;
}

/** Reads every file once, so both indexers start with the same (warm) page cache. */
function warm(dir: string) {
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (e.isFile()) readFileSync(join(e.parentPath, e.name));
}

async function minidlnaScan(media: string): Promise<{ ms: number; files: number }> {
  const dir = mkdtempSync(join(tmpdir(), "bench-minidlna-"));
  try {
    mkdirSync(join(dir, "db"));
    writeFileSync(join(dir, "minidlna.conf"), [
      `port=${20000 + Math.floor(Math.random() * 20000)}`, "network_interface=lo", `media_dir=${media}`, `db_dir=${join(dir, "db")}`,
      `log_dir=${dir}`, "friendly_name=bench", "inotify=no", "log_level=general,artwork,database,inotify,scanner,metadata,http,ssdp,tivo=warn", "",
    ].join("\n"));
    const t0 = performance.now();
    const p = spawn([MINIDLNAD!, "-f", join(dir, "minidlna.conf"), "-R", "-d", "-P", join(dir, "pid")], { stdout: "pipe", stderr: "pipe", cwd: dir });
    let out = "";
    const dec = new TextDecoder();
    let files = -1;
    for await (const chunk of p.stdout) {
      out += dec.decode(chunk);
      const m = /Scanning .* finished \((\d+) files\)/.exec(out);
      if (m) {
        files = Number(m[1]);
        break;
      }
    }
    const ms = performance.now() - t0;
    p.kill();
    await p.exited;
    if (files < 0) throw new Error(`minidlnad ended without finishing its scan:\n${out.slice(-2000)}`);
    return { ms, files };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function devservicesScans(media: string): Promise<{ full: number; rescan: number; counts: number[] }> {
  const dir = mkdtempSync(join(tmpdir(), "bench-devservices-"));
  const bus = await startPrivateBus();
  const board = join(dir, "board.json");
  writeFileSync(board, JSON.stringify({
    name: "bench", backend: "virtual", services: ["mediaindexer"],
    serviceConfig: { mediaindexer: { mediaRoots: [media], removableRoot: null, plugins: ["storage"], detect: false, rescanInterval: 0, fallbackRescanInterval: 0 } },
  }));
  const p = spawn([BINARY, "serve", "--bus", bus.address, "--board", board, "--state-dir", join(dir, "state"), "--log-level", "warn"], { stdout: "inherit", stderr: "inherit" });
  const c = await BusClient.connect(bus.address);
  try {
    for (let i = 0; ; i++) {
      if ((await c.call("mediaindexer", "getPluginList", {}, { timeoutMs: 500 }).catch(() => null))?.returnValue) break;
      if (i > 200) throw new Error("devservices did not start");
      await Bun.sleep(50);
    }
    const device = async () => ((((await c.call("mediaindexer", "getDeviceList", {})).pluginList as Json[])[0]!.deviceList as Json[]) ?? [])[0];
    const scan = async () => {
      const t0 = performance.now();
      const r = await c.call("mediaindexer", "requestMediaScan", { path: media });
      if (!r.returnValue) throw new Error(JSON.stringify(r));
      for (;;) {
        const d = await device();
        if (d && d.state === "idle") return { ms: performance.now() - t0, counts: [d.audioCount, d.videoCount, d.imageCount] as number[] };
        await Bun.sleep(10);
      }
    };
    const full = await scan();
    const rescan = await scan();
    return { full: full.ms, rescan: rescan.ms, counts: full.counts };
  } finally {
    c.close();
    p.kill();
    await p.exited;
    await bus.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const media = makeTree();
console.log(`tree: ${FILES} files (${(FILES * 0.4) | 0} MP3, ${(FILES * 0.4) | 0} JPEG, ${(FILES * 0.2) | 0} MP4) in ${media}`);
warm(media);
const cores = navigator.hardwareConcurrency;
const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const dlna = await minidlnaScan(media);
const ds = await devservicesScans(media);
if (ds.counts.reduce((a, b) => a + b, 0) !== FILES) console.log(`warning: devservices counted ${ds.counts.join("/")} (audio/video/image) of ${FILES}`);
const s = (ms: number) => `${(ms / 1000).toFixed(2).padStart(7)} s`;
const rate = (ms: number) => `${Math.round((FILES * 1000) / ms)} files/s`;
console.log(`machine: ${cores} cores, load average before the run ${load}`);
console.log(`MiniDLNA full scan (minidlnad -R, ${dlna.files} files)  ${s(dlna.ms)}  ${rate(dlna.ms)}`);
console.log(`devservices full scan                      ${s(ds.full)}  ${rate(ds.full)}`);
console.log(`devservices rescan (unchanged tree)        ${s(ds.rescan)}`);
console.log(`ratio MiniDLNA / devservices (full scan)   ${(dlna.ms / ds.full).toFixed(2)}x`);
