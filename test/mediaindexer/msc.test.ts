// The msc plugin: a filesystem image mounted on a loop device below the removable
// media root appears as msc://<filesystem UUID> with its media indexed; unmounted,
// it stays listed as unavailable with its entries (dirty); mounted again, it is the
// same device. The host kernel here has ext4 but no vfat, so the mount test uses an
// ext4 image; the FAT (and ext) superblock reading is checked on images made with
// mkfs.vfat and mkfs.ext4 without mounting them.
import { test, expect, beforeAll, afterAll, describe } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "bun";
import { miEnv, type MiEnv } from "./env";
import { mp3, jpeg, put } from "./media";
import { eventually } from "../helpers/harness";
import { uuidFromSuperblock, filesystemUuid, parseMountinfo } from "../../src/services/mediaindexer/plugins/msc";
import type { Json } from "../../src/core/errors";

const run = (cmd: string[]) => {
  const r = spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString();
};
const has = (c: string) => Bun.which(c) !== null || Bun.which(c, { PATH: "/usr/sbin:/sbin" }) !== null;

describe("superblocks and the mount table", () => {
  const dir = mkdtempSync(join(tmpdir(), "mediaindexer-fs-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test.skipIf(!has("mkfs.vfat"))("FAT: the volume serial as udev names it", () => {
    for (const [bits, size] of [["12", "4M"], ["16", "32M"], ["32", "40M"]] as const) {
      const img = join(dir, `fat${bits}.img`);
      run(["truncate", "-s", size, img]);
      run(["mkfs.vfat", "-F", bits, "-i", "1a2b3c4d", img]);
      expect(uuidFromSuperblock(readFileSync(img).subarray(0, 2048))).toBe("1A2B-3C4D");
    }
  });

  test.skipIf(!has("mkfs.ext4"))("ext4: s_uuid; by-uuid links win over the superblock", async () => {
    const img = join(dir, "ext.img");
    run(["truncate", "-s", "8M", img]);
    run(["mkfs.ext4", "-q", "-F", "-U", "0a1b2c3d-1111-2222-3333-444455556666", img]);
    expect(uuidFromSuperblock(readFileSync(img).subarray(0, 2048))).toBe("0a1b2c3d-1111-2222-3333-444455556666");
    expect(await filesystemUuid(img, join(dir, "none"))).toBe("0a1b2c3d-1111-2222-3333-444455556666");
    const links = join(dir, "by-uuid");
    mkdirSync(links);
    symlinkSync("../ext.img", join(links, "FROM-UDEV"));
    expect(await filesystemUuid(img, links)).toBe("FROM-UDEV");
    expect(uuidFromSuperblock(new Uint8Array(4096))).toBeUndefined();
  });

  test("mountinfo lines: mount point (escaped), type, source, device number", () => {
    const m = parseMountinfo("36 35 98:0 / /media/My\\040Stick rw,noatime master:1 - vfat /dev/sdb1 rw,fmask=0022\n37 35 0:5 / /proc rw - proc proc rw\n");
    expect(m).toEqual([
      { devno: "98:0", mountPoint: "/media/My Stick", fstype: "vfat", source: "/dev/sdb1" },
      { devno: "0:5", mountPoint: "/proc", fstype: "proc", source: "proc" },
    ]);
  });
});

const canMount = process.getuid?.() === 0 && has("mkfs.ext4") && (() => {
  const d = mkdtempSync(join(tmpdir(), "mediaindexer-probe-"));
  try {
    run(["truncate", "-s", "8M", join(d, "i")]);
    run(["mkfs.ext4", "-q", "-F", join(d, "i")]);
    mkdirSync(join(d, "m"));
    run(["mount", "-o", "loop", join(d, "i"), join(d, "m")]);
    run(["umount", join(d, "m")]);
    return true;
  } catch {
    return false;
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
})();

describe.skipIf(!canMount)("a loop-mounted filesystem", () => {
  const UUID = "5e1f0000-aaaa-bbbb-cccc-0123456789ab";
  const URI = `msc://${UUID}`;
  let mi: MiEnv;
  let dir: string;
  let removable: string;
  let img: string;
  const mountAt = (mp: string) => {
    mkdirSync(mp, { recursive: true });
    run(["mount", "-o", "loop", img, mp]);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "mediaindexer-msc-"));
    removable = join(dir, "media");
    mkdirSync(removable);
    img = join(dir, "stick.img");
    run(["truncate", "-s", "16M", img]);
    run(["mkfs.ext4", "-q", "-F", "-U", UUID, img]);
    // Content written through a mount elsewhere first.
    const staging = join(dir, "staging");
    mountAt(staging);
    put(join(staging, "Music/song.mp3"), mp3({ title: "From the stick", artist: "USB" }));
    put(join(staging, "DCIM/img.jpg"), jpeg({ width: 12, height: 9 }));
    run(["umount", staging]);
    mi = await miEnv({ plugins: ["storage", "msc"], removableRoot: removable, uuidDir: join(dir, "no-udev") });
  });
  afterAll(async () => {
    spawnSync(["umount", join(removable, "stick")]);
    await mi?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const mscDevices = async () => ((await mi.call("getDeviceList")).pluginList as Json[]).find((p) => p.uri === "msc")!.deviceList as Json[];

  test("mounted: an available msc device named by its UUID, its media indexed", async () => {
    expect(await mscDevices()).toEqual([]);
    mountAt(join(removable, "stick"));
    await eventually(async () => (await mscDevices()).some((d) => d.uri === URI && d.state === "idle" && d.audioCount === 1 && d.imageCount === 1), 10000, 50);
    const list = (await mi.call("getAudioList", { uri: URI })).audioList as Json;
    expect((list.results as Json[])[0]).toMatchObject({
      uri: `${URI}/Music/song.mp3`, title: "From the stick", artist: "USB", file_path: `file://${removable}/stick/Music/song.mp3`, dirty: false,
    });
    expect(((await mi.call("getImageList")).imageList as Json).count).toBe(1);
  });

  test("unmounted: unavailable, entries kept (dirty), gone from the all-devices list", async () => {
    run(["umount", join(removable, "stick")]);
    await eventually(async () => (await mscDevices()).some((d) => d.uri === URI && d.available === false), 5000, 50);
    expect((await mscDevices())[0]).toMatchObject({ uri: URI, available: false, audioCount: 1, imageCount: 1 });
    const list = (await mi.call("getAudioList", { uri: URI })).audioList as Json;
    expect(list.count).toBe(1);
    expect((list.results as Json[])[0]!.dirty).toBe(true);
    expect(((await mi.call("getAudioList")).audioList as Json).count).toBe(0);
  });

  test("mounted again elsewhere: the same device, available at its new place", async () => {
    mountAt(join(removable, "again"));
    await eventually(async () => (await mscDevices()).some((d) => d.uri === URI && d.available && d.state === "idle"), 10000, 50);
    const list = (await mi.call("getAudioList", { uri: URI })).audioList as Json;
    expect((list.results as Json[])[0]).toMatchObject({ file_path: `file://${removable}/again/Music/song.mp3`, dirty: false });
    run(["umount", join(removable, "again")]);
    await eventually(async () => (await mscDevices()).every((d) => !d.available), 5000, 50);
  });
});
