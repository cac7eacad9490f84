// storage: local media directories. The configured media roots, and directories
// requestMediaScan was given outside them (kept in the database and checked again at
// every detection), each a device `storage://<absolute path>` ("storage:///srv/media").
import { basename } from "node:path";
import type { Device, DeviceInfo } from "../device";
import type { Caller } from "../../../core/service";
import { restricted } from "../rights";
import type { Plugin, PluginHost } from "./plugin";
import type { ScanResult } from "../index/scanner";

export const storageUri = (dir: string) => `storage://${dir}`;

export class StoragePlugin implements Plugin {
  readonly name = "storage" as const;
  active = false;
  detecting = false;

  constructor(private ix: PluginHost) {}

  unavailable() {
    return null;
  }

  async startDetect() {
    this.detecting = true;
    const dirs = new Set([...this.ix.cfg.mediaRoots, ...this.ix.devicesOf("storage").map((d) => d.root)]);
    for (const dir of dirs) await this.attach(dir);
  }

  /**
   * A directory becomes (or is again) a device: available when readable, then scanned
   * (the scan's promise). `owner` (a client's requestMediaScan): the device is that
   * client's, readable and scanned with its rights from now on; without it, the
   * device's owner is kept (none for the configured roots: the service's rights).
   */
  async attach(dir: string, owner?: Caller): Promise<{ dev: Device; scan: Promise<ScanResult> } | undefined> {
    const known = this.ix.devices.get(storageUri(dir));
    const rights = owner ? (restricted(owner) ? owner : undefined) : known?.owner;
    const ok = await this.ix.readable(dir, rights);
    const info: DeviceInfo = { uri: storageUri(dir), plugin: "storage", name: basename(dir) || dir, description: `Local media storage ${dir}`, root: dir };
    if (owner) info.owner = rights;
    const dev = this.ix.upsertDevice(info, ok);
    if (!ok) return undefined;
    const scan = this.ix.scan(dev);
    scan.catch(() => {});
    return { dev, scan };
  }

  stopDetect() {
    this.detecting = false;
  }

  scan(dev: Device, sub: string, recursive: boolean, abort: { aborted: boolean }, only?: (rel: string) => boolean, as?: Caller) {
    return this.ix.scanLocal(dev, sub, recursive, abort, undefined, only, as);
  }

  close() {
    this.detecting = false;
  }
}
