// Cache objects: the object state table (insert, write completion, subscribe,
// expire, touch, resize, copy) and the object error rows.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fcEnv, expectError, BLOCK, FC, type FcEnv } from "./env";
import { spawnScript, eventually, BUN, ROOT, binaryForAnyUser, callAsUser, staysTrue } from "../helpers/harness";

const MiB = 1024 * 1024;
let t: FcEnv;
beforeAll(async () => {
  t = await fcEnv({ totalCacheSpace: 8 * MiB });
  await t.call("DefineType", { typeName: "docs", loWatermark: 0, hiWatermark: 4 * MiB, size: 10000, cost: 20, lifetime: 30 });
  await t.call("DefineType", { typeName: "backup", loWatermark: 0, hiWatermark: 1 * MiB, size: 3 * BLOCK, dirType: true });
});
afterAll(() => t.stop());

const insert = async (p: Record<string, unknown>) => {
  const r = await t.call("InsertCacheObject", { typeName: "docs", ...p });
  expect(r.returnValue).toBe(true);
  return r.pathName as string;
};
const typeStatus = (typeName = "docs") => t.call("GetCacheTypeStatus", { typeName });

test("none -> present: InsertCacheObject returns a pathName in the cache directory keeping the extension of fileName", async () => {
  const p = await insert({ fileName: "report.final.pdf" });
  expect(p.startsWith(join(t.env.stateDir, "filecache", "cache", "docs") + "/")).toBe(true);
  expect(p.endsWith(".pdf")).toBe(true);
  expect(statSync(p).size).toBe(0);
  expect(await t.call("GetCacheObjectFilename", { pathName: p })).toEqual({ returnValue: true, fileName: "report.final.pdf" });
  // Omitted size takes the type default; space is counted in whole blocks.
  expect(await t.call("GetCacheObjectSize", { pathName: p })).toEqual({ returnValue: true, size: 10000 });
  expect(await typeStatus()).toEqual({ returnValue: true, size: 3 * BLOCK, numObjs: 1 });
  const q = await insert({ fileName: "noext", size: 1 });
  expect(q.split("/").pop()).toMatch(/^[0-9a-f]{8,}$/);
  expect(await typeStatus()).toMatchObject({ size: 4 * BLOCK, numObjs: 2 });
  for (const x of [p, q]) expect((await t.call("ExpireCacheObject", { pathName: x })).returnValue).toBe(true);
});

test("present, not in use -> ExpireCacheObject -> removed", async () => {
  const p = await insert({ fileName: "a.txt" });
  writeFileSync(p, "hello");
  expect(await t.call("ExpireCacheObject", { pathName: p })).toEqual({ returnValue: true });
  expect(existsSync(p)).toBe(false);
  expect(await typeStatus()).toMatchObject({ size: 0, numObjs: 0 });
  expectError(await t.call("GetCacheObjectSize", { pathName: p }), -199, /^GetCacheObjectSize: object does not exist: /, p);
  expectError(await t.call("GetCacheObjectFilename", { pathName: p }), -199, /^GetCacheObjectFilename: object does not exist: /, p);
});

test("insert with subscribe: written smaller than declared -> present with the recorded size corrected (cancel)", async () => {
  const sub = await t.client.subscribe(FC, "InsertCacheObject", { typeName: "docs", fileName: "s.bin", size: 50000 }, () => {});
  expect(sub.first).toMatchObject({ returnValue: true, subscribed: true });
  const p = sub.first.pathName as string;
  expect(await typeStatus()).toMatchObject({ size: 13 * BLOCK, numObjs: 1 });
  writeFileSync(p, Buffer.alloc(5000));
  // Still being written: the declared size stands and it cannot be expired.
  expect(await t.call("GetCacheObjectSize", { pathName: p })).toMatchObject({ size: 50000 });
  expectError(await t.call("ExpireCacheObject", { pathName: p }), -198);
  await sub.cancel();
  // The write completed but the object was marked for removal: gone now.
  await eventually(async () => !existsSync(p));

  const sub2 = await t.client.subscribe(FC, "InsertCacheObject", { typeName: "docs", fileName: "s2.bin", size: 50000 }, () => {});
  const p2 = sub2.first.pathName as string;
  writeFileSync(p2, Buffer.alloc(5000));
  await sub2.cancel();
  await eventually(async () => (await t.call("GetCacheObjectSize", { pathName: p2 })).size === 5000);
  expect(await typeStatus()).toMatchObject({ size: 2 * BLOCK, numObjs: 1 });
  await t.call("ExpireCacheObject", { pathName: p2 });
});

