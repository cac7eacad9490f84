// Host name: read (gethostname(2)), set (sethostname(2), then the hostname file
// written atomically: a temporary file in the same directory, fsync, rename), and
// changes made by anyone noticed on the event source (src/ffi/uts.ts).
import { open, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { getHostname, setHostname, watchHostname, HOST_NAME_MAX } from "../../ffi/uts";

/** RFC 1123 host name: dot-separated labels of letters, digits and hyphens (not at either end), 1-63 each, 64 bytes at most. */
export function validHostname(name: string): boolean {
  if (name.length === 0 || Buffer.byteLength(name) > HOST_NAME_MAX) return false;
  return name.split(".").every((l) => /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(l));
}

export { getHostname };

/** Writes text to path through a temporary file and a rename, so readers see the old or the new file, never a part. */
export async function writeAtomically(path: string, text: string): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${Date.now()}.tmp`);
  let mode = 0o644;
  try {
    mode = (await stat(path)).mode & 0o7777;
  } catch {}
  const f = await open(tmp, "wx", mode);
  try {
    await f.writeFile(text);
    await f.sync();
  } catch (e) {
    await f.close().catch(() => {});
    await rm(tmp, { force: true });
    throw e;
  }
  await f.close();
  try {
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}

export type SetResult = "ok" | "syscall" | "file";

/**
 * Sets the kernel's name, then saves it; when the file cannot be written the kernel
 * gets its previous name back, so the two never disagree because of this call.
 */
export async function setSystemHostname(name: string, file: string, onError: (what: string, e: unknown) => void): Promise<SetResult> {
  const previous = getHostname();
  try {
    setHostname(name);
  } catch (e) {
    onError("sethostname", e);
    return "syscall";
  }
  try {
    await writeAtomically(file, `${name}\n`);
  } catch (e) {
    onError(`writing ${file}`, e);
    try {
      setHostname(previous);
    } catch (e2) {
      onError("restoring the previous host name", e2);
    }
    return "file";
  }
  return "ok";
}

/**
 * Calls onChange(name) whenever the kernel's host name changes: through the proc
 * file's change notification, or by polling every pollMs when that is not
 * available. Returns the stop function.
 */
export function followHostname(onChange: (name: string) => void, opts: { pollMs?: number; onError?: (e: unknown) => void } = {}): () => void {
  let last = getHostname();
  const check = () => {
    let now: string;
    try {
      now = getHostname();
    } catch (e) {
      opts.onError?.(e);
      return;
    }
    if (now !== last) {
      last = now;
      onChange(now);
    }
  };
  try {
    const w = watchHostname(check);
    return () => w.close();
  } catch (e) {
    opts.onError?.(e);
    const t = setInterval(check, opts.pollMs ?? 2000);
    t.unref();
    return () => clearInterval(t);
  }
}
