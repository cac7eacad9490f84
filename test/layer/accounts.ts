// The accounts the tests need: the layer's system user and groups
// (meta-devservices/recipes-core/devservices/devservices_0.1.bb) and the groups the
// access tests name in place of them. They live in a group and a passwd file of the
// test run's own (the host's entries plus these, the groups with gids no host group
// has, the user with the uid of the host's daemon account), never in the host's
// /etc/group or /etc/passwd:
// - services look group names up in DEVSERVICES_GROUP_FILE (src/core/access.ts
//   groupId), which the test preload points at the run's group file for every process
//   the tests start;
// - callers get the groups by number (setpriv --groups), which the kernel and the bus
//   daemon report without a name;
// - a dbus-daemon that resolves the policy's user= and group= names runs in a mount
//   namespace where the run's files are bind-mounted over /etc/group and /etc/passwd
//   (withAccounts).
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

/** Callers' groups of the D-Bus policy, and the service user's own group. */
export const GROUPS = ["devservices", "devservices-net", "devservices-media", "devservices-gpio", "devservices-i2c", "devservices-spi", "devservices-uart", "devservices-power", "devservices-camera", "devservices-record", "devservices-cache", "devservices-test"] as const;
export type GroupName = (typeof GROUPS)[number];

/** Groups the access tests configure in place of the layer's. */
export const TEST_GROUPS = ["devservices-nettest", "devservices-votest", "devservices-platformtest", "devservices-camtest", "devservices-rectest"] as const;
export type TestGroupName = (typeof TEST_GROUPS)[number];

export interface Accounts {
  /** The devservices user (the uid of the host's daemon account: see STAND_IN). */
  uid: number;
  /** Its primary group (devservices). */
  gid: number;
  gids: Record<GroupName | TestGroupName, number>;
  /** The run's group and passwd files. */
  groupFile: string;
  passwdFile: string;
}

const FIRST_ID = 20000;
/** The host account whose uid the tests' devservices user has (Debian's base system has it). */
const STAND_IN = "daemon";

/** The run's account files, made once per test process (removed by removeTestAccounts). */
let made: Accounts | undefined;

function ids(file: string, field: number): Set<number> {
  const out = new Set<number>();
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const v = line.split(":")[field];
    if (v !== undefined && /^\d+$/.test(v)) out.add(Number(v));
  }
  return out;
}

/** The test run's devservices user and groups (in the run's own files; see above). */
export function testAccounts(): Accounts {
  if (made) return made;
  const names = [...GROUPS, ...TEST_GROUPS] as string[];
  const usedGids = ids("/etc/group", 2);
  let next = FIRST_ID;
  const gids = {} as Record<string, number>;
  for (const g of names) {
    while (usedGids.has(next)) next++;
    gids[g] = next++;
  }
  // The devservices user is played by a host system account (STAND_IN):
  // the private buses' daemons run in the host's namespace and refuse a uid the host's
  // passwd does not have.
  const standIn = readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith(`${STAND_IN}:`))?.split(":")[2];
  if (standIn === undefined) throw new Error(`the host has no ${STAND_IN} account to run the tests' devservices processes as`);
  const uid = Number(standIn);
  const dir = mkdtempSync(join(tmpdir(), "devservices-accounts-"));
  chmodSync(dir, 0o755); // services run as other users read the group file
  const keep = (file: string, drop: string[]) =>
    readFileSync(file, "utf8").split("\n").filter((l) => l && !drop.includes(l.split(":")[0]!));
  const groupFile = join(dir, "group");
  const passwdFile = join(dir, "passwd");
  writeFileSync(groupFile, [...keep("/etc/group", names), ...names.map((g) => `${g}:x:${gids[g]}:`)].join("\n") + "\n", { mode: 0o644 });
  writeFileSync(passwdFile, [...keep("/etc/passwd", ["devservices"]), `devservices:x:${uid}:${gids.devservices}::/nonexistent:/usr/sbin/nologin`].join("\n") + "\n", { mode: 0o644 });
  made = { uid, gid: gids.devservices!, gids: gids as Accounts["gids"], groupFile, passwdFile };
  return made;
}

/** Removes the run's account files (the preload, after the last test file). */
export function removeTestAccounts(): void {
  if (made) rmSync(dirname(made.groupFile), { recursive: true, force: true });
  made = undefined;
}

/**
 * A command run where /etc/group and /etc/passwd are the run's files (a mount namespace
 * of its own, bind mounts; needs root): for programs that resolve the accounts by name
 * through the C library, e.g. dbus-daemon reading a policy's user= and group=.
 */
export function withAccounts(cmd: string[]): string[] {
  const a = testAccounts();
  return ["unshare", "--mount", "--propagation", "private", "sh", "-c", 'mount --bind "$1" /etc/group && mount --bind "$2" /etc/passwd && shift 2 && exec "$@"', "sh", a.groupFile, a.passwdFile, ...cmd];
}
