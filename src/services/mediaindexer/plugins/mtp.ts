// mtp: media players and phones over MTP, through libmtp (loaded with bun:ffi on the
// indexer's background thread, since USB enumeration takes milliseconds). Without
// the library the plugin is unavailable, and getPlugin and runDetect say so. With it,
// detection (at runDetect and every mtpDetectInterval seconds) lists the attached MTP
// devices as mtp://<vendor id>:<product id>@<bus>.<device number>, unavailable once
// unplugged. Reading a device's file listing is not part of this plugin yet: its
// devices are listed with no entries (docs/decisions/mediaindexer.md).
import { existsSync } from "node:fs";
import { isAbsolute } from "node:path";
import type { Device } from "../device";
import type { Plugin, PluginHost } from "./plugin";
import type { ScanResult } from "../index/scanner";
import type { RawDevice } from "../../../ffi/libmtp";

const LIB_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/arm-linux-gnueabihf", "/usr/lib64", "/usr/lib", "/lib"];
const hex4 = (n: number) => n.toString(16).padStart(4, "0");
export const mtpUri = (d: RawDevice) => `mtp://${hex4(d.vendorId)}:${hex4(d.productId)}@${d.busLocation}.${d.devnum}`;

export class MtpPlugin implements Plugin {
  readonly name = "mtp" as const;
  active = false;
  detecting = false;
  private failed?: string;
  private timer?: ReturnType<typeof setInterval>;

  constructor(private ix: PluginHost) {}

  unavailable() {
    if (this.failed) return this.failed;
    const lib = this.ix.cfg.mtpLibrary;
    const found = isAbsolute(lib) ? existsSync(lib) : LIB_DIRS.some((d) => existsSync(`${d}/${lib}`));
    return found ? null : `libmtp (${lib}) is not installed`;
  }

  async startDetect() {
    const why = this.unavailable();
    if (why) throw new Error(why);
    if (!this.detecting && this.ix.cfg.mtpDetectInterval > 0) {
      this.timer = setInterval(() => void this.detect().catch(() => {}), this.ix.cfg.mtpDetectInterval * 1000);
      this.timer.unref?.();
    }
    this.detecting = true;
    await this.detect();
  }

  private async detect() {
    let raw: RawDevice[];
    try {
      raw = await this.ix.scanner.extractor.mtpDetect(this.ix.cfg.mtpLibrary);
    } catch (e) {
      this.failed = `libmtp: ${(e as Error).message}`;
      this.stopDetect();
      throw new Error(this.failed);
    }
    const now = new Set<string>();
    for (const d of raw) {
      const uri = mtpUri(d);
      now.add(uri);
      if (this.ix.devices.get(uri)?.available) continue;
      const name = [d.vendor, d.product].filter(Boolean).join(" ") || uri;
      this.ix.log.info({ device: uri, name }, "mtp: device attached");
      this.ix.upsertDevice({ uri, plugin: "mtp", name, description: `MTP device ${name} (USB bus ${d.busLocation}, device ${d.devnum})`, root: uri }, true);
    }
    for (const dev of this.ix.devicesOf("mtp")) if (dev.available && !now.has(dev.uri)) this.ix.setUnavailable(dev.uri);
  }

  stopDetect() {
    this.detecting = false;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  async scan(dev: Device): Promise<ScanResult> {
    this.ix.log.info({ device: dev.uri }, "mtp: file listings are not read; the device is listed without entries");
    return { files: 0, indexed: 0, unchanged: 0, removed: 0, failed: 0, subdirs: [], unreadableDirs: 0, peakEntries: 0, ms: 0, aborted: false };
  }

  close() {
    this.stopDetect();
  }
}