test("insert with subscribe: written larger than declared -> removed automatically when the writer disconnects (SIGKILL)", async () => {
  const w = spawnScript("test/fixtures/filecache-client.ts", ["writer", JSON.stringify({ typeName: "docs", fileName: "big.bin", size: 100 }), "5000"], {
    DEVSERVICES_BUS: t.env.bus.address,
  });
  const p = (await w.waitFor("written ")).slice("written ".length);
  expect(await t.call("GetCacheObjectSize", { pathName: p })).toMatchObject({ returnValue: true, size: 100 });
  await w.kill("SIGKILL");
  await eventually(async () => (await t.call("GetCacheObjectSize", { pathName: p })).returnValue === false, 5000);
  expect(existsSync(p)).toBe(false);
  expect(await typeStatus()).toMatchObject({ size: 0, numObjs: 0 });

  // Written exactly the declared size: stays as it is.
  const w2 = spawnScript("test/fixtures/filecache-client.ts", ["writer", JSON.stringify({ typeName: "docs", fileName: "ok.bin", size: 100 }), "100"], {
    DEVSERVICES_BUS: t.env.bus.address,
  });
  const p2 = (await w2.waitFor("written ")).slice("written ".length);
  await w2.kill("SIGKILL");
  await eventually(async () => (await typeStatus()).numObjs === 1 && (await t.call("ExpireCacheObject", { pathName: p2 })).returnValue === true, 5000);
});

test("present -> SubscribeCacheObject -> subscribed; ExpireCacheObject is deferred (-198) until the last subscription ends", async () => {
  const p = await insert({ fileName: "held.txt" });
  const s1 = await t.client.subscribe(FC, "SubscribeCacheObject", { pathName: p }, () => {});
  expect(s1.first).toEqual({ returnValue: true, subscribed: true });
  const other = spawnScript("test/fixtures/filecache-client.ts", ["hold", p], { DEVSERVICES_BUS: t.env.bus.address });
  await other.waitFor("held");
  expectError(await t.call("ExpireCacheObject", { pathName: p }), -198, /^ExpireCacheObject: expiry deferred, object in use: /, p);
  expect(existsSync(p)).toBe(true);
  await s1.cancel();
  expect((await t.call("GetCacheObjectSize", { pathName: p })).returnValue).toBe(true);
  await other.kill("SIGKILL");
  await eventually(async () => !existsSync(p), 5000);
  expectError(await t.call("TouchCacheObject", { pathName: p }), -199, /^TouchCacheObject: object not located: /);
});

test("SubscribeCacheObject subscribes unconditionally (the spec's request is pathName alone): a plain call holds until its caller leaves", async () => {
  const q = await insert({ fileName: "q.txt" });
  const plain = await t.env.client();
  expect(await plain.call(FC, "SubscribeCacheObject", { pathName: q })).toEqual({ returnValue: true, subscribed: true });
  expect(await plain.call(FC, "SubscribeCacheObject", { pathName: q, subscribe: false })).toEqual({ returnValue: true, subscribed: true });
  expectError(await t.call("ExpireCacheObject", { pathName: q }), -198, /^ExpireCacheObject: expiry deferred/);
  expect(t.env.rt!.server.stats().leases).toBe(2);
  plain.close();
  // Its subscriptions (and their leases) went with the connection; the deferred expiry ran.
  await eventually(async () => !existsSync(q), 5000);
  await eventually(() => t.env.rt!.server.stats().leases === 0);
  expect(t.env.rt!.server.stats().topics).toBe(0);
});

