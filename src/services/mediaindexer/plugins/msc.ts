// msc: USB mass storage (and any block-device filesystem) mounted below the
// removable media root. Detection watches the mount table (/proc/self/mountinfo:
// the kernel marks it with POLLPRI on every mount and unmount; the fd sits on the
// platform's event source). A new mount of a block device below the root becomes
// the device msc://<filesystem UUID> (from udev's /dev/disk/by-uuid links, else read
// from the FAT or ext superblock) and is indexed; when it goes away the device is
// unavailable and its entries stay (dirty) until it is mounted again.
import { readFileSync } from "node:fs";
import { open, readdir, readlink, realpath, stat } from "node:fs/promises";
import { basename, resolve as resolvePath } from "node:path";
import { openFile, closeFd, O_RDONLY, O_NONBLOCK, O_CLOEXEC } from "../../../ffi/libc";
import { watch, type Watch } from "../../../ffi/loop";
import type { Device } from "../device";
import type { Plugin, PluginHost } from "./plugin";
import type { Caller } from "../../../core/service";

export interface Mount {
  mountPoint: string;
  fstype: string;
  source: string;
  /** major:minor of the filesystem's device. */
  devno: string;
}

/** Octal escapes of mountinfo fields (\040 space, \011 tab, \012 newline, \134 backslash). */
const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));

/** The mounts of a mountinfo text (proc(5)). */
export function parseMountinfo(text: string): Mount[] {
  const out: Mount[] = [];
  for (const line of text.split("\n")) {
    if (!line) continue;
    const f = line.split(" ");
    const sep = f.indexOf("-", 6);
    if (sep < 0 || f.length < sep + 3) continue;
    out.push({ devno: f[2]!, mountPoint: unescape(f[4]!), fstype: f[sep + 1]!, source: unescape(f[sep + 2]!) });
  }
  return out;
}

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

/**
 * The filesystem UUID in the form udev's by-uuid links use, read from the superblock:
 * FAT12/16/32 and exFAT volume serial ("1234-ABCD"), ext2/3/4 s_uuid (RFC 4122 form).
 */
export function uuidFromSuperblock(b: Uint8Array): string | undefined {
  if (b.length >= 512 && b[510] === 0x55 && b[511] === 0xaa) {
    const serial = (o: number) => {
      const s = hex(b.subarray(o, o + 4).reverse()).toUpperCase();
      return `${s.slice(0, 4)}-${s.slice(4)}`;
    };
    const ascii = (o: number, n: number) => Buffer.from(b.subarray(o, o + n)).toString("latin1");
    if (ascii(3, 8) === "EXFAT   ") return serial(100);
    if (ascii(82, 8).startsWith("FAT32") && b[66] === 0x29) return serial(67);
    if (b[38] === 0x29 && ascii(54, 8).startsWith("FAT")) return serial(39);
  }
  // ext2/3/4: superblock at 1024, s_magic 0xEF53 at +0x38, s_uuid at +0x68.
  if (b.length >= 1024 + 0x78 && b[1024 + 0x38] === 0x53 && b[1024 + 0x39] === 0xef) {
    const u = hex(b.subarray(1024 + 0x68, 1024 + 0x78));
    if (/^0+$/.test(u)) return undefined;
    return `${u.slice(0, 8)}-${u.slice(8, 12)}-${u.slice(12, 16)}-${u.slice(16, 20)}-${u.slice(20)}`;
  }
  return undefined;
}

/** A device's filesystem UUID: udev's link pointing at it, else its superblock. */
export async function filesystemUuid(source: string, uuidDir: string): Promise<string | undefined> {
  let real: string;
  try {
    real = await realpath(source);
  } catch {
    return undefined;
  }
  try {
    for (const name of await readdir(uuidDir)) {
      try {
        if (resolvePath(uuidDir, await readlink(`${uuidDir}/${name}`)) === real) return name;
      } catch {}
    }
  } catch {}
  try {
    const fh = await open(real, "r");
    try {
      const buf = Buffer.alloc(2048);
      const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
      return uuidFromSuperblock(buf.subarray(0, bytesRead));
    } finally {
      await fh.close();
    }
  } catch {
    return undefined;
  }
}

