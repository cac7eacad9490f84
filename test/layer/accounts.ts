// The layer's system user and groups (meta-devservices/recipes-core/devservices/devservices_0.1.bb),
// created on the test machine when missing, so that a dbus-daemon can load the
// shipped policy and test processes can run as that user or with those groups.
import { spawnSync } from "bun";

/** Callers' groups of the D-Bus policy, and the service user's own group. */
export const GROUPS = ["devservices", "devservices-net", "devservices-media", "devservices-gpio", "devservices-i2c", "devservices-spi", "devservices-uart", "devservices-power", "devservices-camera", "devservices-record", "devservices-cache", "devservices-test"] as const;
export type GroupName = (typeof GROUPS)[number];

export interface Accounts {
  uid: number;
  gid: number;
  gids: Record<GroupName, number>;
}

function run(cmd: string[]): string {
  const r = spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")}: ${r.stderr.toString().trim()}`);
  return r.stdout.toString().trim();
}

const lookup = (db: string, name: string) => spawnSync(["getent", db, name], { stdout: "pipe" }).stdout.toString().trim();

/** Creates the devservices user and groups when missing (needs root); returns their ids. */
export function ensureAccounts(): Accounts {
  if (process.getuid?.() !== 0) throw new Error("creating the devservices user and groups needs root");
  for (const g of GROUPS) if (!lookup("group", g)) run(["groupadd", "--system", g]);
  if (!lookup("passwd", "devservices")) {
    run(["useradd", "--system", "--gid", "devservices", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", "devservices"]);
  }
  const gids = Object.fromEntries(GROUPS.map((g) => [g, Number(lookup("group", g).split(":")[2])])) as Record<GroupName, number>;
  const [, , uid, gid] = lookup("passwd", "devservices").split(":");
  return { uid: Number(uid), gid: Number(gid), gids };
}
