// The handler pool: application descriptors (`<dir>/<app>/appinfo.json`) read from
// the configured application directories and kept current by watching them (the
// inotify directory watch of src/ffi/inotify.ts, on the event source), so an
// installed or removed app counts as soon as the burst of changes settles. A
// directory that does not exist yet is awaited by watching its nearest existing
// ancestor for the next component of its path.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import * as ino from "../../../ffi/inotify";
import { z } from "zod";
import { PARSE_OPTIONS } from "../../../core/config";
import type { Logger } from "../../../core/log";
import { once } from "../../../core/service";
import { IntentFilter } from "../schemas";
import type { HandlerEntry } from "../match";

/** An application directory; apps found under a session's directory run under that session. */
export interface AppSource {
  dir: string;
  sessionId?: string;
}

/** The fields of appinfo.json the intent service reads; the rest belongs to the application manager. */
const Descriptor = once(() => z.looseObject({
  id: z.string().min(1),
  main: z.string().min(1).optional(),
  intentFilters: z.array(IntentFilter()).optional(),
}));

export const DESCRIPTOR = "appinfo.json";

export class HandlerRegistry {
  private entries: HandlerEntry[] = [];
  private signature = "";
  private rootWatchers = new Map<string, ino.DirWatch>();
  private appWatchers = new Map<string, ino.DirWatch>();
  /** Existing ancestors of directories not there yet -> the names awaited in them. */
  private ancestorWatchers = new Map<string, { watch: ino.DirWatch; names: Set<string> }>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  /** Counts completed scans (tests wait on it). */
  generation = 0;

  constructor(
    readonly sources: AppSource[],
    private log: Logger,
    private opts: { reloadDelayMs: number },
  ) {}

  get handlers(): HandlerEntry[] {
    return this.entries;
  }

  start(): void {
    this.scan();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const w of [...this.rootWatchers.values(), ...this.appWatchers.values()]) w.close();
    for (const a of this.ancestorWatchers.values()) a.watch.close();
    this.rootWatchers.clear();
    this.appWatchers.clear();
    this.ancestorWatchers.clear();
  }

  /** A change was seen: rescan once the burst of events (mkdir, write, rename) is over. */
  private changed = () => {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.scan(), this.opts.reloadDelayMs);
  };

  /**
   * Watches dir (an application directory, or one application's directory: then only
   * its descriptor matters). A watch the kernel ended (the directory removed), or one
   * whose directory moved away, is dropped and the next scan looks again.
   */
  private watchDir(map: Map<string, ino.DirWatch>, dir: string, only?: string): void {
    const had = map.get(dir);
    if (had && !had.closed) return;
    try {
      const w = ino.watchDirectory(dir, (ev) => {
        if (ev.mask & (ino.IN_IGNORED | ino.IN_MOVE_SELF | ino.IN_DELETE_SELF)) {
          w.close();
          if (map.get(dir) === w) map.delete(dir);
        } else if (only !== undefined && ev.name && ev.name !== only) return;
        this.changed();
      });
      map.set(dir, w);
    } catch (e) {
      map.delete(dir);
      this.log.debug({ dir, err: e }, "cannot watch directory");
    }
  }

  private unwatchExcept(map: Map<string, ino.DirWatch>, keep: Set<string>): void {
    for (const [dir, w] of map) if (!keep.has(dir)) {
      w.close();
      map.delete(dir);
    }
  }

  /** A directory that cannot be read yet: its nearest existing ancestor is watched for the next name of its path. */
  private awaitDir(dir: string, wanted: Map<string, Set<string>>): void {
    let next = basename(resolve(dir));
    let anc = dirname(resolve(dir));
    while (!isDirectory(anc) && anc !== dirname(anc)) {
      next = basename(anc);
      anc = dirname(anc);
    }
    let names = wanted.get(anc);
    if (!names) wanted.set(anc, (names = new Set()));
    names.add(next);
  }

  private watchAncestors(wanted: Map<string, Set<string>>): void {
    for (const [anc, a] of this.ancestorWatchers) if (!wanted.has(anc) || a.watch.closed) {
      a.watch.close();
      this.ancestorWatchers.delete(anc);
    }
    for (const [anc, names] of wanted) {
      const had = this.ancestorWatchers.get(anc);
      if (had) {
        had.names = names;
        continue;
      }
      const entry = { watch: undefined as unknown as ino.DirWatch, names };
      try {
        entry.watch = ino.watchDirectory(anc, (ev) => {
          if (!ev.name || entry.names.has(ev.name)) this.changed();
        });
      } catch (e) {
        this.log.debug({ dir: anc, err: e }, "cannot watch directory");
        continue;
      }
      this.ancestorWatchers.set(anc, entry);
      // Created between the scan's look and the watch: look again.
      for (const n of names) if (existsSync(join(anc, n))) this.changed();
    }
  }

  /** Reads every descriptor again; a bad one is logged and skipped, the others stay. */
  scan(): void {
    if (this.stopped) return;
    const found: HandlerEntry[] = [];
    const seen = new Set<string>();
    const roots = new Set<string>();
    const apps = new Set<string>();
    const wanted = new Map<string, Set<string>>();
    for (const src of this.sources) {
      let names: string[];
      try {
        names = readdirSync(src.dir).sort();
      } catch {
        this.awaitDir(src.dir, wanted);
        continue;
      }
      roots.add(src.dir);
      this.watchDir(this.rootWatchers, src.dir);
      for (const app of names) {
        const dir = join(src.dir, app);
        try {
          if (!statSync(dir).isDirectory()) continue;
        } catch {
          continue;
        }
        apps.add(dir);
        this.watchDir(this.appWatchers, dir, DESCRIPTOR);
        const file = join(dir, DESCRIPTOR);
        if (!existsSync(file)) continue;
        const entry = this.read(file, dir, src.sessionId);
        if (!entry) continue;
        const key = `${entry.sessionId ?? ""}\0${entry.name}`;
        if (seen.has(key)) {
          this.log.warn({ file, app: entry.name, sessionId: entry.sessionId }, "application already installed from an earlier directory; this descriptor is ignored");
          continue;
        }
        seen.add(key);
        found.push(entry);
      }
    }
    this.unwatchExcept(this.rootWatchers, roots);
    this.unwatchExcept(this.appWatchers, apps);
    this.watchAncestors(wanted);
    const signature = JSON.stringify(found);
    if (signature !== this.signature) {
      this.signature = signature;
      this.entries = found;
      this.log.info({ handlers: found.length, dirs: [...roots] }, "handlers loaded");
    }
    this.generation++;
  }

  private read(file: string, dir: string, sessionId?: string): HandlerEntry | undefined {
    let data: unknown;
    try {
      data = JSON.parse(readFileSync(file, "utf8"));
    } catch (e) {
      this.log.error({ file, err: (e as Error).message }, "application descriptor is not valid JSON; skipped");
      return undefined;
    }
    const r = Descriptor().safeParse(data, PARSE_OPTIONS);
    if (!r.success) {
      this.log.error({ file, problem: z.prettifyError(r.error) }, "application descriptor is invalid; skipped");
      return undefined;
    }
    const entry: HandlerEntry = { name: r.data.id, intentFilters: r.data.intentFilters ?? [], dir };
    if (sessionId !== undefined) entry.sessionId = sessionId;
    if (r.data.main !== undefined) entry.main = r.data.main;
    return entry;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
