// devservices demo: a private bus with every service of a board, and example calls.
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { startPrivateBus } from "../bus/daemon";
import { loadBoard } from "../core/board";
import { configureLogging } from "../core/log";
import { startRuntime } from "../runtime";
import { BusClient } from "../bus/client";
import { cli, usage, logLevel, untilSignal } from "./args";
import { writeSampleMedia } from "./demo-media";
import demoViewer from "../../recipes/apps/com.vendor.demo.viewer/viewer" with { type: "text" };
import demoViewerInfo from "../../recipes/apps/com.vendor.demo.viewer/appinfo.json" with { type: "json" };

export const USAGE = `devservices demo [--board NAME|PATH] [--state-dir DIR] [--log-level LEVEL]
      Starts a private dbus-daemon and all services of the board (default: virtual),
      prints the bus address and example calls, and runs until interrupted. The media
      indexer gets one more media root, DIR/media, with a few sample files (WAV, MP3,
      JPEG) made at start. Without --state-dir the state directory is a new temporary
      one, removed when the demo ends.
`;

export async function demo(argv: string[]) {
  const { flags, rest } = cli(argv, { board: { type: "string" }, "state-dir": { type: "string" }, "log-level": { type: "string" } });
  if (rest.length) usage("demo takes no arguments besides its options");
  const log = configureLogging(logLevel(flags, "warn"));
  let board = loadBoard(flags.board as string | undefined);
  const bus = await startPrivateBus();
  const ownStateDir = flags["state-dir"] === undefined;
  const stateDir = (flags["state-dir"] as string) ?? mkdtempSync(join(tmpdir(), "devservices-demo-"));
  if (board.services.includes("intent")) installDemoApplication(stateDir);
  // The sample media: one more media root of the indexer, indexed before the examples are printed.
  const media = board.services.includes("mediaindexer") ? resolve(stateDir, "media") : undefined;
  if (media) {
    writeSampleMedia(media);
    const mi = board.serviceConfig.mediaindexer ?? {};
    const roots = Array.isArray(mi.mediaRoots) ? (mi.mediaRoots as string[]) : [];
    board = { ...board, serviceConfig: { ...board.serviceConfig, mediaindexer: { ...mi, mediaRoots: [...roots.filter((r) => r !== media), media] } } };
  }
  let rt;
  try {
    rt = await startRuntime({ busAddress: bus.address, board, stateDir, log });
  } catch (e) {
    await bus.stop();
    throw e;
  }
  const hosted = new Set(rt.services.map((s) => s.module.spec.name));
  if (media && hosted.has("mediaindexer")) await indexSampleMedia(bus.address, media);
  // The compiled binary runs its own embedded script (/$bunfs/...); from source, bun runs src/main.ts.
  const self = process.argv[1]?.startsWith("/$bunfs") ? process.execPath : `${process.execPath} ${process.argv[1]}`;
  const record = rt.services.map((s) => s.module.spec.busName).find((n) => n.startsWith("com.vendor.pipeline.record."));
  // A recording's file is the caller's new file, outside the state directory (docs/services/record.md).
  const still = join(tmpdir(), `${basename(stateDir)}-still.jpg`);
  const examples: Record<string, string[]> = {
    testautomation: [
      `call luna://com.vendor.service.testautomation/ping '{"Message":"hi"}'`,
      `call -i com.vendor.service.testautomation/subscribeToEvents '{"subscribe":true}'`,
      `call com.vendor.service.testautomation/handleRequest '{"command":"getRunningAppsAndStages"}'`,
    ],
    intent: [
      `call com.vendor.service.intent/query '{}'`,
      `call -n 2 com.vendor.service.intent/start '{"intent":{"action":"view","uri":"https://example.com"},"subscribe":true}'`,
    ],
    power2: [
      `call com.vendor.service.power2/getState '{"subscribe":false}'`,
      `call -i com.vendor.service.power2/getState '{"subscribe":true}'`,
      `call -i com.vendor.service.power2/registerStateTransition '{"state":"ActiveState"}'`,
    ],
    filecache: [`call com.vendor.service.filecache/GetCacheStatus '{}'`, `call com.vendor.service.filecache/GetCacheTypes '{}'`],
    nettools: [
      `call -i com.vendor.service.nettools/gethostname '{"subscribe":true}'`,
      `call com.vendor.service.nettools/ping '{"hostname":"127.0.0.1"}'`,
      `call com.vendor.service.nettools/ping6 '{"hostname":"::1","ifName":"lo"}'`,
    ],
    camera2: [
      `call com.vendor.service.camera2/getCameraList '{}'`,
      `call com.vendor.service.camera2/getInfo '{"id":"camera1"}'`,
      `call -a com.vendor.demo.viewer com.vendor.service.camera2/open '{"id":"camera1"}'`,
    ],
    record: record
      ? [
          `call -i ${record}/subscribe '{"subscribe":true}'`,
          `call ${record}/subscribe '{}'`,
          `call ${record}/start '{"image":{"videoSrc":"camera1","codec":"JPEG","width":640,"height":480,"quality":90},"format":"JPEG","path":"${still}"}'`,
          `call ${record}/stop '{}'`,
        ]
      : [],
    mediaindexer: media
      ? [
          `call com.vendor.service.mediaindexer/getDeviceList '{}'`,
          `call com.vendor.service.mediaindexer/getAudioList '{}'`,
          `call com.vendor.service.mediaindexer/getImageList '{"uri":"storage://${media}"}'`,
          `call com.vendor.service.mediaindexer/getAudioMetadata '{"uri":"storage://${media}/music/A4 tone.wav"}'`,
          `call -i com.vendor.service.mediaindexer/getAudioList '{"subscribe":true}'`,
        ]
      : [],
    peripheralmanager: [
      `call -i com.vendor.service.peripheralmanager/gpio/list '{"subscribe":true}'`,
      `call com.vendor.service.peripheralmanager/i2c/list '{"verbose":true}'`,
      `call com.vendor.service.peripheralmanager/uart/list '{}'`,
    ],
    videooutput: [
      `call -i com.vendor.service.videooutput/getStatus '{"subscribe":true}'`,
      `call com.vendor.service.videooutput/connect '{"source":"VDEC","sink":"MAIN"}'`,
      `call com.vendor.service.videooutput/display/setDisplayWindow '{"sink":"MAIN","fullScreen":false,"displayOutput":{"x":100,"y":100,"width":640,"height":360}}'`,
    ],
  };
  const lines = [
    `devservices demo: board '${board.name}', ${rt.services.length} services on a private bus.`,
    ``,
    `  export DEVSERVICES_BUS='${bus.address}'`,
    `  state directory: ${stateDir}`,
    ...(media && hosted.has("mediaindexer") ? [`  sample media: ${media}`] : []),
    ``,
    `Services: ${rt.services.map((s) => s.module.spec.busName).join(", ")}`,
    ``,
    `Try, in another shell (after the export above):`,
    ...Object.entries(examples)
      .filter(([n]) => hosted.has(n) || (n === "record" && record))
      .flatMap(([, l]) => l.map((x) => `  ${self} ${x}`)),
    `  ${self} describe SERVICE`,
    `  busctl --address='${bus.address}' tree`,
    ``,
    `Ctrl-C stops the demo.`,
  ];
  console.log(lines.join("\n"));
  await untilSignal();
  await rt.stop();
  await bus.stop();
  // A state directory the demo made for itself goes with it.
  if (ownStateDir) rmSync(stateDir, { recursive: true, force: true });
  process.exit(0);
}

