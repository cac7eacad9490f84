// Watching local devices (storage, msc) with inotify: every directory of an available
// device is watched (one inotify instance on the platform's event source); a file
// written, moved in, moved away or deleted queues a scan of its directory only, a
// directory created or moved in is watched and scanned, one deleted or moved away
// has its entries removed. Events settle for a moment first, so a copy of many files
// is one scan per directory. The watches of all devices together are bounded
// (maxWatches, below the kernel's fs.inotify.max_user_watches); where a tree cannot be
// watched entirely (that bound, the kernel's, a filesystem without inotify) the device
// is marked partial, the device list says so (monitor), and the periodic rescan
// (fallbackRescanInterval) compares the directories not watched; an event queue
// overflow rescans every device.
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../../core/log";
import * as ino from "../../ffi/inotify";
import { ENOSPC } from "../../ffi/errno";
import type { Device } from "./device";
import type { Indexer } from "./indexer";
import { mediaType } from "./index/kinds";

const DIR_MASK =
  ino.IN_CLOSE_WRITE | ino.IN_CREATE | ino.IN_DELETE | ino.IN_MOVED_FROM | ino.IN_MOVED_TO |
  ino.IN_DELETE_SELF | ino.IN_MOVE_SELF | ino.IN_ONLYDIR | ino.IN_EXCL_UNLINK;
/** How long events of a directory settle before it is scanned. */
const SETTLE_MS = 150;

interface Watched {
  dev: string;
  rel: string;
}

export class Watcher {
  private ino?: ino.Inotify;
  private byWd = new Map<number, Watched>();
  /** Device uri -> directory (relative) -> wd. */
  private byDev = new Map<string, Map<string, number>>();
  private pending = new Map<string, { dev: string; rel: string; recursive: boolean }>();
  private timer?: ReturnType<typeof setTimeout>;
  private closed = false;
  /** Devices whose tree is not watched entirely: the periodic rescan covers them. */
  readonly partial = new Set<string>();

  /** The inotify instance could not be made (no inotify): nothing is watched. */
  private unavailable = false;

  constructor(private ix: Indexer, private log: Logger, private maxWatches: number) {}

  /** Watches set now, all devices together (at most maxWatches). */
  get watches(): number {
    return this.byWd.size;
  }

  /** A local device became available (watch its tree) or went away (drop its watches). */
  follow(dev: Device, available: boolean) {
    if (this.closed) return;
    if (!available) {
      this.partial.delete(dev.uri);
      return this.unfollow(dev.uri);
    }
    this.partial.delete(dev.uri);
    void this.addTree(dev, "").catch((e) => this.log.warn({ device: dev.uri, err: (e as Error).message }, "watching failed"));
  }

  /** Whether a device's whole tree is watched. */
  watching(uri: string): boolean {
    return this.byDev.has(uri) && !this.partial.has(uri);
  }

  /** Whether a directory (relative to the device root) has its watch. */
  watched(uri: string, rel: string): boolean {
    return this.byDev.get(uri)?.has(rel) ?? false;
  }

  /** How much of a device inotify covers: all of it, some directories, or none. */
  coverage(uri: string): "all" | "some" | "none" {
    if (this.unavailable || !this.byDev.get(uri)?.size) return this.partial.has(uri) || this.unavailable ? "none" : "all";
    return this.partial.has(uri) ? "some" : "all";
  }

  private markPartial(uri: string) {
    if (this.partial.has(uri)) return;
    this.partial.add(uri);
    this.ix.events.devicesChanged(true);
  }

