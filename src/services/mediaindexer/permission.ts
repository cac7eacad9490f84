// getMediaDbPermission: what "read access to the media database" means on a D-Bus
// system (docs/services/mediaindexer.md, "Permission model"). The database is an
// SQLite file in WAL mode in a directory of its own, private to the service's user.
// A grant gives the uid that owns the named service's bus connection read access to
// that directory and its files with POSIX ACL entries (a default entry too, so the
// -wal and -shm files SQLite recreates inherit it). The reader opens the database
// read-only (`file:...?mode=ro`) and sees every commit; it cannot write, and other
// users still cannot read it.
import { dirname } from "node:path";
import { existsSync, readFileSync, statSync } from "node:fs";
import { grantUser, ACCESS, DEFAULT } from "../../ffi/acl";

export interface GrantOptions {
  database: string;
  /** The highest directory the grant may add search (x) permission to. */
  stateDir: string;
}

const R = 4, X = 1;

/** Adds read access for uid to the database (ACL entries); nothing to do for the service's own uid or root. */
export function grantRead(uid: number, o: GrantOptions): "granted" | "already" {
  const me = process.getuid?.() ?? 0;
  if (uid === 0 || uid === me) return "already";
  const dbDir = dirname(o.database);
  // Search permission on the directories above, as far as they are the service's own.
  for (let d = dirname(dbDir); d.length >= o.stateDir.length && d !== "/"; d = dirname(d)) {
    try {
      if (statSync(d).uid !== me) break;
    } catch {
      break;
    }
    grantUser(d, uid, X);
  }
  grantUser(dbDir, uid, R | X);
  grantUser(dbDir, uid, R, DEFAULT);
  for (const f of [o.database, `${o.database}-wal`, `${o.database}-shm`]) if (existsSync(f)) grantUser(f, uid, R, ACCESS);
  return "granted";
}

/** A user name's uid from /etc/passwd (or a number as it is). */
export function uidOfUser(name: string, file = "/etc/passwd"): number | undefined {
  if (/^\d+$/.test(name)) return Number(name);
  try {
    for (const line of readFileSync(file, "utf8").split("\n")) {
      const [n, , uid] = line.split(":");
      if (n === name && uid !== undefined && /^\d+$/.test(uid)) return Number(uid);
    }
  } catch {}
  return undefined;
}

/** A bus name in the D-Bus sense (well-known with dots, or unique ":1.42"). */
export const isBusName = (s: string) => s.startsWith(":") || /^[A-Za-z_-][\w-]*(\.[A-Za-z_-][\w-]*)+$/.test(s);
