// CopyCacheObject writes a destination the caller names with the caller's rights:
// absolute paths only, never the service's state directory, no symbolic link on
// the path (not even one swapped in while the copy is under way). The service runs
// in its own process; the caller is uid 65534 (a separate process, setpriv), with a
// group where one is named.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnScript } from "../helpers/harness";
import { testAccounts } from "../layer/accounts";
import { apart, cannotRun, type Apart } from "./apart";
import { expectError } from "./env";

const skip = cannotRun();
if (skip) console.warn(`file cache copy rights tests skipped: ${skip}`);

const APP = 65534;

describe.skipIf(skip !== null)("CopyCacheObject with the caller's rights", () => {
  let a: Apart;
  let p: string;
  let out: string;
  beforeAll(async () => {
    a = await apart();
    expect(await a.call("DefineType", { typeName: "docs", loWatermark: 0, hiWatermark: 1 << 20, size: 100 })).toEqual({ returnValue: true });
    p = (await a.callAs(APP, [], "InsertCacheObject", { typeName: "docs", fileName: "note.txt" })).pathName as string;
    writeFileSync(p, "the object");
    out = mkdtempSync(join(tmpdir(), "fc-copy-out-"));
    chmodSync(out, 0o755);
  }, 30000);
  afterAll(async () => {
    await a?.stop();
    if (out) rmSync(out, { recursive: true, force: true });
  });

  /** A directory of the caller's, and one only root may write. */
  const dirs = (tag: string) => {
    const mine = join(out, `${tag}-mine`);
    mkdirSync(mine);
    chownSync(mine, APP, APP);
    const roots = join(out, `${tag}-root`);
    mkdirSync(roots, { mode: 0o755 });
    return { mine, roots };
  };

  test("relative paths, . and .., and the service's state directory are -193 invalid destination, for root too", async () => {
    const { mine } = dirs("rules");
    expectError(await a.callAs(APP, [], "CopyCacheObject", { pathName: p, destination: "tmp" }), -193, /^CopyCacheObject: invalid destination: tmp$/);
    expectError(await a.callAs(APP, [], "CopyCacheObject", { pathName: p, destination: `${mine}/../rules-mine` }), -193, /^CopyCacheObject: invalid destination: /);
    const before = readdirSync(join(a.stateDir, "filecache"));
    for (const where of [a.stateDir, join(a.stateDir, "filecache"), join(a.stateDir, "filecache", "copies")]) {
      chmodSync(where, 0o777); // even where the mode bits would let anyone write
      for (const r of [await a.callAs(APP, [], "CopyCacheObject", { pathName: p, destination: where }), await a.call("CopyCacheObject", { pathName: p, destination: where })]) {
        expectError(r, -193, `CopyCacheObject: invalid destination: ${where}: the destination belongs to the service`);
      }
    }
    expect(readdirSync(join(a.stateDir, "filecache"))).toEqual(before);
    expect(readdirSync(join(a.stateDir, "filecache", "copies"))).toEqual([]);
    expect(readdirSync(mine)).toEqual([]);
  }, 30000);

  test("the copy is the caller's file; a directory it may not write is -193 no write permission; a symbolic link on the path is -193 invalid destination; nothing written where it points", async () => {
    const { mine, roots } = dirs("link");
    const r = await a.callAs(APP, [], "CopyCacheObject", { pathName: p, destination: mine });
    expect(r).toEqual({ returnValue: true, newPathName: join(mine, "note.txt") });
    const copy = r.newPathName as string;
    expect(statSync(copy).uid).toBe(APP);
    expect(readFileSync(copy, "utf8")).toBe("the object");
    rmSync(copy);
    expectError(await a.callAs(APP, [], "CopyCacheObject", { pathName: p, destination: roots }), -193, `CopyCacheObject: no write permission on destination: ${roots}`);
    const link = join(mine, "link");
    symlinkSync(roots, link);
    const deeper = join(out, "via");
    symlinkSync(out, deeper);
    for (const destination of [link, join(deeper, "link-mine")]) {
      expectError(await a.callAs(APP, [], "CopyCacheObject", { pathName: p, destination }), -193,
        `CopyCacheObject: invalid destination: ${destination}: the path holds a symbolic link`);
    }
    // Root is held to the same path rules: a link is never followed.
    expectError(await a.call("CopyCacheObject", { pathName: p, destination: link }), -193, /the path holds a symbolic link/);
    expect(readdirSync(roots)).toEqual([]);
    expect(readdirSync(mine)).toEqual(["link"]);
  }, 30000);

  test("a dirType object: its tree is made with the caller's rights (-193 where it may not write, nothing left there); the copy's directories and files are the caller's", async () => {
    const { mine, roots } = dirs("tree");
    expect(await a.call("DefineType", { typeName: "trees", loWatermark: 0, hiWatermark: 1 << 20, size: 4 * 4096, dirType: true })).toEqual({ returnValue: true });
    const tree = (await a.callAs(APP, [], "InsertCacheObject", { typeName: "trees", fileName: "album" })).pathName as string;
    mkdirSync(join(tree, "sub"));
    writeFileSync(join(tree, "a.txt"), "top");
    writeFileSync(join(tree, "sub", "b.txt"), "nested");
    expectError(await a.callAs(APP, [], "CopyCacheObject", { pathName: tree, destination: roots }), -193, `CopyCacheObject: no write permission on destination: ${roots}`);
    expect(readdirSync(roots)).toEqual([]);
    const r = await a.callAs(APP, [], "CopyCacheObject", { pathName: tree, destination: mine });
    expect(r).toEqual({ returnValue: true, newPathName: join(mine, "album") });
    for (const [rel, content] of [["a.txt", "top"], ["sub/b.txt", "nested"]]) expect(readFileSync(join(mine, "album", rel!), "utf8")).toBe(content!);
    for (const rel of ["", "sub", "a.txt", "sub/b.txt"]) expect(statSync(join(mine, "album", rel)).uid).toBe(APP);
    expect(await a.call("ExpireCacheObject", { pathName: tree })).toEqual({ returnValue: true });
  }, 30000);

  test("a dirType object whose writer swaps a subdirectory for a symbolic link while it is copied: nothing the link points at is read", async () => {
    const { mine } = dirs("leak");
    const secret = mkdtempSync(join(tmpdir(), "fc-secret-"));
    chmodSync(secret, 0o700);
    writeFileSync(join(secret, "s.txt"), "root only");
    expect(await a.call("DefineType", { typeName: "leaky", loWatermark: 0, hiWatermark: 1 << 20, size: 4 * 4096, dirType: true })).toEqual({ returnValue: true });
    const tree = (await a.callAs(APP, [], "InsertCacheObject", { typeName: "leaky", fileName: "t" })).pathName as string;
    mkdirSync(join(tree, "real"));
    writeFileSync(join(tree, "real", "s.txt"), "the object's own");
    symlinkSync(secret, join(tree, "lnk"));
    const swapper = spawnScript("test/fixtures/swapper.ts", [join(tree, "sub"), join(tree, "real"), join(tree, "lnk"), "3"]);
    try {
      await swapper.waitFor("swapping");
      for (let i = 0; i < 60; i++) {
        const r = await a.callAs(APP, [], "CopyCacheObject", { pathName: tree, destination: mine, fileName: `c${i}` });
        if (!r.returnValue) expect([-193, -192]).toContain(r.errorCode as number);
      }
    } finally {
      await swapper.kill();
    }
    const read: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(dir, e.name));
        else if (e.isFile()) read.push(readFileSync(join(dir, e.name), "utf8"));
      }
    };
    walk(mine);
    expect(read.length).toBeGreaterThan(0);
    expect(read.filter((c) => c !== "the object's own")).toEqual([]);
    expect(await a.call("ExpireCacheObject", { pathName: tree })).toEqual({ returnValue: true });
    rmSync(secret, { recursive: true, force: true });
  }, 120000);

  test("without a destination (the copy directory, written with the service's rights): only a caller whose uid or groups may write it copies there", async () => {
    const { gids } = testAccounts();
    const copies = join(a.stateDir, "filecache", "copies");
    chownSync(copies, 0, gids["devservices-test"]);
    chmodSync(copies, 0o775);
    expectError(await a.callAs(APP, [], "CopyCacheObject", { pathName: p }), -193, `CopyCacheObject: no write permission on destination: ${copies}`);
    expectError(await a.callAs(APP, [gids["devservices-cache"]], "CopyCacheObject", { pathName: p }), -193, `CopyCacheObject: no write permission on destination: ${copies}`);
    expect(readdirSync(copies)).toEqual([]);
    const r = await a.callAs(APP, [gids["devservices-test"]], "CopyCacheObject", { pathName: p });
    expect(r).toEqual({ returnValue: true, newPathName: join(copies, "note.txt") });
    const copy = r.newPathName as string;
    expect(statSync(copy).uid).toBe(APP);
    expect(readFileSync(copy, "utf8")).toBe("the object");
    rmSync(copy);
    chownSync(copies, 0, 0);
    chmodSync(copies, 0o755);
  }, 30000);

  test("a directory swapped with a symbolic link while copies are made: the directory outside is never written", async () => {
    const { mine, roots } = dirs("swap");
    const name = join(mine, "dest");
    const real = join(mine, "real");
    const link = join(mine, "lnk");
    mkdirSync(real);
    chownSync(real, APP, APP);
    symlinkSync(roots, link);
    const swapper = spawnScript("test/fixtures/swapper.ts", [name, real, link]);
    try {
      await swapper.waitFor("swapping");
      const answers: string[] = [];
      for (let i = 0; i < 40; i++) {
        const r = await a.callAs(APP, [], "CopyCacheObject", { pathName: p, destination: name, fileName: `c${i}.txt` });
        answers.push(r.returnValue ? "copied" : `${r.errorCode}`);
        if (r.returnValue) expect(r.newPathName).toBe(join(name, `c${i}.txt`));
        else expect([-193, -192]).toContain(r.errorCode as number);
      }
      expect(readdirSync(roots)).toEqual([]);
    } finally {
      await swapper.kill();
    }
    expect(readdirSync(roots)).toEqual([]);
    // The copies that were made are the caller's (killed mid-swap, the directory may be under either name).
    const at = [real, name].find((d) => existsSync(d) && lstatSync(d).isDirectory())!;
    for (const f of readdirSync(at)) expect(statSync(join(at, f)).uid).toBe(APP);
  }, 120000);
});
