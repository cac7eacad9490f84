// devservices board check and board scan against the guest's kernel drivers
// (gpio-sim, i2c-stub, spidev on the loopback controller, vivid, vkms): the guest's
// recipe passes; one with a wrong line name, a missing adapter and a wrong format
// gives exactly those three findings and exit 1; a scanned draft passes the check.
import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { guest } from "./vboard.ts";
import { loadBoard, parseBoard } from "../../src/core/board.ts";
import { checkBoard } from "../../src/boardcheck/check.ts";
import { scanSystem } from "../../src/boardcheck/scan.ts";
import { defaults } from "../../src/boardcheck/system.ts";

const ROOT = resolve(import.meta.dir, "../..");
const RECIPES = join(ROOT, "test/boardcheck/recipes");

/**
 * The command line from source (the work tree's bun), so the guest runs what is
 * checked out. One start of it takes about 25 s under TCG (every service's module is
 * loaded), so each test starts it once and checks the rest in this process.
 */
async function board(...args: string[]) {
  const p = Bun.spawn([process.execPath, join(ROOT, "src/main.ts"), "board", ...args], { stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { stdout, stderr, code };
}

interface Part { kind: string; name: string; status: string; required: boolean; found: string; fix?: string }
const SLOW = 150_000;
const findings = (parts: Part[]) => parts.filter((p) => p.status === "missing" || p.status === "mismatch");

guest("board check and scan", () => {
  test("the guest's recipe passes: every pin, bus, address, camera format, plane and interface ok", async () => {
    const parts = await checkBoard(loadBoard(join(RECIPES, "vboard.json")), defaults());
    expect(findings(parts)).toEqual([]);
    const ok = parts.filter((p) => p.status === "ok").map((p) => `${p.kind} ${p.name}`);
    expect(ok).toEqual(expect.arrayContaining([
      "gpio gpio0", "gpio gpio3", "gpio gpio7", "i2c I2C0", "i2c-address I2C0@0x50", "spi SPI00", "video camera0",
      "display vkms", "plane sink MAIN", "plane sink SUB0", "plane card1 plane 0", "plane card1 plane 1", "network lo",
    ].map((s) => s.replace("card1", parts.find((p) => p.kind === "display")!.found.split(" ")[0]!))));
    expect(parts.find((p) => p.name === "I2C0@0x50")!.found).toBe("a device answers at 0x50 on /dev/i2c-0");
  });

  test("an address nobody answers at is missing (i2c-stub answers ENODEV); only the recipe's addresses are read", async () => {
    const recipe = JSON.parse(readFileSync(join(RECIPES, "vboard.json"), "utf8"));
    recipe.peripheralmanager.i2c.I2C0.slaveAddresses = [0x50, 0x51];
    const parts = (await checkBoard(parseBoard(recipe, "test"), defaults())).filter((p) => p.kind === "i2c-address");
    expect(parts.map((p) => [p.name, p.status, p.found])).toEqual([
      ["I2C0@0x50", "ok", "a device answers at 0x50 on /dev/i2c-0"],
      ["I2C0@0x51", "missing", "no device answers at 0x51 on /dev/i2c-0 (ENODEV)"],
    ]);
  });

  test("a wrong line name, a missing adapter and a wrong format: exactly those three findings, exit 1", async () => {
    const r = await board("check", "--board", join(RECIPES, "vboard-wrong.json"));
    expect(r.code).toBe(1);
    const bad = r.stdout.split("\n").filter((l) => /^(missing|mismatch)/.test(l));
    expect(bad).toHaveLength(3);
    expect(bad[0]).toMatch(/^missing +gpio gpio0: line 'LED' not found on gpiochip\d+ \(lines there: 'line0', 'line1', 'line2', 'line3'\); fix: the recipe's line name or the device tree's gpio-line-names$/);
    expect(bad[1]).toMatch(/^missing +i2c I2C5: adapter \/dev\/i2c-5 not found \(adapters here: i2c-0 'SMBus stub driver'\); fix: /);
    expect(bad[2]).toMatch(/^mismatch +video camera0: video\d+ \(vivid '.*'\) does not offer 'H264' \(formats there: .*YUYV.*\); fix: /);
    expect(r.stdout).toMatch(/\nFAILED: \d+ ok, 2 missing, 1 mismatch, \d+ unchecked\n$/);
    const parts = await checkBoard(loadBoard(join(RECIPES, "vboard-wrong.json")), defaults());
    expect(findings(parts).map((p) => `${p.status} ${p.kind} ${p.name}`)).toEqual(["missing gpio gpio0", "missing i2c I2C5", "mismatch video camera0"]);
  }, SLOW);

  test("scan drafts a recipe that check passes on the same system", async () => {
    const s = await board("scan", "--name", "vboard-scan");
    expect({ code: s.code, stderr: s.stderr }).toEqual({ code: 0, stderr: "" });
    const draft = JSON.parse(s.stdout);
    expect(Object.keys(draft.peripheralmanager.gpio)).toHaveLength(8);
    expect(draft.peripheralmanager.gpio.gpio0).toMatchObject({ chip: "vboard-gpio", line: "line0" });
    expect(draft.peripheralmanager.gpio.gpio4).toMatchObject({ chip: "vboard-gpio", line: 4 });
    expect(Object.values(draft.peripheralmanager.i2c)).toEqual([expect.objectContaining({ description: "SMBus stub driver", slaveAddresses: [] })]);
    expect(draft.peripheralmanager.spi.SPI00.device).toBe("/dev/spidev0.0");
    // ttyS0 is the console; the 8250's other ports have no hardware behind them.
    expect(draft.peripheralmanager.uart).toEqual({});
    expect(Object.values(draft.hardware.video)).toEqual([expect.objectContaining({ driver: "vivid", formats: expect.arrayContaining(["YUYV"]) })]);
    expect(draft.hardware.display.planes.length).toBeGreaterThan(0);
    const dir = mkdtempSync(join(tmpdir(), "board-scan-"));
    writeFileSync(join(dir, "draft.json"), s.stdout);
    const parts = await checkBoard(loadBoard(join(dir, "draft.json")), defaults());
    expect(findings(parts)).toEqual([]);
    expect(parts.filter((p) => p.kind === "gpio" && p.status === "ok")).toHaveLength(8);
    expect(parts.filter((p) => p.kind === "video" && p.status === "ok")).toHaveLength(1);
    // In-process, the same draft: what scan writes is what scanSystem returns.
    expect(findings(await checkBoard(parseBoard(await scanSystem(defaults(), "again"), "scan"), defaults()))).toEqual([]);
  }, SLOW);
});
