// src/ffi/errno.ts against <errno.h>: every name's value printed by a small C program
// compiled with gcc; and the reverse lookup.
import { expect, test } from "bun:test";
import * as E from "../../src/ffi/errno.ts";
import { checkAgainstHeaders, sameNames } from "./cabi.ts";

checkAgainstHeaders("errno.ts mirrors errno.h", {
  headers: ["errno.h"],
  structs: {},
  consts: sameNames(E.errnos),
});

test("errnoName gives each value's name, the primary one for aliases", () => {
  expect(E.errnoName(E.EAGAIN)).toBe("EAGAIN");
  expect(E.errnoName(E.EOPNOTSUPP)).toBe("EOPNOTSUPP");
  expect(E.errnoName(E.ENOENT)).toBe("ENOENT");
  expect(E.errnoName(4095)).toBeUndefined();
  for (const [k, v] of Object.entries(E.errnos)) if (k !== "EWOULDBLOCK" && k !== "ENOTSUP") expect(E.errnoName(v)).toBe(k);
});
