// Names a hostile application sends: the service runs as the shipped binary in a
// process of its own, the application is the binary's `call` run as uid 65534.
// InsertCacheObject's fileName must be one file name (it is the copy's default name):
// empty, ".", "..", "/", control characters and more than 255 UTF-8 bytes are refused
// with -200 and nothing is created. CopyCacheObject's name and destination with
// control characters are refused (-192, -193) and nothing is written.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { BusClient } from "../../src/bus/client";
import { BINARY, eventually, openBusToAll, binaryBuilt, binaryForAnyUser, callAsUser } from "../helpers/harness";
import { FC, expectError, fcEnv } from "./env";
import type { Json } from "../../src/core/errors";

const skip = process.getuid?.() !== 0 ? "needs root (setpriv)" : !binaryBuilt() ? "dist/devservices is not built" : null;
let bus: PrivateBus;
let server: Subprocess;
let dir: string;
let app: string;
let client: BusClient;

beforeAll(async () => {
  if (skip) return;
  bus = await startPrivateBus();
  openBusToAll(bus.address);
  dir = mkdtempSync(join(tmpdir(), "fc-names-"));
  chmodSync(dir, 0o755);
  server = spawn([BINARY, "serve", "--bus", bus.address, "--state-dir", join(dir, "state"), "--log-level", "error", "filecache"], { env: { ...process.env },
    stdout: "ignore",
    stderr: "inherit",
  });
  client = await BusClient.connect(bus.address);
  await eventually(async () => (await client.call(FC, "GetVersion", {}).catch(() => null)) !== null, 10000, 50);
  expect((await client.call(FC, "DefineType", { typeName: "docs", loWatermark: 0, hiWatermark: 4 * 1024 * 1024, size: 100 })).returnValue).toBe(true);
  app = binaryForAnyUser(mkdtempSync(join(tmpdir(), "fc-names-app-")));
});
afterAll(async () => {
  if (skip) return;
  client?.close();
  server?.kill(9);
  await server?.exited;
  await bus?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
  rmSync(join(app, ".."), { recursive: true, force: true });
});

/** One call as uid 65534 through the shipped binary. */
async function asNobody(method: string, payload: Json): Promise<Json> {
  return callAsUser({ app, bus: bus.address, cwd: join(app, ".."), uid: 65534 }, `${FC}/${method}`, payload);
}

const typeDir = () => join(dir, "state", "filecache", "cache", "docs");

test.skipIf(!!skip)("InsertCacheObject refuses a fileName that is not one file name (-200) and creates nothing", async () => {
  const bad: [string, RegExp][] = [
    ["", /the name is empty$/],
    [".", /the name is "\."$/],
    ["..", /the name is "\.\."$/],
    ["../..", /the name holds '\/'$/],
    ["../../etc/passwd", /the name holds '\/'$/],
    ["a/b.txt", /the name holds '\/'$/],
    ["a\u0000b.txt", /the name holds control characters$/],
    ["\u0000", /the name holds control characters$/],
    ["line\nbreak.txt", /the name holds control characters$/],
    ["esc\u001b[2J.txt", /the name holds control characters$/],
    ["del\u007f.txt", /the name holds control characters$/],
    ["n".repeat(256), /the name is 256 bytes long, more than 255$/],
    ["é".repeat(128), /the name is 256 bytes long, more than 255$/],
    ["n".repeat(4000), /the name is 4000 bytes long, more than 255$/],
  ];
  for (const [fileName, why] of bad) {
    const r = await asNobody("InsertCacheObject", { typeName: "docs", fileName });
    expectError(r, -200, /^InsertCacheObject: invalid fileName: /, why);
    // The name itself is never echoed.
    if (fileName.length > 2) expect(r.errorText as string).not.toContain(fileName);
  }
  expect(readdirSync(typeDir())).toEqual([]);
  expect(await client.call(FC, "GetCacheTypeStatus", { typeName: "docs" })).toEqual({ returnValue: true, size: 0, numObjs: 0 });
  // At the limit (255 bytes of UTF-8, two-byte characters included) and ordinary names are taken.
  for (const fileName of ["n".repeat(255), "é".repeat(127) + "x", "report.final.pdf", "..hidden", "a b (1).txt", "Ünïcödé.jpg"]) {
    const r = await asNobody("InsertCacheObject", { typeName: "docs", fileName });
    expect(r.returnValue).toBe(true);
    expect(await client.call(FC, "GetCacheObjectFilename", { pathName: r.pathName as string })).toEqual({ returnValue: true, fileName });
    await client.call(FC, "ExpireCacheObject", { pathName: r.pathName as string });
  }
}, 60000);

test.skipIf(!!skip)("CopyCacheObject refuses a name with control characters (-192) or over 255 bytes, and a destination with control characters (-193); nothing is written", async () => {
  const p = (await asNobody("InsertCacheObject", { typeName: "docs", fileName: "ok.txt" })).pathName as string;
  const dest = join(dir, "dest");
  mkdirSync(dest, { mode: 0o777 });
  chmodSync(dest, 0o777);
  for (const fileName of ["a\nb.txt", "a\u0000b", "\u0001", "tab\t.txt", "del\u007f", "\u001b]0;title\u0007.txt"]) {
    const r = await asNobody("CopyCacheObject", { pathName: p, destination: dest, fileName });
    expectError(r, -192, /^CopyCacheObject: no file name specified or found for .*: the name holds control characters$/);
    expect(r.errorText as string).not.toContain(fileName);
  }
  expectError(await asNobody("CopyCacheObject", { pathName: p, destination: dest, fileName: "é".repeat(128) }), -192, /the name is too long for the destination \(256 bytes/);
  // A directory whose name holds a newline exists, and still is no destination.
  const nl = join(dir, "evil\ndir");
  mkdirSync(nl, { mode: 0o777 });
  chmodSync(nl, 0o777);
  for (const destination of [nl, join(dir, "x\u0000y"), join(dest, "\u001b[2J")]) {
    const r = await asNobody("CopyCacheObject", { pathName: p, destination });
    expectError(r, -193, /^CopyCacheObject: invalid destination: ".*": the path holds control characters$/);
    expect(r.errorText as string).not.toMatch(/[\u0000-\u001f\u007f]/);
  }
  expect(readdirSync(dest)).toEqual([]);
  expect(readdirSync(nl)).toEqual([]);
  // An ordinary copy still works.
  const ok = await asNobody("CopyCacheObject", { pathName: p, destination: dest, fileName: "copy.txt" });
  expect(ok).toEqual({ returnValue: true, newPathName: join(dest, "copy.txt") });
}, 60000);

test("maxFileNameBytes (configuration) bounds both names", async () => {
  const t = await fcEnv({ maxFileNameBytes: 16 });
  try {
    await t.call("DefineType", { typeName: "docs", loWatermark: 0, hiWatermark: 1024 * 1024, size: 100 });
    expectError(await t.call("InsertCacheObject", { typeName: "docs", fileName: "x".repeat(17) }), -200, /^InsertCacheObject: invalid fileName: the name is 17 bytes long, more than 16$/);
    const r = await t.call("InsertCacheObject", { typeName: "docs", fileName: "x".repeat(16) });
    expect(r.returnValue).toBe(true);
    const dest = mkdtempSync(join(tmpdir(), "fc-names-copy-"));
    expectError(await t.call("CopyCacheObject", { pathName: r.pathName as string, destination: dest, fileName: "y".repeat(17) }), -192, /too long for the destination \(17 bytes/);
    expect(readdirSync(dest)).toEqual([]);
    rmSync(dest, { recursive: true, force: true });
  } finally {
    await t.stop();
  }
});
