// Shared by the guest tests: they run only inside the virtual-board guest
// (scripts/vboard test), where scripts/vboard.d/init sets DEVSERVICES_VBOARD=1.
import { describe } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";

export const inGuest = process.env.DEVSERVICES_VBOARD === "1";

/** describe() that runs only in the guest. */
export const guest = describe.skipIf(!inGuest);

export function readText(path: string): string {
  return readFileSync(path, "utf8").trim();
}

/** The /dev node of the first device in a sysfs class whose `name` attribute matches. */
export function classDevice(cls: string, match: (name: string) => boolean): string | undefined {
  for (const dev of readdirSync(`/sys/class/${cls}`)) {
    try {
      if (match(readText(`/sys/class/${cls}/${dev}/name`))) return `/dev/${dev}`;
    } catch {}
  }
  return undefined;
}

/**
 * Collects `count` values pushed by a watch on the event source (watchEdges,
 * watchLineInfo, watchFrames...), then closes it; rejects after timeoutMs.
 */
export function collect<T>(start: (push: (v: T) => void) => { close(): void }, count: number, timeoutMs = 2000): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const got: T[] = [];
    let done = false;
    const finish = (err?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      queueMicrotask(() => w.close());
      if (err) reject(err);
      else resolve(got);
    };
    const timer = setTimeout(() => finish(new Error(`timed out after ${timeoutMs} ms with ${got.length} of ${count}: ${JSON.stringify(got, (_, v) => (typeof v === "bigint" ? String(v) : v))}`)), timeoutMs);
    const w = start((v) => {
      if (done) return;
      got.push(v);
      if (got.length >= count) finish();
    });
  });
}
