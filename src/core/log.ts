// Structured logs: pino JSON lines on stdout (the journal keeps them under systemd).
// When stdout is the journal, each line starts with its syslog priority, "<N>{...}":
// journald (SyslogLevelPrefix=yes, systemd's default) strips the prefix and stores N
// as the entry's PRIORITY, so `journalctl -p warning` filters devservices' lines.
import pino from "pino";
import { fstatSync } from "node:fs";

export type Logger = pino.Logger;

/** pino level -> syslog priority (sd-daemon(3): 2 crit, 3 err, 4 warning, 6 info, 7 debug). */
export const JOURNAL_PRIORITY: Readonly<Record<number, number>> = { 10: 7, 20: 7, 30: 6, 40: 4, 50: 3, 60: 2 };

/**
 * Whether lines written to fd go to the journal: systemd sets JOURNAL_STREAM to the
 * "device:inode" of the stream it connected to stdout/stderr (a child whose stdout
 * is redirected inherits the variable but not the stream). DEVSERVICES_LOG_PRIORITY_PREFIX
 * =1 or =0 forces the prefix on or off (another collector that parses "<N>").
 */
export function writesToJournal(fd: number | string | undefined = 1, env: Record<string, string | undefined> = process.env): boolean {
  const force = env.DEVSERVICES_LOG_PRIORITY_PREFIX;
  if (force === "1" || force === "0") return force === "1";
  if (!env.JOURNAL_STREAM || typeof fd !== "number") return false;
  const [dev, ino] = env.JOURNAL_STREAM.split(":");
  try {
    const st = fstatSync(fd, { bigint: true });
    return String(st.dev) === dev && String(st.ino) === ino;
  } catch {
    return false;
  }
}

/** Prefixes a pino line (`{"level":30,...`) with its syslog priority. */
export function withPriority(line: string): string {
  const m = /^\{"level":(\d+)/.exec(line);
  return `<${(m && JOURNAL_PRIORITY[Number(m[1])]) ?? 6}>${line}`;
}

/** Log bytes held while the reader (the journal, a pipe) is slower than the writer; past it lines are dropped and counted. */
export const LOG_BUFFER_BYTES = 4 << 20;

/** Lines dropped because the log's reader could not keep up, not told yet: the next line says how many (`droppedLines`). */
let dropped = 0;

function create(level: string, destination?: number | string): Logger {
  const journal = writesToJournal(destination ?? 1);
  // Never written synchronously: a journal or pipe that stops reading would stall the
  // event loop, and with it every service. Lines wait in a bounded buffer instead.
  const dest = pino.destination({ dest: destination ?? 1, sync: false, maxLength: LOG_BUFFER_BYTES });
  // A dropped line that was to tell earlier drops gives its count back.
  dest.on("drop", (line: string) => void (dropped += 1 + Number(/^[^{]*\{"level":\d+,"time":\d+,"pid":\d+,"droppedLines":(\d+)/.exec(String(line))?.[1] ?? 0)));
  dest.on("error", () => {});
  // pino calls flushSync after every fatal line. With a write in flight, sonic-boom's
  // flushSync writes the queued lines ahead of it (out of order); with a reader that
  // has stopped, it blocks the event loop. Lines go out in order through the queue
  // instead, and exitAfterLog waits for it. At exit, what is queued behind no write in
  // flight is written at once.
  const flushSync = dest.flushSync.bind(dest);
  dest.flushSync = () => {};
  process.once("exit", () => {
    if ((dest as { _writing?: boolean })._writing) return;
    try {
      flushSync();
    } catch {}
  });
  current = dest;
  const mixin = () => {
    if (!dropped) return {};
    const n = dropped;
    dropped = 0;
    return { droppedLines: n };
  };
  return pino({ level, base: { pid: process.pid }, mixin, ...(journal ? { hooks: { streamWrite: withPriority } } : {}) }, dest);
}

/**
 * Logs what one client can cause many times (a refusal per call) at most once per
 * interval per key: the first at once, the rest counted and told with the next line
 * for the key (`repeated`), or when the interval ends. Keys are dropped once told.
 */
export class Throttle {
  private held = new Map<string, { count: number; timer?: ReturnType<typeof setTimeout>; last: () => void }>();
  constructor(private readonly intervalMs = 10_000) {}

  /** Runs log(repeated) now, or counts it; `repeated` is how many were held back before. */
  log(key: string, log: (repeated: number) => void): void {
    const h = this.held.get(key);
    if (!h) {
      log(0);
      const entry = { count: 0, last: () => {}, timer: undefined as ReturnType<typeof setTimeout> | undefined };
      entry.timer = setTimeout(() => this.flush(key), this.intervalMs);
      entry.timer.unref?.();
      this.held.set(key, entry);
      return;
    }
    h.count++;
    h.last = () => log(h.count);
  }

  private flush(key: string) {
    const h = this.held.get(key);
    this.held.delete(key);
    if (h?.count) h.last();
  }

  /** Keys with lines held back (tests). */
  get size(): number {
    return this.held.size;
  }
}

let exiting = false;

/** The destination of the logger configureLogging made last. */
let current: ReturnType<typeof pino.destination> | undefined;

/**
 * Exits with `code` once every log line is written (waiting at most `ms` for a
 * reader that stalls). A line written just before process.exit() may still be in an
 * asynchronous write, which the exit hook's flushSync cannot see: it would come out
 * after later lines, or not at all. Exits the same way when nothing is pending.
 */
export function exitAfterLog(code: number, ms = 1000): void {
  // The first exit decided wins: what happens while the log drains (the bus connection
  // the stop closed, a late error) does not change it.
  if (exiting) return;
  exiting = true;
  process.exitCode = code;
  const dest = current as (ReturnType<typeof pino.destination> & { _writing?: boolean; _len?: number }) | undefined;
  if (!dest || (!dest._writing && !dest._len)) process.exit(code);
  const exit = () => process.exit(code);
  dest.once("drain", exit);
  dest.once("error", exit);
  setTimeout(exit, ms);
}

let root: Logger = create(process.env.DEVSERVICES_LOG_LEVEL ?? "info");

export function configureLogging(level: string, destination?: number | string): Logger {
  root = create(level, destination);
  return root;
}

export function logger(component?: string): Logger {
  return component ? root.child({ component }) : root;
}