test("an object removed while held (its file deleted behind the cache's back) ends its subscriptions", async () => {
  const p = await insert({ fileName: "h.txt" });
  const held = await t.client.subscribe(FC, "SubscribeCacheObject", { pathName: p }, () => {});
  expect(held.first).toEqual({ returnValue: true, subscribed: true });
  unlinkSync(p);
  expectError(await t.call("TouchCacheObject", { pathName: p }), -199, /path no longer found in cache/);
  await held.ended;
  await eventually(() => t.env.rt!.server.stats().leases === 0 && t.env.rt!.server.stats().topics === 0);
  expect(await typeStatus()).toMatchObject({ numObjs: 0, size: 0 });
});

test("sizes and lifetimes are Numbers (spec): a fraction of a byte counts as the next whole byte; lifetimes and costs keep theirs", async () => {
  const p = await insert({ fileName: "f.bin", size: 10.5, cost: 2.5, lifetime: 1.5 });
  expect(await t.call("GetCacheObjectSize", { pathName: p })).toEqual({ returnValue: true, size: 11 });
  expect(await t.call("ResizeCacheObject", { pathName: p, newSize: 100.2 })).toEqual({ returnValue: true, newSize: 101 });
  expect(await t.call("GetCacheObjectSize", { pathName: p })).toEqual({ returnValue: true, size: 101 });
  expect(await typeStatus()).toMatchObject({ size: BLOCK, numObjs: 1 });
  expect(await t.call("ExpireCacheObject", { pathName: p })).toEqual({ returnValue: true });
});

test("TouchCacheObject keeps the object present", async () => {
  const p = await insert({ fileName: "t.txt" });
  expect(await t.call("TouchCacheObject", { pathName: p })).toEqual({ returnValue: true });
  expect(existsSync(p)).toBe(true);
  await t.call("ExpireCacheObject", { pathName: p });
});

test("-199 on object methods: invalid ID from the path, type not found for the ID, object not located, path no longer found", async () => {
  const p = await insert({ fileName: "x.txt" });
  const cacheDir = dirname(dirname(p));
  const cases: [string, RegExp][] = [
    ["/etc/passwd", /invalid object ID derived from the path: \/etc\/passwd/],
    [join(cacheDir, "docs", "notanid.txt"), /invalid object ID derived from the path/],
    ["relative/path", /invalid object ID derived from the path/],
    [join(cacheDir, "nosuchtype", "00000001.txt"), /cache type not found for the ID of /],
    [join(cacheDir, "docs", "0000ffff.txt"), /object not located: /],
    [p.replace(/\.txt$/, ".pdf"), /object not located: /],
  ];
  for (const method of ["CopyCacheObject", "ExpireCacheObject", "ResizeCacheObject", "SubscribeCacheObject", "TouchCacheObject"]) {
    for (const [pathName, text] of cases) {
      const r = await t.call(method, { pathName, newSize: 10 });
      expectError(r, -199, new RegExp(`^${method}: `), text);
      if (method === "SubscribeCacheObject") expect(r.subscribed).toBe(false);
    }
  }
  for (const method of ["GetCacheObjectSize", "GetCacheObjectFilename"])
    for (const [pathName] of cases) expectError(await t.call(method, { pathName }), -199, new RegExp(`^${method}: object does not exist: `));
  // The file vanished behind the cache's back: reported once, and the object is dropped.
  await t.call("ExpireCacheObject", { pathName: p });
  for (const method of ["CopyCacheObject", "ExpireCacheObject", "ResizeCacheObject", "SubscribeCacheObject", "TouchCacheObject"]) {
    const q = await insert({ fileName: "v.txt" });
    unlinkSync(q);
    expectError(await t.call(method, { pathName: q, newSize: 10 }), -199, new RegExp(`^${method}: path no longer found in cache: `), q);
    expectError(await t.call(method, { pathName: q, newSize: 10 }), -199, /object not located/);
  }
  expect(await typeStatus()).toMatchObject({ numObjs: 0, size: 0 });
});