/**
 * Has the media indexer index the sample media now: the virtual board does not
 * detect at start (docs/services/mediaindexer.md), so the storage plugin's detection
 * attaches the media roots, and a scan of the sample device answers when it is done.
 * A failure is told and the demo goes on.
 */
async function indexSampleMedia(address: string, media: string) {
  const MI = "com.vendor.service.mediaindexer";
  let client: BusClient | undefined;
  try {
    client = await BusClient.connect(address);
    const detect = await client.call(MI, "runDetect", { uri: "storage" });
    if (detect.returnValue !== true) throw new Error(`runDetect: ${JSON.stringify(detect)}`);
    const scan = await client.call(MI, "requestMediaScan", { path: `storage://${media}` }, { timeoutMs: 60000 });
    if (scan.returnValue !== true) throw new Error(`requestMediaScan: ${JSON.stringify(scan)}`);
  } catch (e) {
    process.stderr.write(`devservices demo: the sample media could not be indexed: ${(e as Error).message}\n`);
  } finally {
    client?.close();
  }
}

/**
 * The demo's handler application (recipes/apps/com.vendor.demo.viewer, carried in the
 * binary): it lands in the state directory's applications/, which the intent service
 * watches, and calls back through this same binary ($DEVSERVICES).
 */
function installDemoApplication(stateDir: string) {
  const dir = join(stateDir, "applications", "com.vendor.demo.viewer");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "viewer"), demoViewer, { mode: 0o755 });
  writeFileSync(join(dir, "appinfo.json"), JSON.stringify(demoViewerInfo, null, 2));
  process.env.DEVSERVICES = process.argv[1]?.startsWith("/$bunfs") ? process.execPath : `${process.execPath} ${process.argv[1]}`;
}
