// Every test validates responses against their schemas and logs quietly.
process.env.DEVSERVICES_CHECK_RESPONSES = "1";
process.env.DEVSERVICES_LOG_LEVEL ??= "silent";

// The accounts the tests need are in a group file of the run's own (test/layer/accounts.ts):
// services started by the tests, in this process or in children that inherit the
// environment, look group names up there. The host's account files are left as they
// are: a run that changes them fails.
import { afterAll, expect } from "bun:test";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { removeTestAccounts, testAccounts } from "./layer/accounts";

process.env.DEVSERVICES_GROUP_FILE = testAccounts().groupFile;

const HOST_ACCOUNTS = ["/etc/group", "/etc/passwd", "/etc/gshadow", "/etc/shadow"];
const digest = () => HOST_ACCOUNTS.map((f) => {
  try {
    return `${f} ${createHash("sha256").update(readFileSync(f)).digest("hex")}`;
  } catch {
    return `${f} unreadable`;
  }
});
const before = digest();
// A hook of the preload runs once, after the last test file.
afterAll(() => {
  removeTestAccounts();
  // Unchanged by the tests (their groups and users are in test/layer/accounts.ts's files).
  expect({ hostAccounts: digest() }).toEqual({ hostAccounts: before });
});