  private ensure(): boolean {
    if (this.ino) return true;
    try {
      this.ino = new ino.Inotify((events) => {
        for (const ev of events) this.onEvent(ev);
      }, { onError: (e) => this.log.warn({ err: (e as Error).message }, "inotify read failed") });
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, "inotify unavailable; periodic rescans only");
      this.unavailable = true;
      return false;
    }
    return true;
  }

  private async addTree(dev: Device, rel: string) {
    if (!this.ensure()) {
      this.markPartial(dev.uri);
      return;
    }
    let dirs = this.byDev.get(dev.uri);
    if (!dirs) this.byDev.set(dev.uri, (dirs = new Map()));
    const otherRoots = new Set(this.ix.localDevices().filter((d) => d !== dev).map((d) => d.root));
    const stack = [rel];
    while (stack.length) {
      if (!dev.available || this.closed) return;
      const r = stack.pop()!;
      const abs = r ? join(dev.root, r) : dev.root;
      if (r && otherRoots.has(abs)) continue;
      // The watch first, then the listing: nothing created in between is missed.
      if (dirs.has(r)) {
        // Watched already (a directory moved in again): its subdirectories are listed below.
      } else if (this.byWd.size >= this.maxWatches) {
        this.markPartial(dev.uri);
        this.log.warn({ device: dev.uri, dir: abs, maxWatches: this.maxWatches }, "inotify watch bound (maxWatches) reached; the directories not watched are covered by periodic rescans");
        return;
      } else
        try {
          const wd = this.ino!.add(abs, DIR_MASK);
          this.byWd.set(wd, { dev: dev.uri, rel: r });
          dirs.set(r, wd);
        } catch (e) {
          this.markPartial(dev.uri);
          if ((e as { errno?: number }).errno === ENOSPC) {
            this.log.warn({ device: dev.uri, dir: abs }, "inotify watch limit of the system reached; the directories not watched are covered by periodic rescans");
            return;
          }
          continue;
        }
      let ents: import("node:fs").Dirent[];
      try {
        ents = await readdir(abs, { withFileTypes: true });
      } catch {
        continue;
      }
      for (const e of ents) if (e.isDirectory() && !e.name.startsWith(".")) stack.push(r ? `${r}/${e.name}` : e.name);
    }
  }

  private unfollow(uri: string, under?: string) {
    const dirs = this.byDev.get(uri);
    if (!dirs) return;
    for (const [rel, wd] of dirs) {
      if (under !== undefined && rel !== under && !rel.startsWith(`${under}/`)) continue;
      dirs.delete(rel);
      this.byWd.delete(wd);
      this.ino?.remove(wd);
    }
    if (under === undefined) this.byDev.delete(uri);
  }

  private onEvent(ev: ino.InotifyEvent) {
    if (ev.mask & ino.IN_Q_OVERFLOW) {
      this.log.warn("inotify queue overflow; rescanning every watched device");
      for (const uri of this.byDev.keys()) this.queue(uri, "", true);
      return;
    }
    const at = this.byWd.get(ev.wd);
    if (!at) return;
    if (ev.mask & ino.IN_IGNORED) {
      this.byWd.delete(ev.wd);
      const dirs = this.byDev.get(at.dev);
      if (dirs?.get(at.rel) === ev.wd) dirs.delete(at.rel);
      return;
    }
    if (ev.mask & (ino.IN_DELETE_SELF | ino.IN_MOVE_SELF)) {
      // The device's own directory went away: unavailable, entries kept. A subdirectory: its parent's event handles it.
      if (at.rel === "") {
        this.unfollow(at.dev);
        this.ix.setUnavailable(at.dev);
      }
      return;
    }
    if (!ev.name || ev.name.startsWith(".")) return;
    const child = at.rel ? `${at.rel}/${ev.name}` : ev.name;
    if (ev.mask & ino.IN_ISDIR) {
      const dev = this.ix.devices.get(at.dev);
      if (!dev?.available) return;
      if (ev.mask & (ino.IN_CREATE | ino.IN_MOVED_TO)) {
        void this.addTree(dev, child).catch(() => {});
        this.queue(at.dev, child, true);
      } else if (ev.mask & (ino.IN_DELETE | ino.IN_MOVED_FROM)) {
        this.unfollow(at.dev, child);
        this.queue(at.dev, child, true);
      }
      return;
    }
    if (!(ev.mask & (ino.IN_CLOSE_WRITE | ino.IN_MOVED_TO | ino.IN_DELETE | ino.IN_MOVED_FROM))) return;
    if (!mediaType(ev.name)) return;
    this.queue(at.dev, at.rel, false);
  }

  private queue(dev: string, rel: string, recursive: boolean) {
    const key = `${dev}\0${rel}`;
    const had = this.pending.get(key);
    this.pending.set(key, { dev, rel, recursive: recursive || !!had?.recursive });
    this.timer ??= setTimeout(() => this.flush(), SETTLE_MS);
  }

  private flush() {
    this.timer = undefined;
    const jobs = [...this.pending.values()];
    this.pending.clear();
    for (const j of jobs) {
      const dev = this.ix.devices.get(j.dev);
      if (!dev?.available) continue;
      void this.ix.scan(dev, j.rel, j.recursive).catch(() => {});
    }
  }

  close() {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.ino?.close();
    this.ino = undefined;
    this.byWd.clear();
    this.byDev.clear();
  }
}
