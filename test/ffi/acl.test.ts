// src/ffi/acl.ts against linux/posix_acl_xattr.h and linux/posix_acl.h; a user entry
// added to a file's access ACL and a directory's default ACL reads back as getfacl shows it.
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as acl from "../../src/ffi/acl.ts";
import { checkAgainstHeaders, sameNames } from "./cabi.ts";

checkAgainstHeaders("acl.ts mirrors linux/posix_acl_xattr.h", {
  headers: ["linux/posix_acl.h", "linux/posix_acl_xattr.h"],
  structs: acl.structs,
  consts: {
    ACL_UNDEFINED_ID: ["(unsigned)ACL_UNDEFINED_ID", acl.ACL_UNDEFINED_ID],
    ...sameNames({
    POSIX_ACL_XATTR_VERSION: acl.POSIX_ACL_XATTR_VERSION, ACL_USER_OBJ: acl.ACL_USER_OBJ, ACL_USER: acl.ACL_USER,
    ACL_GROUP_OBJ: acl.ACL_GROUP_OBJ, ACL_GROUP: acl.ACL_GROUP, ACL_MASK: acl.ACL_MASK, ACL_OTHER: acl.ACL_OTHER,
    }),
  },
});

const getfacl = Bun.which("getfacl");

test("grantUser adds a user entry and the mask; getfacl agrees", () => {
  const dir = mkdtempSync(join(tmpdir(), "acl-test-"));
  const f = join(dir, "f");
  writeFileSync(f, "x", { mode: 0o600 });
  acl.grantUser(f, 4242, 4);
  acl.grantUser(dir, 4242, 5);
  acl.grantUser(dir, 4242, 4, acl.DEFAULT);
  const entries = acl.readAcl(f, acl.ACCESS)!;
  expect(entries).toContainEqual({ tag: acl.ACL_USER, perm: 4, id: 4242 });
  expect(entries).toContainEqual({ tag: acl.ACL_MASK, perm: 4, id: acl.ACL_UNDEFINED_ID });
  expect(acl.readAcl(join(dir), acl.DEFAULT)).toContainEqual({ tag: acl.ACL_USER, perm: 4, id: 4242 });
  if (getfacl) {
    const out = Bun.spawnSync([getfacl, "-n", "-p", f]).stdout.toString();
    expect(out).toContain("user:4242:r--");
    expect(out).toContain("user::rw-");
    expect(out).toContain("other::---");
    // A file created in the directory inherits the default entry.
    writeFileSync(join(dir, "g"), "y");
    expect(Bun.spawnSync([getfacl, "-n", "-p", join(dir, "g")]).stdout.toString()).toContain("user:4242:r--");
  }
  rmSync(dir, { recursive: true });
});
