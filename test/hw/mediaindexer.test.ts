// The media indexer's msc plugin with a FAT filesystem (the host kernel here has no
// vfat driver, the guest's has): an image made with mkfs.fat, loop-mounted below the
// removable media root, appears as msc://<volume serial> with its media indexed;
// unmounted, it is unavailable with its entries kept (dirty); mounted again, the
// same device. The service runs in this process on a private bus.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "bun";
import { miEnv, type MiEnv } from "../mediaindexer/env.ts";
import { mp3, jpeg, put } from "../mediaindexer/media.ts";
import { eventually } from "../helpers/harness.ts";
import { guest } from "./vboard.ts";
import type { Json } from "../../src/core/errors.ts";

const run = (cmd: string[]) => {
  const r = spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")}: ${r.stderr.toString()}`);
};

guest("mediaindexer: a FAT stick on a loop device", () => {
  const URI = "msc://1A2B-3C4D";
  let mi: MiEnv;
  let dir: string;
  let removable: string;
  let img: string;

  beforeAll(async () => {
    for (const m of ["loop", "vfat", "nls_cp437", "nls_ascii", "nls_utf8", "nls_iso8859-1"]) spawnSync(["modprobe", m]);
    dir = mkdtempSync(join(tmpdir(), "mi-fat-"));
    removable = join(dir, "media");
    img = join(dir, "stick.img");
    run(["mkfs.fat", "-C", "-i", "1a2b3c4d", "-n", "STICK", img, "8192"]);
    const staging = join(dir, "staging");
    mkdirSync(staging);
    run(["mount", "-t", "vfat", "-o", "loop", img, staging]);
    put(join(staging, "MUSIC/song.mp3"), mp3({ title: "On FAT", artist: "Stick" }));
    put(join(staging, "DCIM/img.jpg"), jpeg({ width: 12, height: 9 }));
    run(["umount", staging]);
    mkdirSync(join(removable, "stick"), { recursive: true });
    mi = await miEnv({ plugins: ["msc"], removableRoot: removable, uuidDir: join(dir, "no-udev") });
  });
  afterAll(async () => {
    spawnSync(["umount", join(removable, "stick")]);
    await mi?.stop();
  });

  const msc = async () => ((await mi.call("getDeviceList")).pluginList as Json[])[0]!.deviceList as Json[];

  test("mounted: msc://<FAT serial>, its media indexed", async () => {
    run(["mount", "-t", "vfat", "-o", "loop", img, join(removable, "stick")]);
    await eventually(async () => (await msc()).some((d) => d.uri === URI && d.state === "idle" && d.audioCount === 1 && d.imageCount === 1), 45000, 100);
    const a = ((await mi.call("getAudioList", { uri: URI })).audioList as Json).results as Json[];
    expect(a[0]).toMatchObject({ uri: `${URI}/MUSIC/song.mp3`, title: "On FAT", artist: "Stick", dirty: false });
  });

  test("unmounted: unavailable, entries kept; mounted again: the same device", async () => {
    run(["umount", join(removable, "stick")]);
    await eventually(async () => (await msc()).some((d) => d.uri === URI && !d.available), 10000, 100);
    expect((await msc())[0]).toMatchObject({ uri: URI, available: false, audioCount: 1, imageCount: 1 });
    const list = (await mi.call("getAudioList", { uri: URI })).audioList as Json;
    expect((list.results as Json[])[0]!.dirty).toBe(true);
    run(["mount", "-t", "vfat", "-o", "loop", img, join(removable, "stick")]);
    await eventually(async () => (await msc()).some((d) => d.uri === URI && d.available && d.state === "idle"), 45000, 100);
    expect((await msc()).length).toBe(1);
  });
});
