// docs/bus.md is the contract the examples are written from: every wire name and
// field they rely on is stated there.
import { test, expect } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../helpers/harness";

const read = (p: string) => readFileSync(join(ROOT, p), "utf8");

// What the examples put on or take from the wire, and the form docs/bus.md states it in.
const WIRE: [used: string, stated: string, usedInPython?: string][] = [
  ["com.vendor.devservices.Subscription", "com.vendor.devservices.Subscription"],
  ['"Push"', "`Push` | `us`"],
  ['"Ended"', "`Ended` | `u`"],
  ['"Cancel"', "`Cancel(u serial) -> b`"],
  ['"GetNameOwner"', "`GetNameOwner`", "get_name_owner("],
  ["NameOwnerChanged", "`NameOwnerChanged`"],
  ['"sh"', "return `sh`"],
  ['"returnValue"', '"returnValue":false'],
  ['"errorCode"', '"errorCode"'],
  ['"errorText"', '"errorText"'],
  ['"subscribed"', '"subscribed": true'],
  ["org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownMethod"],
];

test("docs/bus.md states every wire name the C and Python examples use", () => {
  const bus = read("docs/bus.md");
  const c = ["examples/c/example_bus.h", "examples/c/call.c", "examples/c/subscribe.c", "examples/c/camera_frames.c"].map(read).join("\n");
  const py = ["examples/python/devservices_client.py", "examples/python/call.py", "examples/python/subscribe.py", "examples/python/camera_frames.py"].map(read).join("\n").replaceAll("'", '"');
  const missing = WIRE.filter(([, stated]) => !bus.includes(stated)).map(([, s]) => s);
  expect(missing).toEqual([]);
  // The list is what the examples use (the tests of test/examples check the rest: UnknownMethod there).
  for (const [used, , usedInPython] of WIRE.slice(0, -1)) {
    if (used === '"sh"') continue; // dbus-python gives an "sh" reply as a tuple
    expect({ used, inC: c.includes(used), inPython: py.includes(usedInPython ?? used) }).toEqual({ used, inC: true, inPython: true });
  }
  expect(c).toContain('"sh"');
  // The object path and member rules the examples implement.
  expect(bus).toContain("the bus name with `.` replaced by `/`");
  expect(bus).toContain("the spec's method path with `/` replaced by `_`");
  expect(bus).toContain("the empty string means\n`{}`");
});
