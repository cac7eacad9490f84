// Authorization as data: each method declares who may call it (MethodSpec.access,
// overridable per instance from configuration), and dispatch checks it once before
// the handler, the way hostnamed makes one authorization call at the top of each
// privileged handler. The layer's D-Bus policy says the same where policy can.
import { readFileSync, statSync } from "node:fs";
import type { Caller } from "./service";

export type AccessRule =
  /** Anyone who can reach the service (the default). */
  | "any"
  /** uid 0 only. */
  | "root"
  /** Root, or a member (primary or supplementary) of one of the named groups. */
  | { groups: string[] }
  /** A decision on the caller and the validated request (e.g. an appId list). */
  | { test: (caller: Caller, request: any) => boolean | Promise<boolean>; describe: string };

/** Root or members of the groups; "*" among them (a board's widening) means any caller. */
export const group = (...groups: string[]): AccessRule => (groups.includes("*") ? "any" : { groups });

export function describeRule(rule: AccessRule | undefined): string {
  if (!rule || rule === "any") return "any caller";
  if (rule === "root") return "root";
  if ("groups" in rule) return `root or group ${rule.groups.join(" or ")}`;
  return rule.describe;
}

/** Whether the caller may: decided at once, or a promise when the rule's test returns one. */
export function allowed(rule: AccessRule | undefined, caller: Caller, request: unknown): boolean | Promise<boolean> {
  if (!rule || rule === "any") return true;
  if (rule === "root") return caller.uid === 0;
  if ("groups" in rule) {
    if (caller.uid === 0) return true;
    const gids = callerGroups(caller);
    return rule.groups.some((g) => {
      const gid = groupId(g);
      return gid !== undefined && gids.includes(gid);
    });
  }
  return rule.test(caller, request);
}

/** The caller's gids: from the bus daemon when it said, else the process's status. */
export function callerGroups(caller: Caller): number[] {
  if (caller.gids) return caller.gids;
  if (caller.pid <= 0) return [];
  try {
    const status = readFileSync(`/proc/${caller.pid}/status`, "utf8");
    const gid = /^Gid:\s+(\d+)/m.exec(status)?.[1];
    const groups = /^Groups:\s*(.*)$/m.exec(status)?.[1] ?? "";
    const out = groups.split(/\s+/).filter(Boolean).map(Number);
    if (gid !== undefined) out.push(Number(gid));
    return out;
  } catch {
    return [];
  }
}

let groupCache: { key: string; byName: Map<string, number> } | undefined;

/** A group's gid from /etc/group (re-read when the file changes). */
export function groupId(name: string, file = process.env.DEVSERVICES_GROUP_FILE ?? "/etc/group"): number | undefined {
  if (/^\d+$/.test(name)) return Number(name);
  try {
    // The file (its path, and which file and version is there now: a replaced file is a new inode).
    const st = statSync(file);
    const key = `${file}\0${st.ino}\0${st.size}\0${st.mtimeMs}`;
    if (!groupCache || groupCache.key !== key) {
      const byName = new Map<string, number>();
      for (const line of readFileSync(file, "utf8").split("\n")) {
        const [n, , gid] = line.split(":");
        if (n && gid !== undefined && /^\d+$/.test(gid)) byName.set(n, Number(gid));
      }
      groupCache = { key, byName };
    }
    return groupCache.byName.get(name);
  } catch {
    return undefined;
  }
}

/**
 * Whose rights a caller's file operations take: its uid, its primary group (the
 * fsgid of its process, so what it creates gets the group its own files get) and its
 * groups. Without a readable process (gone), the first group the bus reported.
 */
export function identityOf(caller: Caller): { uid: number; gid: number; groups: number[] } {
  const groups = callerGroups(caller);
  let gid: number | undefined;
  if (caller.pid > 0) {
    try {
      const status = readFileSync(`/proc/${caller.pid}/status`, "utf8");
      const uids = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(status);
      const gids = /^Gid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(status);
      // The pid may have been reused by another user's process: trust it only for the same uid.
      if (uids && gids && Number(uids[1]) === caller.uid) gid = Number(gids[4]);
    } catch {}
  }
  return { uid: caller.uid, gid: gid ?? groups[0] ?? caller.uid, groups: [...new Set(groups)].sort((a, b) => a - b) };
}
