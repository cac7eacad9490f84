// Watching local devices (storage, msc) with inotify: every directory of an available
// device is watched (a directory watch of src/ffi/inotify.ts, on the process's one
// shared inotify instance and the platform's event source); a file
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
import { SysError } from "../../ffi/libc";
import type { Device } from "./device";
import type { Indexer } from "./indexer";
import { mediaType } from "./index/kinds";

/** A directory's entries written, created, deleted, moved in or out; the directory itself deleted or moved. */
const DIR_MASK = ino.DIR_CHANGES;
/** How long events of a directory settle before it is scanned. */
const SETTLE_MS = 150;

export class Watcher {
  /** Device uri -> directory (relative) -> its watch. */
  private byDev = new Map<string, Map<string, ino.DirWatch>>();
  /** Watches set now, all devices together. */
  private count = 0;
  /** A queue overflow is told to every watch: the devices are queued for a rescan once per settle. */
  private overflowed = false;
  private pending = new Map<string, { dev: string; rel: string; recursive: boolean }>();
  private timer?: ReturnType<typeof setTimeout>;
  private closed = false;
  /** Devices whose tree is not watched entirely: the periodic rescan covers them. */
  readonly partial = new Set<string>();

  /** The kernel has no inotify instance for the process (no inotify, or the user's instances used up): nothing is watched. */
  private unavailable = false;

  constructor(private ix: Indexer, private log: Logger, private maxWatches: number) {}

  /** Watches set now, all devices together (at most maxWatches). */
  get watches(): number {
    return this.count;
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

  private async addTree(dev: Device, rel: string) {
    if (this.unavailable) {
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
      } else if (this.count >= this.maxWatches) {
        this.markPartial(dev.uri);
        this.log.warn({ device: dev.uri, dir: abs, maxWatches: this.maxWatches }, "inotify watch bound (maxWatches) reached; the directories not watched are covered by periodic rescans");
        return;
      } else
        try {
          this.watch(dirs, dev.uri, r, abs);
        } catch (e) {
          this.markPartial(dev.uri);
          if (e instanceof SysError && e.call === "inotify_init1") {
            this.unavailable = true;
            this.log.warn({ err: e.message }, "inotify unavailable; periodic rescans only");
            return;
          }
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

  /** One directory's watch (throws SysError when the kernel refuses it). */
  private watch(dirs: Map<string, ino.DirWatch>, uri: string, rel: string, abs: string) {
    const at = { dev: uri, rel };
    let w: ino.DirWatch | undefined;
    w = ino.watchDirectory(abs, (ev) => {
      // The kernel ended the watch (the directory went, or its filesystem): it is no longer counted.
      if (ev.mask & ino.IN_IGNORED) return void (w && this.forget(dirs, rel, w));
      this.onEvent(at, ev);
    }, { mask: DIR_MASK });
    dirs.set(rel, w);
    this.count++;
  }

  private forget(dirs: Map<string, ino.DirWatch>, rel: string, w: ino.DirWatch) {
    if (dirs.get(rel) !== w) return;
    dirs.delete(rel);
    this.count--;
  }

  private unfollow(uri: string, under?: string) {
    const dirs = this.byDev.get(uri);
    if (!dirs) return;
    for (const [rel, w] of dirs) {
      if (under !== undefined && rel !== under && !rel.startsWith(`${under}/`)) continue;
      this.forget(dirs, rel, w);
      w.close();
    }
    if (under === undefined) this.byDev.delete(uri);
  }

  private onEvent(at: { dev: string; rel: string }, ev: ino.InotifyEvent) {
    if (ev.mask & ino.IN_Q_OVERFLOW) {
      // Every watch hears it: the devices are queued once.
      if (this.overflowed) return;
      this.overflowed = true;
      this.log.warn("inotify queue overflow; rescanning every watched device");
      for (const uri of this.byDev.keys()) this.queue(uri, "", true);
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
    this.overflowed = false;
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
    for (const dirs of this.byDev.values()) for (const w of dirs.values()) w.close();
    this.byDev.clear();
    this.count = 0;
  }
}
