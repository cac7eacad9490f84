// Host name: read (gethostname(2)), set, and changes made by anyone noticed on the
// event source (src/ffi/uts.ts). Two ways to set it (docs/decisions/nettools.md):
// - syscall: sethostname(2), then the hostname file written atomically (a temporary
//   file in the same directory, fsync, rename); needs CAP_SYS_ADMIN and a writable
//   directory of the file;
// - hostnamed: systemd-hostnamed's SetStaticHostname and SetHostname, which do both
//   for a caller that holds neither (the packaged units: no CAP_SYS_ADMIN, /etc
//   read-only).
import { readFileSync } from "node:fs";
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

/** CAP_SYS_ADMIN (linux/capability.h): what sethostname(2) requires. */
export const CAP_SYS_ADMIN = 21;

/** Whether this process's effective capability set holds cap (/proc/self/status CapEff). */
export function hasCapability(cap: number, status = "/proc/self/status"): boolean {
  const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync(status, "utf8"));
  return m !== null && ((BigInt("0x" + m[1]) >> BigInt(cap)) & 1n) === 1n;
}

export type HostnameSetter = "syscall" | "hostnamed";

/** auto: the syscall where this process may make it, else systemd-hostnamed. */
export function chooseSetter(choice: "auto" | HostnameSetter): HostnameSetter {
  if (choice !== "auto") return choice;
  try {
    return hasCapability(CAP_SYS_ADMIN) ? "syscall" : "hostnamed";
  } catch {
    return "syscall";
  }
}

/** The raw D-Bus call systemd-hostnamed is reached through (ctx.peers.callRaw). */
export type RawCall = (m: { destination: string; path: string; interface: string; member: string; signature: string; body: unknown[] }) => Promise<unknown>;

const HOSTNAME1 = { destination: "org.freedesktop.hostname1", path: "/org/freedesktop/hostname1", interface: "org.freedesktop.hostname1" };

/** D-Bus errors of a refused caller: polkit said no, or would have to ask someone. */
const REFUSED = /AccessDenied|InteractiveAuthorizationRequired|NotAuthorized|PermissionDenied/;

/**
 * Through systemd-hostnamed (interactive false): SetStaticHostname saves the name to
 * its file (/etc/hostname) and SetHostname sets the kernel's. A refused caller, or a
 * failed SetHostname, is "syscall"; another failure to save is "file".
 */
export async function setHostnameViaHostnamed(name: string, call: RawCall, onError: (what: string, e: unknown) => void): Promise<SetResult> {
  try {
    await call({ ...HOSTNAME1, member: "SetStaticHostname", signature: "sb", body: [name, false] });
  } catch (e) {
    onError("hostnamed SetStaticHostname", e);
    return REFUSED.test(String((e as { name?: string }).name ?? "") + " " + String((e as Error).message ?? e)) ? "syscall" : "file";
  }
  try {
    await call({ ...HOSTNAME1, member: "SetHostname", signature: "sb", body: [name, false] });
  } catch (e) {
    onError("hostnamed SetHostname", e);
    return "syscall";
  }
  return "ok";
}

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
