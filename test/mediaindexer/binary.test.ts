// The compiled binary carries the metadata thread (an entry point of its own in
// scripts/build.ts): dist/devservices hosting the media indexer indexes tags and
// image headers of a configured media root.
import { test, expect } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "bun";
import { testEnv, BINARY, eventually, binaryBuilt } from "../helpers/harness";
import { mp3, jpeg, put } from "./media";
import type { Json } from "../../src/core/errors";

test.skipIf(!binaryBuilt())("dist/devservices indexes a media root with its metadata thread", async () => {
  const env = await testEnv();
  const dir = mkdtempSync(join(tmpdir(), "mediaindexer-bin-"));
  const media = join(dir, "media");
  put(join(media, "s.mp3"), mp3({ title: "Tagged", artist: "Someone" }));
  put(join(media, "p.jpg"), jpeg({ width: 33, height: 22 }));
  const board = join(dir, "board.json");
  writeFileSync(board, JSON.stringify({
    name: "mi-test", backend: "virtual", services: ["mediaindexer"],
    serviceConfig: { mediaindexer: { mediaRoots: [media], removableRoot: null, plugins: ["storage"], rescanInterval: 0 } },
  }));
  const p = spawn([BINARY, "serve", "--bus", env.bus.address, "--board", board, "--state-dir", join(dir, "state"), "--log-level", "fatal"], { stdout: "ignore", stderr: "inherit" });
  try {
    const c = await env.client();
    const idle = async () => {
      const r = await c.call("mediaindexer", "getDeviceList", {}, { timeoutMs: 500 }).catch(() => null);
      const d = (((r?.pluginList as Json[] | undefined)?.[0]?.deviceList as Json[] | undefined) ?? [])[0];
      return d && d.state === "idle" && d.audioCount === 1 && d.imageCount === 1;
    };
    await eventually(idle, 15000, 100);
    const a = ((await c.call("mediaindexer", "getAudioList", {})).audioList as Json).results as Json[];
    expect(a[0]).toMatchObject({ title: "Tagged", artist: "Someone" });
    const i = ((await c.call("mediaindexer", "getImageList", {})).imageList as Json).results as Json[];
    expect(i[0]).toMatchObject({ width: 33, height: 22 });
  } finally {
    p.kill();
    await p.exited;
    await env.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}, 30000);
