// The handler pool: application descriptors (`<dir>/<app>/appinfo.json`) read from
// the configured application directories and kept current by watching them
// (inotify through fs.watch), so an installed or removed app counts within a second.
import { existsSync, readdirSync, readFileSync, statSync, watch, type FSWatcher } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { PARSE_ONCE } from "../../../core/config";
import type { Logger } from "../../../core/log";
import { IntentFilter } from "../schemas";
import type { HandlerEntry } from "../match";

/** An application directory; apps found under a session's directory run under that session. */
export interface AppSource {
  dir: string;
  sessionId?: string;
}

/** The fields of appinfo.json the intent service reads; the rest belongs to the application manager. */
const Descriptor = z.looseObject({
  id: z.string().min(1),
  main: z.string().min(1).optional(),
  intentFilters: z.array(IntentFilter).optional(),
});

export const DESCRIPTOR = "appinfo.json";

export class HandlerRegistry {
  private entries: HandlerEntry[] = [];
  private signature = "";
  private rootWatchers = new Map<string, FSWatcher>();
  private appWatchers = new Map<string, FSWatcher>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private poll: ReturnType<typeof setInterval> | undefined;
  private stopped = false;
  /** Counts completed scans (tests wait on it). */
  generation = 0;

  constructor(
    readonly sources: AppSource[],
    private log: Logger,
    private opts: { reloadDelayMs: number; pollMs: number },
  ) {}

  get handlers(): HandlerEntry[] {
    return this.entries;
  }

  start(): void {
    this.scan();
    // Directories that do not exist yet are looked for again now and then; existing ones are watched.
    this.poll = setInterval(() => {
      if (this.sources.some((s) => !this.rootWatchers.has(s.dir) && existsSync(s.dir))) this.scan();
    }, this.opts.pollMs);
    this.poll.unref?.();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.poll);
    for (const w of [...this.rootWatchers.values(), ...this.appWatchers.values()]) w.close();
    this.rootWatchers.clear();
    this.appWatchers.clear();
  }

  /** A change was seen: rescan once the burst of events (mkdir, write, rename) is over. */
  private changed = () => {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.scan(), this.opts.reloadDelayMs);
  };

  private watchDir(map: Map<string, FSWatcher>, dir: string): void {
    if (map.has(dir)) return;
    try {
      const w = watch(dir, { persistent: false }, this.changed);
      w.on("error", () => {
        w.close();
        map.delete(dir);
        this.changed();
      });
      map.set(dir, w);
    } catch (e) {
      this.log.debug({ dir, err: e }, "cannot watch directory");
    }
  }

  private unwatchExcept(map: Map<string, FSWatcher>, keep: Set<string>): void {
    for (const [dir, w] of map) if (!keep.has(dir)) {
      w.close();
      map.delete(dir);
    }
  }

  /** Reads every descriptor again; a bad one is logged and skipped, the others stay. */
  scan(): void {
    if (this.stopped) return;
    const found: HandlerEntry[] = [];
    const seen = new Set<string>();
    const roots = new Set<string>();
    const apps = new Set<string>();
    for (const src of this.sources) {
      let names: string[];
      try {
        names = readdirSync(src.dir).sort();
      } catch {
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
        this.watchDir(this.appWatchers, dir);
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
    const r = Descriptor.safeParse(data, PARSE_ONCE);
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
