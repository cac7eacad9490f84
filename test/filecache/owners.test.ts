// Types and objects belong to the uid that made them, stored with them: only that
// uid or root may change, resize or remove them; defining, changing and deleting
// types is for root and devservices-cache. The service runs in its own process;
// the other applications are uid 65534 and the devservices user's uid (separate
// processes, setpriv; the bus takes only uids the system knows).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testAccounts } from "../layer/accounts";
import { apart, cannotRun, type Apart } from "./apart";
import { expectError } from "./env";

const skip = cannotRun();
if (skip) console.warn(`file cache owner tests skipped: ${skip}`);

const APP = 65534;
let OTHER: number;
const MiB = 1024 * 1024;

describe.skipIf(skip !== null)("owners of types and objects", () => {
  let a: Apart;
  let cache: number;
  beforeAll(async () => {
    const accounts = testAccounts();
    cache = accounts.gids["devservices-cache"];
    OTHER = accounts.uid;
    a = await apart({ totalCacheSpace: 16 * MiB });
    expect(await a.call("DefineType", { typeName: "shared", loWatermark: 0, hiWatermark: 4 * MiB, size: 100 })).toEqual({ returnValue: true });
  }, 30000);
  afterAll(() => a?.stop());

  const describeType = async (typeName: string) => a.call("DescribeType", { typeName });

  test("DefineType, ChangeType, DeleteType: refused (-193) without devservices-cache, nothing defined or changed", async () => {
    for (const [method, payload] of [
      ["DefineType", { typeName: "mine", loWatermark: 0, hiWatermark: MiB }],
      ["ChangeType", { typeName: "shared", hiWatermark: 8 * MiB }],
      ["DeleteType", { typeName: "shared" }],
    ] as const) {
      expect(await a.callAs(APP, [], method, payload)).toEqual({
        returnValue: false, errorCode: -193, errorText: `${method}: no write permission: ${method} is for root or group devservices-cache`,
      });
    }
    expect((await a.call("GetCacheTypes")).types).toEqual(["shared"]);
    expect(await describeType("shared")).toMatchObject({ returnValue: true, loWatermark: 0, hiWatermark: 4 * MiB, size: 100 });
  }, 30000);

  test("with devservices-cache: a uid defines its own type and changes and deletes it; another uid's type (root's, or a member's) stays unchanged; root may", async () => {
    // Root's type: a member of the group may not change or delete it.
    expectError(await a.callAs(APP, [cache], "ChangeType", { typeName: "shared", hiWatermark: 8 * MiB }), -193,
      /^ChangeType: no write permission on type shared: it belongs to another user/);
    expectError(await a.callAs(APP, [cache], "DeleteType", { typeName: "shared" }), -193, /^DeleteType: no write permission on type shared/);
    expect(await describeType("shared")).toMatchObject({ hiWatermark: 4 * MiB });

    expect(await a.callAs(APP, [cache], "DefineType", { typeName: "apps", loWatermark: 0, hiWatermark: MiB, size: 10 })).toEqual({ returnValue: true });
    expect(await a.callAs(APP, [cache], "ChangeType", { typeName: "apps", size: 20 })).toEqual({ returnValue: true });
    // Another member of the group: refused on it, nothing changes.
    expectError(await a.callAs(OTHER, [cache], "ChangeType", { typeName: "apps", size: 99 }), -193, /^ChangeType: no write permission on type apps/);
    expectError(await a.callAs(OTHER, [cache], "DeleteType", { typeName: "apps" }), -193, /^DeleteType: no write permission on type apps/);
    expect(await describeType("apps")).toMatchObject({ returnValue: true, size: 20, hiWatermark: MiB });
    // Root may change anyone's type; the owner deletes its own.
    expect(await a.call("ChangeType", { typeName: "apps", size: 30 })).toEqual({ returnValue: true });
    expect(await describeType("apps")).toMatchObject({ size: 30 });
    expect(await a.callAs(APP, [cache], "DeleteType", { typeName: "apps" })).toEqual({ returnValue: true, freedSpace: 0 });
    expect((await a.call("GetCacheTypes")).types).toEqual(["shared"]);
    // Root deletes a member's type.
    expect(await a.callAs(OTHER, [cache], "DefineType", { typeName: "others", loWatermark: 0, hiWatermark: MiB, size: 10 })).toEqual({ returnValue: true });
    expect(await a.call("DeleteType", { typeName: "others" })).toEqual({ returnValue: true, freedSpace: 0 });
  }, 60000);

  test("objects: any caller inserts; only the inserting uid or root resizes or expires (-193), others may read, touch and hold", async () => {
    const mine = await a.callAs(APP, [], "InsertCacheObject", { typeName: "shared", fileName: "app.txt" });
    expect(mine.returnValue).toBe(true);
    const p = mine.pathName as string;
    const rootObj = (await a.call("InsertCacheObject", { typeName: "shared", fileName: "root.txt" })).pathName as string;
    writeFileSync(rootObj, "root's");

    for (const [uid, groups] of [[OTHER, []], [OTHER, [cache]], [APP, [cache]]] as [number, number[]][]) {
      const target = uid === APP ? rootObj : p;
      expectError(await a.callAs(uid, groups, "ExpireCacheObject", { pathName: target }), -193,
        new RegExp(`^ExpireCacheObject: no write permission on object ${target}: it belongs to another user`));
      expectError(await a.callAs(uid, groups, "ResizeCacheObject", { pathName: target, newSize: 50 }), -193,
        new RegExp(`^ResizeCacheObject: no write permission on object ${target}`));
    }
    // Unchanged.
    expect(existsSync(p) && existsSync(rootObj)).toBe(true);
    expect(await a.call("GetCacheObjectSize", { pathName: p })).toEqual({ returnValue: true, size: 100 });
    expect(await a.call("GetCacheObjectSize", { pathName: rootObj })).toEqual({ returnValue: true, size: 100 });
    // Using another's object is open to all (the spec's hand-over between applications).
    expect(await a.callAs(OTHER, [], "GetCacheObjectFilename", { pathName: p })).toEqual({ returnValue: true, fileName: "app.txt" });
    expect(await a.callAs(OTHER, [], "TouchCacheObject", { pathName: p })).toEqual({ returnValue: true });
    // The owner resizes and expires its own; root expires anyone's.
    expect(await a.callAs(APP, [], "ResizeCacheObject", { pathName: p, newSize: 50 })).toEqual({ returnValue: true, newSize: 50 });
    expect(await a.callAs(APP, [], "ExpireCacheObject", { pathName: p })).toEqual({ returnValue: true });
    expect(existsSync(p)).toBe(false);
    const others = (await a.callAs(OTHER, [], "InsertCacheObject", { typeName: "shared", fileName: "o.txt" })).pathName as string;
    expect(await a.call("ResizeCacheObject", { pathName: others, newSize: 70 })).toEqual({ returnValue: true, newSize: 70 });
    expect(await a.call("ExpireCacheObject", { pathName: others })).toEqual({ returnValue: true });
    expect(await a.call("ExpireCacheObject", { pathName: rootObj })).toEqual({ returnValue: true });
  }, 60000);

  test("owners are stored: they hold after a restart; rows stored before owners were recorded are root's", async () => {
    const p = (await a.callAs(APP, [], "InsertCacheObject", { typeName: "shared", fileName: "kept.txt" })).pathName as string;
    expect(await a.callAs(APP, [cache], "DefineType", { typeName: "kept", loWatermark: 0, hiWatermark: MiB, size: 10 })).toEqual({ returnValue: true });
    await a.restart();
    expectError(await a.callAs(OTHER, [], "ExpireCacheObject", { pathName: p }), -193, /no write permission on object/);
    expectError(await a.callAs(OTHER, [cache], "DeleteType", { typeName: "kept" }), -193, /no write permission on type kept/);
    expect(await a.callAs(APP, [], "ResizeCacheObject", { pathName: p, newSize: 60 })).toEqual({ returnValue: true, newSize: 60 });
    expect(await a.callAs(APP, [cache], "ChangeType", { typeName: "kept", size: 11 })).toEqual({ returnValue: true });

    // A database from before owners were recorded: its rows have none.
    await a.stopService();
    const db = new Database(join(a.stateDir, "filecache", "filecache.db"));
    db.exec("UPDATE objects SET owner = NULL; UPDATE types SET owner = NULL");
    db.close();
    await a.startService();
    expectError(await a.callAs(APP, [], "ExpireCacheObject", { pathName: p }), -193, /no write permission on object/);
    expectError(await a.callAs(APP, [cache], "DeleteType", { typeName: "kept" }), -193, /no write permission on type kept/);
    expect(await a.call("ExpireCacheObject", { pathName: p })).toEqual({ returnValue: true });
    expect(await a.call("DeleteType", { typeName: "kept" })).toEqual({ returnValue: true, freedSpace: 0 });
  }, 60000);
});
