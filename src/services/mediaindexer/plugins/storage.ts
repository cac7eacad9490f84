// storage: local media directories. The configured media roots, and directories
// requestMediaScan was given outside them (kept in the database and checked again at
// every detection), each a device `storage://<absolute path>` ("storage:///srv/media").
import { access, stat, constants } from "node:fs/promises";
import { basename } from "node:path";
import type { Indexer, Device } from "../indexer";
import type { Plugin } from "./plugin";
import type { ScanResult } from "../backend/scanner";

export const storageUri = (dir: string) => `storage://${dir}`;

export class StoragePlugin implements Plugin {
  readonly name = "storage" as const;
  active = false;
  detecting = false;

  constructor(private ix: Indexer) {}

  unavailable() {
    return null;
  }

  async startDetect() {
    this.detecting = true;
    const dirs = new Set([...this.ix.cfg.mediaRoots, ...this.ix.devicesOf("storage").map((d) => d.root)]);
    for (const dir of dirs) await this.attach(dir);
  }

  /** A directory becomes (or is again) a device: available when readable, then scanned (the scan's promise). */
  async attach(dir: string): Promise<{ dev: Device; scan: Promise<ScanResult> } | undefined> {
    const ok = await readableDir(dir);
    const dev = this.ix.upsertDevice(
      { uri: storageUri(dir), plugin: "storage", name: basename(dir) || dir, description: `Local media storage ${dir}`, root: dir },
      ok,
    );
    if (!ok) return undefined;
    const scan = this.ix.scan(dev);
    scan.catch(() => {});
    return { dev, scan };
  }

  stopDetect() {
    this.detecting = false;
  }

  scan(dev: Device, sub: string, recursive: boolean, abort: { aborted: boolean }, only?: (rel: string) => boolean) {
    return this.ix.scanLocal(dev, sub, recursive, abort, undefined, only);
  }

  close() {
    this.detecting = false;
  }
}

export async function readableDir(dir: string): Promise<boolean> {
  try {
    if (!(await stat(dir)).isDirectory()) return false;
    await access(dir, constants.R_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