export class MscPlugin implements Plugin {
  readonly name = "msc" as const;
  active = false;
  detecting = false;
  private fd = -1;
  private w?: Watch;
  /** Mount point -> the device mounted there. */
  private mounted = new Map<string, { uri: string; devno: string }>();
  /** Devices (by uri) with the st_dev of their mount, for the scan's guard. */
  private stDev = new Map<string, number>();
  private busy: Promise<void> = Promise.resolve();

  constructor(private ix: PluginHost) {}

  unavailable() {
    return this.ix.cfg.removableRoot ? null : "no removable media root configured";
  }

  async startDetect() {
    if (this.detecting) return;
    const why = this.unavailable();
    if (why) throw new Error(why);
    this.detecting = true;
    this.fd = openFile(this.ix.cfg.mountinfo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    this.w = watch(this.fd, { priority: () => this.changed() }, { readable: false, ref: false });
    this.changed();
    await this.busy;
  }

  /** The mount table changed (or detection started): mounts appeared or went away. */
  private changed() {
    this.busy = this.busy.then(() => this.reconcile()).catch((e) => this.ix.log.warn({ err: (e as Error).message }, "msc: mount table not read"));
  }

  private async reconcile() {
    if (!this.detecting) return;
    const root = this.ix.cfg.removableRoot!;
    // procfs: the kernel builds the text on read, without waiting on a disk.
    const mounts = parseMountinfo(readFileSync(this.ix.cfg.mountinfo, "utf8")).filter(
      (m) => m.mountPoint.startsWith(root === "/" ? "/" : `${root}/`) && m.source.startsWith("/dev/"),
    );
    // The last mount on a mount point is the visible one.
    const now = new Map<string, Mount>();
    for (const m of mounts) now.set(m.mountPoint, m);
    for (const [mp, d] of this.mounted) {
      if (now.get(mp)?.devno === d.devno) continue;
      this.mounted.delete(mp);
      this.ix.log.info({ device: d.uri, mountPoint: mp }, "msc: device removed");
      this.ix.setUnavailable(d.uri);
    }
    for (const [mp, m] of now) {
      if (this.mounted.has(mp)) continue;
      const uuid = (await filesystemUuid(m.source, this.ix.cfg.uuidDir)) ?? `dev-${m.devno.replace(":", "-")}`;
      const uri = `msc://${uuid}`;
      let st: number;
      try {
        st = (await stat(mp)).dev;
      } catch {
        continue;
      }
      this.mounted.set(mp, { uri, devno: m.devno });
      this.stDev.set(uri, st);
      this.ix.log.info({ device: uri, mountPoint: mp, source: m.source, fstype: m.fstype }, "msc: device attached");
      const dev = this.ix.upsertDevice(
        { uri, plugin: "msc", name: basename(mp), description: `Mass storage ${m.source} (${m.fstype}) at ${mp}`, root: mp },
        true,
      );
      void this.ix.scan(dev).catch(() => {});
    }
  }

  stopDetect() {
    this.detecting = false;
    this.w?.close();
    this.w = undefined;
    if (this.fd >= 0) closeFd(this.fd);
    this.fd = -1;
  }

  scan(dev: Device, sub: string, recursive: boolean, abort: { aborted: boolean }, only?: (rel: string) => boolean, as?: Caller) {
    // Before removing entries the scan checks the filesystem is still the one mounted
    // there: an unmount noticed late must not read as "every file deleted".
    const want = this.stDev.get(dev.uri);
    const guard = async () => {
      try {
        return want !== undefined && (await stat(dev.root)).dev === want;
      } catch {
        return false;
      }
    };
    return this.ix.scanLocal(dev, sub, recursive, abort, guard, only, as);
  }

  close() {
    this.stopDetect();
  }
}
