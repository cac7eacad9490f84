// The layer's udev rules (files/udev/70-devservices.rules), as the recipe renders them
// for either unit layout: syntax (udevadm verify where the installed udev has it,
// systemd >= 253, and the check of udev-rules.ts everywhere), which device nodes get
// which group, that those are the groups the units hold, and which unit a new
// peripheral or camera starts.
import { test, expect, describe } from "bun:test";
import { spawnSync } from "bun";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LAYER_FILES, RECIPE } from "./layer";
import { globMatch, parseRules, type Rule } from "./udev-rules";

const TEMPLATE = readFileSync(join(LAYER_FILES, "udev/70-devservices.rules"), "utf8");
const LAYOUTS = {
  "all-in-one": { peripheral: "devservices.service", camera: "devservices.service" },
  "per-service": { peripheral: "devservices@peripheralmanager.service", camera: "devservices@camera2.service" },
};
/** The board whose rules are rendered: the firmware test's (a UART, an I2C adapter, an SPI device). */
const BOARD = JSON.parse(readFileSync(join(import.meta.dir, "../../recipes/boards/qemu.json"), "utf8"));
/** devservices_peripheral_nodes() of the recipe: kind:node of the board's I2C, SPI and UART device nodes. */
const peripheralNodes = (board: any) =>
  (["uart", "i2c", "spi"] as const).flatMap((kind) =>
    Object.values((board.peripheralmanager?.[kind] ?? {}) as Record<string, { device?: string }>)
      .map((e) => e.device ?? "")
      .filter((d) => d.startsWith("/dev/"))
      .map((d) => ({ kind, node: d.slice(5) })),
  );
const SUBSYSTEM = { uart: "tty", i2c: "i2c-dev", spi: "spidev" };
/** What do_install does with the template (sed) for DEVSERVICES_UNITS and the board's nodes. */
const render = (l: keyof typeof LAYOUTS) => {
  const lines = peripheralNodes(BOARD)
    .filter(({ node }) => !node.includes("/"))
    .map(({ kind, node }) => `SUBSYSTEM=="${SUBSYSTEM[kind]}", ${/^(tty|i2c-|spidev)/.test(node) ? "KERNEL" : "SYMLINK"}=="${node}", TAG+="systemd", ENV{SYSTEMD_WANTS}+="${LAYOUTS[l].peripheral}"`);
  return TEMPLATE.replaceAll("@PERIPHERAL_UNIT@", LAYOUTS[l].peripheral)
    .replaceAll("@CAMERA_UNIT@", LAYOUTS[l].camera)
    .replace(/^.*@PERIPHERAL_NODES@.*\n/m, lines.map((x) => x + "\n").join(""));
};

/** The assignments of the rules an "add" event of this device reaches (up to a GOTO taken). */
function applied(rules: Rule[], dev: { subsystem: string; kernel: string; action?: string }) {
  const out: { group?: string; mode?: string; tags: string[]; wants: string[] } = { tags: [], wants: [] };
  let skipTo: string | undefined;
  for (const r of rules) {
    if (skipTo) {
      if (r.pairs.some((p) => p.key === "LABEL" && p.value === skipTo)) skipTo = undefined;
      continue;
    }
    const matches = r.pairs.filter((p) => p.op === "==" || p.op === "!=").every((p) => {
      const v = p.key === "SUBSYSTEM" ? dev.subsystem : p.key === "KERNEL" ? dev.kernel : p.key === "ACTION" ? (dev.action ?? "add") : undefined;
      if (v === undefined) throw new Error(`the test does not model ${p.key}`);
      return globMatch(p.value, v) === (p.op === "==");
    });
    if (!matches) continue;
    for (const p of r.pairs) {
      if (p.key === "GROUP") out.group = p.value;
      if (p.key === "MODE") out.mode = p.value;
      if (p.key === "TAG" && p.op === "+=") out.tags.push(p.value);
      if (p.key === "ENV" && p.attr === "SYSTEMD_WANTS") out.wants.push(...p.value.split(/\s+/));
      if (p.key === "GOTO") skipTo = p.value;
    }
  }
  return out;
}

const udevadmVerifies = spawnSync(["sh", "-c", "udevadm verify --help >/dev/null 2>&1"]).exitCode === 0;