test("InsertCacheObject errors: -200 no such type defined, size required, dirType size; -199 type does not exist, no space", async () => {
  expectError(await t.call("InsertCacheObject", { typeName: ".x", fileName: "a" }), -200, /^InsertCacheObject: no such type defined: /);
  expectError(await t.call("InsertCacheObject", { typeName: "", fileName: "a" }), -200, /^InsertCacheObject: no such type defined/);
  expectError(await t.call("InsertCacheObject", { typeName: "nosuch", fileName: "a" }), -199, /^InsertCacheObject: type does not exist: nosuch$/);
  await t.call("DefineType", { typeName: "nodefault", loWatermark: 0, hiWatermark: 65536 });
  expectError(await t.call("InsertCacheObject", { typeName: "nodefault", fileName: "a" }), -200, /^InsertCacheObject: size is required, type nodefault/);
  expectError(await t.call("InsertCacheObject", { typeName: "nodefault", fileName: "a", size: 0 }), -200, /^InsertCacheObject: invalid size/);
  expectError(await t.call("InsertCacheObject", { typeName: "nodefault", fileName: "a", size: 10, cost: 101 }), -200, /^InsertCacheObject: invalid cost/);
  expectError(await t.call("InsertCacheObject", { typeName: "backup", fileName: "d", size: 4096 }), -200, /^InsertCacheObject: size must be greater than 1 block .*backup/);
  expectError(await t.call("InsertCacheObject", { typeName: "nodefault", fileName: "a", size: 65537 }), -199, /^InsertCacheObject: no space of the requested size \(65537 bytes\) in type nodefault/);
  expectError(await t.call("InsertCacheObject", { typeName: "docs", fileName: "a", size: 9 * MiB }), -199, /no space of the requested size/);
  expect(await typeStatus("nodefault")).toMatchObject({ numObjs: 0 });
});

test("dirType: the object is a directory; its written size is the bytes of the files inside", async () => {
  const sub = await t.client.subscribe(FC, "InsertCacheObject", { typeName: "backup", fileName: "set1" }, () => {});
  const p = sub.first.pathName as string;
  expect(statSync(p).isDirectory()).toBe(true);
  mkdirSync(join(p, "sub"));
  writeFileSync(join(p, "a"), Buffer.alloc(1000));
  writeFileSync(join(p, "sub", "b"), Buffer.alloc(2000));
  await sub.cancel();
  await eventually(async () => (await t.call("GetCacheObjectSize", { pathName: p })).size === 3000);
  const c = await t.call("CopyCacheObject", { pathName: p });
  expect(readFileSync(join(c.newPathName as string, "sub", "b")).length).toBe(2000);
  expect(await t.call("ExpireCacheObject", { pathName: p })).toEqual({ returnValue: true });
  expect(existsSync(p)).toBe(false);
});

test("ResizeCacheObject declares a new size; -194 when it cannot", async () => {
  const p = await insert({ fileName: "r.bin", size: 100 });
  expect(await t.call("ResizeCacheObject", { pathName: p, newSize: 9000 })).toEqual({ returnValue: true, newSize: 9000 });
  expect(await t.call("GetCacheObjectSize", { pathName: p })).toMatchObject({ size: 9000 });
  expect(await typeStatus()).toMatchObject({ size: 3 * BLOCK });
  writeFileSync(p, Buffer.alloc(6000));
  expectError(await t.call("ResizeCacheObject", { pathName: p, newSize: 5000 }), -194, /^ResizeCacheObject: unable to resize .*already holds 6000 bytes/);
  expectError(await t.call("ResizeCacheObject", { pathName: p, newSize: 5 * MiB }), -194, /^ResizeCacheObject: unable to resize .*no space/);
  expectError(await t.call("ResizeCacheObject", { pathName: p, newSize: -1 }), -194, /^ResizeCacheObject: invalid newSize/);
  expect(await t.call("ResizeCacheObject", { pathName: p, newSize: 6000 })).toEqual({ returnValue: true, newSize: 6000 });
  expect(await typeStatus()).toMatchObject({ size: 2 * BLOCK });
  await t.call("ExpireCacheObject", { pathName: p });
});

