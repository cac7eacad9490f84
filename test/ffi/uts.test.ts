// src/ffi/uts.ts: HOST_NAME_MAX against limits.h; sethostname/gethostname and the
// change watch in a UTS namespace of the test's own, so the machine keeps its name.
import { expect, test } from "bun:test";
import { hostname } from "node:os";
import * as uts from "../../src/ffi/uts.ts";
import { checkAgainstHeaders } from "./cabi.ts";

checkAgainstHeaders("uts.ts mirrors limits.h", { headers: ["limits.h"], structs: {}, consts: { HOST_NAME_MAX: ["HOST_NAME_MAX", uts.HOST_NAME_MAX] } });

test("gethostname answers the kernel's name", () => {
  expect(uts.getHostname()).toBe(hostname());
});

const unshare = Bun.which("unshare");
const canUts = unshare !== null && Bun.spawnSync([unshare, "--uts", "true"]).exitCode === 0;

test.skipIf(!canUts)("in a UTS namespace: set, read back, too long refused, every change seen until close", () => {
  const machine = hostname();
  const r = Bun.spawnSync([unshare!, "--uts", process.execPath, `${import.meta.dir}/fixtures/uts-ns.ts`]);
  expect(r.stderr.toString()).toBe("");
  const out = JSON.parse(r.stdout.toString());
  expect(out.before).toBe(machine);
  expect(out.after).toBe("uts-test-1");
  expect(out.tooLong).toBe(22); // EINVAL
  // A change in another UTS namespace marks the file too (the same name is read again).
  expect([...new Set(out.seen)]).toEqual(["uts-test-1", "uts-test-2"]);
  expect(hostname()).toBe(machine);
});
