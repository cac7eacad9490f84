// devservices board check and scan on the host: what a host can show (network
// interfaces, pseudo-terminals as UARTs, nodes that are not there, mount points,
// power states), the line and JSON formats, and the exit codes. The kernel drivers
// (gpio-sim, i2c-stub, spidev, vivid, vkms) are test/hw/board.test.ts, in the guest.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN, ROOT } from "../helpers/harness";
import * as termios from "../../src/ffi/termios";
import { checkAccess, parseRules } from "../../src/boardcheck/host";
import { defaults } from "../../src/boardcheck/system";
import { formatName } from "../../src/boardcheck/media";
import { parseHardware } from "../../src/boardcheck/section";

let dir: string;
let pty: termios.Pty;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "boardcheck-"));
  pty = termios.openPty();
});
afterAll(() => {
  if (pty) {
    termios.close(pty.slave);
    termios.close(pty.master);
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const T = 60000;

async function board(...args: string[]) {
  const p = Bun.spawn([BUN, join(ROOT, "src/main.ts"), "board", ...args], { stdout: "pipe", stderr: "pipe", env: { ...process.env, DEVSERVICES_RECIPES: dir } });
  const timer = setTimeout(() => p.kill(), 20000);
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  clearTimeout(timer);
  return { stdout, stderr, code };
}

let n = 0;
function recipe(body: Record<string, unknown>): string {
  const file = join(dir, `r${n++}.json`);
  writeFileSync(file, JSON.stringify({ name: `test${n}`, backend: "linux", services: ["testautomation"], ...body }));
  return file;
}

interface Part { kind: string; name: string; status: string; required: boolean; found: string; fix?: string; node?: string }
const json = (stdout: string) => JSON.parse(stdout) as { board: string; ok: boolean; summary: Record<string, number>; parts: Part[] };

describe("network interfaces", () => {
  test("lo is ok; an interface that is not there is missing, with the interfaces there, and exit 1", async () => {
    const f = recipe({ hardware: { network: { lo: {}, nosuch0: { description: "the uplink" } } } });
    const r = await board("check", "--board", f);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("");
    const lines = r.stdout.split("\n");
    expect(lines).toContain("ok        network lo: interface lo is there");
    expect(lines.find((l) => l.includes("nosuch0"))).toMatch(/^missing {3}network nosuch0: interface nosuch0 not found \(interfaces here: lo(, [^)]+)?\); fix: the recipe's name/);
    expect(lines.at(-2)).toBe("FAILED: 1 ok, 1 missing, 0 mismatch, 0 unchecked");
  }, T);

  test("an optional interface that is not there is shown but does not fail the check", async () => {
    const r = await board("check", "--board", recipe({ hardware: { network: { lo: {}, wlan9: { optional: true } } } }));
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/\nmissing\? +network wlan9: /);
    expect(r.stdout).toEndWith("passed: 1 ok, 1 missing, 0 mismatch, 0 unchecked\n");
  }, T);
});

describe("UARTs", () => {
  test("a pseudo-terminal is a tty whose termios answers: ok", async () => {
    const r = await board("check", "--board", recipe({ peripheralmanager: { uart: { uart0: { device: pty.path, baudrate: 9600 } } } }), "--json");
    const out = json(r.stdout);
    expect(r.code).toBe(0);
    expect(out.parts[0]).toMatchObject({ kind: "uart", name: "uart0", status: "ok", node: pty.path });
    expect(out.parts[0]!.found).toContain("termios works");
    expect(out.parts[0]!.found).toContain("9600 at open");
  }, T);

  test("a node that is not a tty is a mismatch (ENOTTY); a missing node is missing", async () => {
    const r = await board("check", "--board", recipe({ peripheralmanager: { uart: { a: { device: "/dev/null" }, b: { device: "/dev/ttyNOSUCH7" } } } }), "--json");
    expect(r.code).toBe(1);
    const out = json(r.stdout);
    expect(out.parts.map((p) => [p.name, p.status])).toEqual([["a", "mismatch"], ["b", "missing"]]);
    expect(out.parts[0]!.found).toBe("/dev/null is not a tty: ENOTTY");
    expect(out.parts[1]!.found).toMatch(/^\/dev\/ttyNOSUCH7 not found \(UARTs here: /);
    expect(out.ok).toBe(false);
  }, T);
});

describe("nodes that are not there", () => {
  test("a GPIO chip, an I2C adapter, a spidev node, a camera and a DRM card: one missing line each, each with its fix", async () => {
    const f = recipe({
      services: ["testautomation", "videooutput"],
      serviceConfig: { videooutput: { card: "/dev/dri/card97", configFile: null } },
      peripheralmanager: {
        gpio: { gpio5: { chip: "/dev/gpiochip99", line: 5 }, gpio6: { chip: "no-such-label", line: "LED" } },
        i2c: { I2C9: { device: "/dev/i2c-99", slaveAddresses: [0x50, 0x51] } },
        spi: { SPI99: { device: "/dev/spidev9.9", maxSpeedHz: 1000 } },
      },
      hardware: { video: { cam: { device: "/dev/video99", formats: ["YUYV"] } } },
    });
    const r = await board("check", "--board", f);
    expect(r.code).toBe(1);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^board test\d+$/);
    const body = lines.slice(1, -1);
    // The adapter's addresses are not probed when the adapter is not there: one line for the bus.
    expect(body.map((l) => l.split(":")[0])).toEqual([
      "missing   gpio gpio5", "missing   gpio gpio6", "missing   i2c I2C9", "missing   spi SPI99", "missing   video cam", "missing   display /dev/dri/card97",
    ]);
    expect(body[1]).toMatch(/chip 'no-such-label' not found \(chips here: .*\); fix: the recipe's chip label/);
    expect(body[2]).toMatch(/adapter \/dev\/i2c-99 not found \(adapters here: .*\); fix: the recipe's device, or enable the bus in the device tree and load i2c-dev$/);
    for (const l of body) expect(l).toContain("; fix: ");
    expect(lines.at(-1)).toBe("FAILED: 0 ok, 6 missing, 0 mismatch, 0 unchecked");
  }, T);
});

describe("power states and mount points", () => {
  test("a valid state machine is ok and says how each action is taken; an invalid one is a mismatch naming the problem", async () => {
    const machine = { initialState: "On", states: { On: {}, Off: { action: "powerOff" } }, transitions: [{ from: "On", event: "shutdown", to: "Off" }] };
    const good = json((await board("check", "--board", recipe({ services: ["power2"], power2: machine }), "--json")).stdout);
    expect(good.parts.map((p) => [p.name, p.status])).toEqual([["power2", "ok"], ["Off", "ok"]]);
    expect(good.parts[1]!.found).toMatch(/^powerOff by (logind|reboot\(2\))/);
    const bad = await board("check", "--board", recipe({ services: ["power2"], power2: { ...machine, initialState: "Nowhere" } }), "--json");
    expect(bad.code).toBe(1);
    expect(json(bad.stdout).parts[0]).toMatchObject({ kind: "power", status: "mismatch" });
    expect(json(bad.stdout).parts[0]!.found).toContain("initialState names unknown state Nowhere");
  }, T);

  test("the media indexer's removable root must be a directory; a hardware mount must be mounted", async () => {
    const media = join(dir, "media");
    const r = await board("check", "--board", recipe({
      services: ["mediaindexer"], serviceConfig: { mediaindexer: { removableRoot: media, detect: false } },
      hardware: { mounts: { "/proc": {}, [dir]: {} } },
    }), "--json");
    expect(r.code).toBe(1);
    const out = json(r.stdout);
    expect(out.parts.map((p) => [p.name, p.status])).toEqual([[media, "missing"], ["/proc", "ok"], [dir, "missing"]]);
    expect(out.parts[2]!.found).toBe(`${dir} is a directory but nothing is mounted on it`);
  }, T);
});

describe("node groups and modes", () => {
  test("the layer's udev rules: each device family's group and mode", () => {
    const rules = parseRules(readFileSync(join(ROOT, "meta-devservices/recipes-core/devservices/files/udev/70-devservices.rules"), "utf8"));
    const of = (subsystem: string, kernel: string) => rules.find((r) => r.subsystem === subsystem && r.kernel.test(kernel));
    expect(of("gpio", "gpiochip0")).toMatchObject({ group: "gpio", mode: 0o660 });
    expect(of("i2c-dev", "i2c-1")).toMatchObject({ group: "i2c", mode: 0o660 });
    expect(of("spidev", "spidev0.1")).toMatchObject({ group: "spi", mode: 0o660 });
    expect(of("tty", "ttyAMA0")).toMatchObject({ group: "dialout", mode: 0o660 });
    expect(of("tty", "tty1")).toBeUndefined();
    expect(of("video4linux", "video0")).toMatchObject({ group: "video", mode: 0o660 });
    expect(of("drm", "card1")).toMatchObject({ group: "video", mode: 0o660 });
  });

  test("a node as its rule says is ok; another mode, or a group the system lacks, is a mismatch with the fix", () => {
    const o = defaults();
    const ok = checkAccess(["/dev/null"], parseRules('SUBSYSTEM=="mem", KERNEL=="null|zero", GROUP="root", MODE="0666"'), "test.rules", o);
    expect(ok).toEqual([expect.objectContaining({ kind: "access", name: "/dev/null", status: "ok", found: "group root mode 0666" })]);
    const mode = checkAccess(["/dev/null"], parseRules('SUBSYSTEM=="mem", KERNEL=="null", GROUP="nogroup", MODE="0660"'), "test.rules", o);
    expect(mode[0]!.status).toBe("mismatch");
    const nogroup = checkAccess(["/dev/null"], parseRules('SUBSYSTEM=="mem", KERNEL=="null", GROUP="no-such-group-x", MODE="0666"'), "test.rules", o);
    expect(nogroup[0]).toMatchObject({ status: "mismatch", found: "group root mode 0666; the rule's group no-such-group-x does not exist" });
    expect(nogroup[0]!.fix).toContain("add the group no-such-group-x");
    const none = checkAccess([pty.path], parseRules('SUBSYSTEM=="mem", KERNEL=="null", GROUP="root", MODE="0666"'), "test.rules", o);
    expect(none[0]!.status).toBe("unchecked");
  });

  test("--rules FILE judges the recipe's nodes; without an installed rules file the nodes are unchecked, not findings", async () => {
    const f = recipe({ peripheralmanager: { uart: { uart0: { device: pty.path } } } });
    const plain = json((await board("check", "--board", f, "--json")).stdout);
    if (!["/etc", "/run", "/usr/lib", "/lib"].some((d) => Bun.file(`${d}/udev/rules.d/70-devservices.rules`).size > 0)) {
      expect(plain.parts.at(-1)).toMatchObject({ kind: "access", status: "unchecked", required: false });
    }
    const rules = join(dir, "tty.rules");
    writeFileSync(rules, 'SUBSYSTEM=="tty", KERNEL=="ttyS[0-9]*", GROUP="dialout", MODE="0660"\n');
    const r = json((await board("check", "--board", f, "--json", "--rules", rules)).stdout);
    // A pty has no sysfs device, so no rule is for it.
    expect(r.parts.at(-1)).toMatchObject({ kind: "access", name: pty.path, status: "unchecked" });
    expect(r.ok).toBe(true);
  }, T);
});

describe("formats and exit codes", () => {
  test("--json is one JSON document with the board, the verdict, the counts and every part", async () => {
    const r = await board("check", "--board", recipe({ hardware: { network: { lo: {}, nosuch1: {} } } }), "--json");
    const out = json(r.stdout);
    expect(out).toEqual({
      board: expect.stringMatching(/^test\d+$/), ok: false, summary: { ok: 1, missing: 1, mismatch: 0, unchecked: 0 },
      parts: [
        { kind: "network", name: "lo", status: "ok", required: true, found: "interface lo is there" },
        expect.objectContaining({ kind: "network", name: "nosuch1", status: "missing", required: true, fix: expect.any(String) }),
      ],
    });
    expect(r.code).toBe(1);
  }, T);

  test("a virtual board has nothing of the kernel to check: one unchecked line, exit 0", async () => {
    const r = await board("check", "--board", "virtual");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("board virtual\nunchecked board virtual: backend is virtual: the services simulate every device, nothing of the kernel is used\npassed: 0 ok, 0 missing, 0 mismatch, 1 unchecked\n");
  }, T);

  test("usage errors exit 2; a recipe that is not there or not valid exits 1 with the reason", async () => {
    for (const args of [[], ["frob"], ["check", "extra"], ["check", "--name", "x"], ["scan", "--board", "x"], ["check", "--timeout", "0"], ["check", "--no-such-option"]]) {
      const r = await board(...args);
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: "" });
      expect(r.stderr).toMatch(/^devservices/);
    }
    const none = await board("check", "--board", join(dir, "nosuch.json"));
    expect(none.code).toBe(1);
    const bad = await board("check", "--board", recipe({ hardware: { video: { cam: { formats: ["YUYV"] } } } }));
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("the hardware section is invalid");
    expect(bad.stderr).toContain("a video device needs device or driver");
  }, T);

  test("scan prints a draft recipe that check passes on the same system", async () => {
    const s = await board("scan", "--name", "here");
    expect({ code: s.code, stderr: s.stderr }).toEqual({ code: 0, stderr: "" });
    const draft = JSON.parse(s.stdout);
    expect(draft).toMatchObject({ name: "here", backend: "linux", services: expect.arrayContaining(["testautomation"]) });
    expect(draft.hardware.network?.lo).toBeUndefined();
    const f = join(dir, "draft.json");
    writeFileSync(f, s.stdout);
    const c = await board("check", "--board", f, "--json");
    expect({ code: c.code, findings: json(c.stdout).parts.filter((p) => p.status === "missing" || p.status === "mismatch") }).toEqual({ code: 0, findings: [] });
  }, T);
});

describe("V4L2 format names", () => {
  test("four characters without trailing spaces, -BE for a big-endian variant; the hardware section takes both", () => {
    const fcc = (s: string) => (s.charCodeAt(0) | (s.charCodeAt(1) << 8) | (s.charCodeAt(2) << 16) | (s.charCodeAt(3) << 24)) >>> 0;
    expect(formatName(fcc("YUYV"))).toBe("YUYV");
    expect(formatName(fcc("Y10 "))).toBe("Y10");
    expect(formatName((fcc("XR15") | 0x80000000) >>> 0)).toBe("XR15-BE");
    expect(parseHardware({ video: { c: { driver: "vivid", formats: ["YUYV", "Y10", "XR15-BE"] } } }, "t").video.c!.formats).toEqual(["YUYV", "Y10", "XR15-BE"]);
    expect(() => parseHardware({ video: { c: { driver: "vivid", formats: ["XR15\u0080"] } } }, "t")).toThrow("a V4L2 pixel format code");
  });
});