test("CopyCacheObject: default and given names, unique names base-(n).ext, -192 and -193", async () => {
  const p = await insert({ fileName: "photo.jpg", size: 10 });
  writeFileSync(p, "0123456789");
  // Destinations a client names are outside the service's state directory (refused there: owners.test.ts).
  const outside = mkdtempSync(join(tmpdir(), "fc-dest-"));
  const dest = join(outside, "out");
  mkdirSync(dest);
  const names: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await t.call("CopyCacheObject", { pathName: p, destination: dest });
    expect(r.returnValue).toBe(true);
    names.push((r.newPathName as string).slice(dest.length + 1));
  }
  expect(names).toEqual(["photo.jpg", "photo-(1).jpg", "photo-(2).jpg"]);
  expect(readFileSync(join(dest, "photo-(2).jpg"), "utf8")).toBe("0123456789");
  expect(await t.call("CopyCacheObject", { pathName: p, destination: dest, fileName: "renamed" })).toEqual({ returnValue: true, newPathName: join(dest, "renamed") });
  expect((await t.call("CopyCacheObject", { pathName: p, destination: dest, fileName: "renamed" })).newPathName).toBe(join(dest, "renamed-(1)"));
  // Without destination: the configured copy directory.
  expect((await t.call("CopyCacheObject", { pathName: p })).newPathName).toBe(join(t.env.stateDir, "filecache", "copies", "photo.jpg"));

  expectError(await t.call("CopyCacheObject", { pathName: p, destination: join(dest, "missing") }), -193, /^CopyCacheObject: invalid destination: /);
  expectError(await t.call("CopyCacheObject", { pathName: p, destination: "relative" }), -193, /^CopyCacheObject: invalid destination: relative/);
  expectError(await t.call("CopyCacheObject", { pathName: p, destination: join(dest, "photo.jpg") }), -192, /^CopyCacheObject: destination not a directory: /);
  expectError(await t.call("CopyCacheObject", { pathName: p, destination: dest, fileName: "" }), -192, /^CopyCacheObject: no file name specified or found for /);
  expectError(await t.call("CopyCacheObject", { pathName: p, destination: dest, fileName: "a/b" }), -192, /no file name specified or found/);
  // The copy itself failing: a name longer than the file system takes is -192; /proc and
  // /sys take no files (-193). No errno text, and no path of the cache's own, in the reply.
  const long = await t.call("CopyCacheObject", { pathName: p, destination: dest, fileName: "n".repeat(300) });
  expectError(long, -192, /^CopyCacheObject: no file name specified or found: the name is too long for the destination \(300 bytes/);
  for (const where of ["/proc", "/sys"]) {
    const r = await t.call("CopyCacheObject", { pathName: p, destination: where });
    expectError(r, -193, new RegExp(`^CopyCacheObject: (invalid destination|no write permission on destination): ${where}`));
  }
  for (const r of [long, await t.call("CopyCacheObject", { pathName: p, destination: "/proc" })]) {
    expect(r.errorText as string).not.toContain(t.env.stateDir);
    expect(r.errorText as string).not.toMatch(/ENAMETOOLONG|ENOENT|EACCES|errno|copyfile/i);
  }
  // No object has an empty name to copy under: InsertCacheObject refuses it (names.test.ts).
  expectError(await t.call("InsertCacheObject", { typeName: "docs", fileName: "", size: 10 }), -200, /^InsertCacheObject: invalid fileName: the name is empty$/);
  const full = join(outside, "full");
  mkdirSync(full);
  writeFileSync(join(full, "x.bin"), "");
  for (let i = 1; i <= 999; i++) writeFileSync(join(full, `x-(${i}).bin`), "");
  expectError(await t.call("CopyCacheObject", { pathName: p, destination: full, fileName: "x.bin" }), -192, /^CopyCacheObject: no unique destination name for x.bin in /);

  // Write permission is the caller's: an application running as nobody may not write a root-owned 0755 directory.
  chmodSync(t.env.bus.dir, 0o755);
  const locked = join(outside, "locked");
  mkdirSync(locked, { mode: 0o755 });
  const open = join(outside, "open");
  mkdirSync(open, { mode: 0o777 });
  chmodSync(open, 0o777);
  chmodSync(outside, 0o755);
  // The other application is the shipped binary's `call`, run from a directory nobody
  // can reach: the checkout itself may sit in a directory only root may enter.
  const appDir = mkdtempSync(join(tmpdir(), "fc-nobody-"));
  const app = binaryForAnyUser(appDir);
  const asNobody = (payload: object) => callAsUser({ app, bus: t.env.bus.address, cwd: appDir, uid: 65534 }, `${FC}/CopyCacheObject`, payload);
  expectError(await asNobody({ pathName: p, destination: locked }), -193, /^CopyCacheObject: no write permission on destination: /, locked);
  const ok = await asNobody({ pathName: p, destination: open });
  expect(ok.returnValue).toBe(true);
  expect(statSync(ok.newPathName).uid).toBe(65534);
  await t.call("ExpireCacheObject", { pathName: p });
  rmSync(appDir, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

test("declared sizes hold: written larger than declared, a present object goes when its writer closes the file", async () => {
  await t.call("DefineType", { typeName: "small", loWatermark: 0, hiWatermark: 8192 });
  const r = await t.call("InsertCacheObject", { typeName: "small", fileName: "big.bin", size: 100 });
  const p = r.pathName as string;
  expect(await typeStatus("small")).toEqual({ returnValue: true, size: BLOCK, numObjs: 1 });
  // 20 MB into a 100-byte object: the close (IN_CLOSE_WRITE on the event source) removes it, unasked.
  writeFileSync(p, Buffer.alloc(20 * MiB));
  await eventually(() => !existsSync(p), 3000);
  expect(await typeStatus("small")).toEqual({ returnValue: true, size: 0, numObjs: 0 });
  expectError(await t.call("GetCacheObjectSize", { pathName: p }), -199, /object does not exist/);
  expectError(await t.call("CopyCacheObject", { pathName: p }), -199);
  // Written within its declared size, an object stays.
  const fits = (await t.call("InsertCacheObject", { typeName: "small", fileName: "ok.bin", size: 100 })).pathName as string;
  writeFileSync(fits, Buffer.alloc(100));
  await staysTrue(() => existsSync(fits), 300, "an object written within its size is not removed on close");
  expect(await t.call("GetCacheObjectSize", { pathName: fits })).toEqual({ returnValue: true, size: 100 });
  await t.call("ExpireCacheObject", { pathName: fits });
});

test("declared sizes hold: a writer still holding the file open loses the object at the next call that uses it; nothing oversized is copied", async () => {
  const { openSync, writeSync, closeSync } = await import("node:fs");
  const dest = mkdtempSync(join(tmpdir(), "fc-copy-"));
  for (const [call, payload] of [
    ["GetCacheObjectSize", {}],
    ["CopyCacheObject", { destination: dest }],
    ["TouchCacheObject", {}],
    ["GetCacheTypeStatus", null],
    ["GetCacheStatus", null],
  ] as const) {
    const p = (await t.call("InsertCacheObject", { typeName: "small", fileName: "open.bin", size: 100 })).pathName as string;
    const fd = openSync(p, "w");
    try {
      writeSync(fd, Buffer.alloc(64 * 1024));
      if (payload === null) {
        // A status call counts only what is within its declared size.
        const r = await t.call(call, call === "GetCacheTypeStatus" ? { typeName: "small" } : {});
        expect(r).toMatchObject(call === "GetCacheTypeStatus" ? { size: 0, numObjs: 0 } : { returnValue: true });
      } else {
        expectError(await t.call(call, { pathName: p, ...payload }), -199, call === "GetCacheObjectSize" ? /object does not exist/ : /path no longer found in cache/);
      }
      expect(existsSync(p)).toBe(false);
    } finally {
      closeSync(fd);
    }
  }
  expect(readdirSync(dest)).toEqual([]);
  rmSync(dest, { recursive: true, force: true });
});

test("a copy never lands inside the cache's own directory (it would be nobody's file): -193", async () => {
  const p = await insert({ fileName: "c.txt", size: 10 });
  writeFileSync(p, "x");
  for (const where of [dirname(p), dirname(dirname(p))]) {
    expectError(await t.call("CopyCacheObject", { pathName: p, destination: where }), -193, /invalid destination: .*: the destination is inside the cache$/);
  }
  await t.call("ExpireCacheObject", { pathName: p });
});
