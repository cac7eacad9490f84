// The mtp plugin: libmtp loaded with bun:ffi on the indexer's background thread when
// installed (detection runs; no MTP device is attached here, so none is listed);
// without the library, or with a library that is not libmtp, the plugin is
// unavailable and getPlugin/runDetect say why.
import { test, expect, afterEach } from "bun:test";
import { existsSync } from "node:fs";
import { miEnv, expectError, type MiEnv } from "./env";
import type { Json } from "../../src/core/errors";

const LIBMTP = ["/usr/lib/x86_64-linux-gnu/libmtp.so.9", "/usr/lib/aarch64-linux-gnu/libmtp.so.9", "/usr/lib/libmtp.so.9"].find(existsSync);
const LIBC = ["/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"].find(existsSync);
let mi: MiEnv | undefined;
afterEach(async () => {
  await mi?.stop();
  mi = undefined;
});
const mtp = async () => ((await mi!.call("getDeviceList")).pluginList as Json[]).find((p) => p.uri === "mtp");

test("without libmtp: listed in the factory, unavailable with the reason", async () => {
  mi = await miEnv({ plugins: ["storage", "mtp"], mtpLibrary: "libmtp-not-here.so.9" });
  expect(await mi.call("getPluginList")).toEqual({ returnValue: true, pluginList: [{ uri: "storage" }, { uri: "mtp" }] });
  expectError(await mi.call("getPlugin", { uri: "mtp" }), -1, "Plugin unavailable: mtp: libmtp (libmtp-not-here.so.9) is not installed");
  expectError(await mi.call("runDetect", { uri: "mtp" }), -1, /^Plugin unavailable: mtp: /);
  expect(await mtp()).toMatchObject({ active: false, deviceList: [] });
  // The other plugins are unaffected.
  expect(await mi.call("runDetect")).toMatchObject({ returnValue: true });
});

test.skipIf(!LIBC)("a library that is not libmtp: unavailable once detection tried it", async () => {
  mi = await miEnv({ plugins: ["mtp"], mtpLibrary: LIBC!, detect: false });
  expect((await mi.call("getPlugin", { uri: "mtp" })).returnValue).toBe(true);
  expectError(await mi.call("runDetect", { uri: "mtp" }), -1, /^Plugin unavailable: mtp: libmtp: /);
  expectError(await mi.call("getPlugin", { uri: "mtp" }), -1, /^Plugin unavailable: mtp: libmtp: /);
});

test.skipIf(!LIBMTP)("with libmtp: detection runs (no MTP device attached here)", async () => {
  mi = await miEnv({ plugins: ["mtp"], mtpLibrary: LIBMTP!, detect: false });
  expect(await mi.call("runDetect", { uri: "mtp" })).toEqual({ returnValue: true, errorCode: 0, errorText: "No Error" });
  expect(await mtp()).toEqual({ uri: "mtp", active: true, deviceList: [] });
});
