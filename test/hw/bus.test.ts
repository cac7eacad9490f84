// The shipping binary on the guest's system bus: devservices serves a service and
// its bus name appears on the bus.
import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { guest } from "./vboard.ts";

const BIN = "/usr/bin/devservices";

function busNames(): string[] {
  const r = Bun.spawnSync(["dbus-send", "--system", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
    "org.freedesktop.DBus.ListNames"]);
  if (r.exitCode !== 0) throw new Error(`dbus-send: ${r.stderr.toString()}`);
  return [...r.stdout.toString().matchAll(/string "([^"]+)"/g)].map((m) => m[1]!);
}

guest("system bus", () => {
  test("dbus-daemon answers on the system bus", () => {
    expect(busNames()).toContain("org.freedesktop.DBus");
  });

  // The shipped binary, away from the source tree: it must carry everything it runs
  // (its event source's poller thread must come from inside the binary, not the build
  // machine's source path).
  const serve = existsSync(BIN) ? test : test.skip;
  serve("devservices serves testautomation on it", async () => {
    const proc = Bun.spawn([BIN, "serve", "--bus", "system", "--state-dir", "/tmp/devservices-hw", "testautomation"], {
      stdout: "pipe", stderr: "pipe",
    });
    let ok = false;
    try {
      const deadline = Date.now() + 20_000;
      let names: string[] = [];
      while (Date.now() < deadline) {
        names = busNames();
        if (names.includes("com.vendor.service.testautomation")) break;
        await Bun.sleep(200);
      }
      expect(names).toContain("com.vendor.service.testautomation");
      ok = true;
    } finally {
      proc.kill();
      await proc.exited;
      if (!ok) console.log(await new Response(proc.stdout).text(), await new Response(proc.stderr).text());
    }
  });
});
