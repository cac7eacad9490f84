// Whose rights a scan has. A client's request is served with that client's rights
// (docs/decisions/mediaindexer.md, "Scans and lists with the caller's rights"): the
// scan it asks for walks as it, a device its request made keeps it as its owner (every
// later scan of that device walks as the owner), and lists answer it only entries of
// directories the kernel lets it read.
import { access, stat, constants } from "node:fs/promises";
import { identityOf } from "../../core/access";
import type { Caller, PathRefused } from "../../core/service";

/**
 * The caller's uid and groups as they are now, kept for scans that run later (after
 * it left the bus): a caller without a process, whose first group is its primary one.
 */
export function frozen(caller: Caller): Caller {
  const id = identityOf(caller);
  return { name: caller.name, uid: id.uid, pid: 0, gids: [id.gid, ...id.groups.filter((g) => g !== id.gid)] };
}

/** Root needs no restriction: the kernel lets it read everything a scan could. */
export const restricted = (caller: Caller | undefined): caller is Caller => caller !== undefined && caller.uid !== 0;

/** Scans with the same rights may be joined; "" is the service's own. */
export const rightsKey = (c: Caller | undefined) => (c ? `${c.uid}:${(c.gids ?? []).join(",")}` : "");

/** An owner as stored with its device (uid, primary group first, then the others). */
export function ownerToJson(c: Caller | undefined): string | null {
  return c ? JSON.stringify({ uid: c.uid, gids: c.gids ?? [] }) : null;
}

/** The stored owner; one that cannot be read is the overflow user (65534): never the service's own rights. */
export function ownerFromJson(s: string | null | undefined): Caller | undefined {
  if (!s) return undefined;
  const nobody: Caller = { name: "", uid: 65534, pid: 0, gids: [65534] };
  try {
    const o = JSON.parse(s) as { uid: unknown; gids: unknown };
    if (!Number.isInteger(o.uid) || (o.uid as number) < 0 || !Array.isArray(o.gids) || !o.gids.every((g) => Number.isInteger(g) && g >= 0)) return nobody;
    return { name: "", uid: o.uid as number, pid: 0, gids: o.gids as number[] };
  } catch {
    return nobody;
  }
}

/** Why a path a client named was refused, as an errno name (requestMediaScan's errno field). */
export const REFUSED_ERRNO: Record<PathRefused["reason"], string> = {
  relative: "EINVAL", traversal: "EINVAL", own: "EACCES", denied: "EACCES", symlink: "ELOOP", exists: "EEXIST",
  missing: "ENOENT", notdir: "ENOTDIR", isdir: "EISDIR", special: "ENXIO", nospace: "ENOSPC", other: "EIO",
};

/** Whether the service itself can read and search a directory. */
export async function readableDir(dir: string): Promise<boolean> {
  try {
    if (!(await stat(dir)).isDirectory()) return false;
    await access(dir, constants.R_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
