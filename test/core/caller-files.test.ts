// The platform's caller-rights pieces: the path rules of CallerFiles (src/files.ts)
// and the one ownership check of the lease registry (mayAct, forActor).
import { test, expect, beforeAll, afterAll } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { callerFiles } from "../../src/files";
import { PathRefused, type Caller } from "../../src/core/service";
import { LeaseRegistry, mayAct, uidOwner } from "../../src/core/leases";
import { libc } from "../../src/ffi/libc";

const skip = process.getuid?.() !== 0 ? "needs root" : null;
let dir: string;
let state: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "caller-files-"));
  chmodSync(dir, 0o755);
  state = join(dir, "state");
  mkdirSync(state);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const nobody: Caller = { name: ":1.7", uid: 65534, pid: -1, gids: [65534] };
const root: Caller = { name: ":1.8", uid: 0, pid: -1, gids: [0] };
const reason = (p: Promise<unknown>) => p.then((v) => (typeof v === "number" && libc.close(v), "ok"), (e) => (e instanceof PathRefused ? e.reason : String(e)));

test("relative paths, . and .., NUL, the state directory, the configuration and the executable are refused before anything is touched", () => {
  const files = callerFiles([state]);
  const why = (p: string) => {
    try {
      files.check(p);
      return "ok";
    } catch (e) {
      return (e as PathRefused).reason;
    }
  };
  expect(why("out.mp4")).toBe("relative");
  expect(why("./out.mp4")).toBe("relative");
  expect(why(`${dir}/../etc/passwd`)).toBe("traversal");
  expect(why(`${dir}/./x`)).toBe("traversal");
  expect(why(`${dir}/a\0b`)).toBe("other");
  expect(why(state)).toBe("own");
  expect(why(`${state}/filecache/metadata.db`)).toBe("own");
  expect(why(`${state}//filecache`)).toBe("own");
  expect(why("/etc/devservices/FileCache.conf")).toBe("own");
  expect(why(process.execPath)).toBe("own");
  expect(why(`${dir}/statex`)).toBe("ok");
  expect(why(`${dir}/out.mp4`)).toBe("ok");
});

test.skipIf(!!skip)("root's files are root's: nobody is refused by the kernel, root is not, and neither reaches the state directory", async () => {
  const files = callerFiles([state]);
  const f = join(dir, "root-file");
  writeFileSync(f, "x");
  expect(await reason(files.open(nobody, f, { write: true, truncate: true }))).toBe("denied");
  expect(await reason(files.open(root, f, { write: true }))).toBe("ok");
  expect(await reason(files.open(root, join(state, "db"), { write: true, create: "new" }))).toBe("own");
  expect(existsSync(join(state, "db"))).toBe(false);
  expect(await reason(files.unlink(nobody, f))).toBe("denied");
  expect(existsSync(f)).toBe(true);
  expect(await files.may(nobody, f, "r")).toBe(true);
  expect(await files.may(nobody, f, "w")).toBe(false);
  // Created for the caller: its own file.
  const drop = join(dir, "drop");
  mkdirSync(drop);
  chmodSync(drop, 0o1777);
  expect(await reason(files.open(nobody, join(drop, "new"), { write: true, create: "new" }, 0o600))).toBe("ok");
  expect(statSync(join(drop, "new")).uid).toBe(65534);
  expect(await reason(files.open(nobody, join(drop, "new"), { write: true, create: "new" }))).toBe("exists");
});

test("leases: the holding connection, the holding uid and root may act; anyone else may not", () => {
  const reg = new LeaseRegistry();
  const conn = reg.take(":1.7", "power2/lock/a");
  const byUid = reg.take(uidOwner(65534), "videooutput/context/c");
  expect(mayAct({ name: ":1.7", uid: 65534 }, conn)).toBe(true);
  expect(mayAct({ name: ":1.9", uid: 65534 }, conn)).toBe(false); // same uid, another connection
  expect(mayAct({ name: ":1.9", uid: 1000 }, conn)).toBe(false);
  expect(mayAct({ name: ":1.3", uid: 0 }, conn)).toBe(true);
  expect(mayAct({ name: ":1.9", uid: 65534 }, byUid)).toBe(true); // any connection of the uid
  expect(mayAct({ name: ":1.9", uid: 1000 }, byUid)).toBe(false);
  expect(reg.forActor({ name: ":1.9", uid: 1000 }, "power2/lock/a")).toBe("others");
  expect(reg.forActor({ name: ":1.9", uid: 1000 }, "power2/lock/none")).toBe("free");
  expect(reg.forActor({ name: ":1.7", uid: 65534 }, "power2/lock/a")).toBe(conn);
  // A connection's departure does not end what its uid holds.
  reg.releaseOwner(":1.7");
  expect(conn.active).toBe(false);
  expect(byUid.active).toBe(true);
  expect(reg.scope("videooutput").forActor({ name: ":1.2", uid: 65534 }, "context/c")).toBe(byUid);
});