for (const layout of Object.keys(LAYOUTS) as (keyof typeof LAYOUTS)[]) {
  describe(`rules for DEVSERVICES_UNITS="${layout}"`, () => {
    const text = render(layout);
    const { rules, errors } = parseRules(text);

    test("parse without errors; every placeholder is filled", () => {
      expect(errors).toEqual([]);
      expect(text).not.toMatch(/@[A-Z_]+@/);
      expect(rules.length).toBeGreaterThanOrEqual(8);
    });

    test(`udevadm verify ${udevadmVerifies ? "accepts them" : "(not in this udev: systemd < 253; the parser above stands in)"}`, () => {
      if (!udevadmVerifies) return;
      const dir = mkdtempSync(join(tmpdir(), "udev-"));
      writeFileSync(join(dir, "70-devservices.rules"), text);
      const r = spawnSync(["udevadm", "verify", "--resolve-names=never", join(dir, "70-devservices.rules")], { stdout: "pipe", stderr: "pipe" });
      rmSync(dir, { recursive: true, force: true });
      expect({ code: r.exitCode, err: r.stderr.toString() }).toEqual({ code: 0, err: "" });
    });

    const devices: [subsystem: string, kernel: string, group: string, wants: string | null][] = [
      ["gpio", "gpiochip0", "gpio", LAYOUTS[layout].peripheral],
      // the board's own nodes pull the unit in ...
      ["i2c-dev", "i2c-0", "i2c", LAYOUTS[layout].peripheral],
      ["spidev", "spidev0.0", "spi", LAYOUTS[layout].peripheral],
      ["tty", "ttyS1", "dialout", LAYOUTS[layout].peripheral],
      // ... others (the serial console, unused ports and adapters) only get their group
      ["i2c-dev", "i2c-1", "i2c", null],
      ["spidev", "spidev0.1", "spi", null],
      ["tty", "ttyS0", "dialout", null],
      ["tty", "ttyAMA0", "dialout", null],
      ["tty", "ttyUSB0", "dialout", null],
      ["tty", "ttyACM0", "dialout", null],
      ["video4linux", "video0", "video", LAYOUTS[layout].camera],
      ["drm", "card0", "video", null],
    ];
    for (const [subsystem, kernel, group, wants] of devices) {
      test(`${subsystem} ${kernel}: group ${group}, mode 0660${wants ? `, starts ${wants}` : ""}`, () => {
        const a = applied(rules, { subsystem, kernel });
        expect({ group: a.group, mode: a.mode }).toEqual({ group, mode: "0660" });
        expect(a.wants).toEqual(wants ? [wants] : []);
        if (wants) expect(a.tags).toContain("systemd"); // SYSTEMD_WANTS is read only from devices tagged "systemd"
      });
    }

    test("devices that are none of the services' keep udev's defaults, and a removal changes nothing", () => {
      expect(applied(rules, { subsystem: "tty", kernel: "tty1" })).toEqual({ tags: [], wants: [] });
      expect(applied(rules, { subsystem: "drm", kernel: "renderD128" })).toEqual({ tags: [], wants: [] });
      expect(applied(rules, { subsystem: "gpio", kernel: "gpiochip0", action: "remove" })).toEqual({ tags: [], wants: [] });
    });
  });
}

test("the rules' groups are the ones the units hold and the recipe creates or base-passwd has", () => {
  const { rules } = parseRules(render("all-in-one"));
  const groups = new Set(rules.flatMap((r) => r.pairs.filter((p) => p.key === "GROUP").map((p) => p.value)));
  const recipe = readFileSync(RECIPE, "utf8").replace(/\\\n/g, " ");
  const created = [.../--system ([\w-]+)/g[Symbol.matchAll](/GROUPADD_PARAM:\$\{PN\} = "([^"]*)"/.exec(recipe)![1]!)].map((m) => m[1]);
  const basePasswd = ["video", "dialout"];
  for (const g of groups) expect({ g, known: created.includes(g) || basePasswd.includes(g) }).toEqual({ g, known: true });
  const supplementary = (file: string) => /^SupplementaryGroups=(.*)$/m.exec(readFileSync(join(LAYER_FILES, "systemd", file), "utf8"))?.[1]?.split(/\s+/) ?? [];
  const holders: Record<string, string[]> = {
    gpio: ["devservices@peripheralmanager.service.d/devservices.conf"],
    i2c: ["devservices@peripheralmanager.service.d/devservices.conf"],
    spi: ["devservices@peripheralmanager.service.d/devservices.conf"],
    dialout: ["devservices@peripheralmanager.service.d/devservices.conf"],
    video: ["devservices@camera2.service.d/devservices.conf", "devservices@videooutput.service.d/devservices.conf"],
  };
  expect([...groups].sort()).toEqual(Object.keys(holders).sort());
  for (const [g, files] of Object.entries(holders)) {
    for (const f of [...files, "devservices.service"]) expect({ g, f, held: supplementary(f).includes(g) }).toEqual({ g, f, held: true });
  }
  // The units the rules start exist in the layer.
  for (const f of ["devservices.service", "devservices@.service"]) expect(existsSync(join(LAYER_FILES, "systemd", f))).toBe(true);
});

test("the parser is not blind", () => {
  const { errors } = parseRules(
    [
      'SUBSYSTEM=="gpio" GROUP="gpio"',
      'KERNEL="video*", GROUP="video"',
      'SUBSYSTEM=="tty", MODE="0999"',
      'FOO=="x"',
      'ENV="x"',
      'GOTO="nowhere"',
      'KERNEL=="card[0-9*", GROUP:="video"',
    ].join("\n"),
  );
  expect(errors).toEqual([
    'line 1: cannot parse at: SUBSYSTEM=="gpio" GROUP="gpio"',
    "line 2: KERNEL does not take =",
    "line 3: MODE 0999 is not octal",
    "line 4: unknown key FOO",
    "line 5: ENV needs an {attribute}",
    "line 7: unbalanced [ ] in card[0-9*",
    "line 6: GOTO nowhere has no LABEL after it",
  ]);
});
