// The Python examples (examples/python, python3-dbus with the GLib main loop) run by
// Debian's python3 against `devservices serve` of the virtual board.
import { join } from "node:path";
import { existsSync } from "node:fs";
import { ROOT } from "../helpers/harness";
import { exampleSuite } from "./setup";

// Debian's interpreter: python3-dbus and python3-gi are installed for it, whatever
// other python3 is first on PATH.
const PYTHON = "/usr/bin/python3";

exampleSuite("Python", async () => {
  if (!existsSync(PYTHON)) return `${PYTHON} missing (scripts/setup installs python3)`;
  const check = Bun.spawnSync([PYTHON, "-c", "import dbus, dbus.mainloop.glib, gi.repository.GLib"]);
  if (check.exitCode !== 0) return `python3-dbus or python3-gi missing (scripts/setup installs them): ${check.stderr.toString().trim().split("\n").at(-1)}`;
  // -B: no __pycache__ written into the checkout.
  return { argv: (program, args) => [PYTHON, "-B", join(ROOT, "examples/python", `${program}.py`), ...args] };
});
