// typeGroup (configuration) names who besides root may define, change and delete
// types: another group, or "*" for any caller. The service runs in its own process;
// the callers are uid 65534 with or without groups and the devservices user's uid
// (separate processes, setpriv).
import { afterEach, describe, expect, test } from "bun:test";
import { testAccounts } from "../layer/accounts";
import { apart, cannotRun, type Apart } from "./apart";
import { expectError } from "./env";

const skip = cannotRun();
if (skip) console.warn(`file cache typeGroup tests skipped: ${skip}`);

const APP = 65534;
const MiB = 1024 * 1024;

describe.skipIf(skip !== null)("typeGroup", () => {
  let a: Apart | undefined;
  afterEach(async () => {
    await a?.stop();
    a = undefined;
  });

  test("another group: its members manage types, devservices-cache's are refused (-193, the text names the configured group)", async () => {
    const { gids } = testAccounts();
    a = await apart({ typeGroup: "devservices-test" });
    for (const groups of [[], [gids["devservices-cache"]]]) {
      expect(await a.callAs(APP, groups, "DefineType", { typeName: "apps", loWatermark: 0, hiWatermark: MiB })).toEqual({
        returnValue: false,
        errorCode: -193,
        errorText: "DefineType: no write permission: DefineType is for root or group devservices-test",
      });
    }
    expect(await a.call("GetCacheTypes")).toEqual({ returnValue: true });
    const member = [gids["devservices-test"]];
    expect(await a.callAs(APP, member, "DefineType", { typeName: "apps", loWatermark: 0, hiWatermark: MiB, size: 10 })).toEqual({ returnValue: true });
    expect(await a.callAs(APP, member, "ChangeType", { typeName: "apps", size: 20 })).toEqual({ returnValue: true });
    expectError(await a.callAs(APP, [gids["devservices-cache"]], "DeleteType", { typeName: "apps" }), -193, /^DeleteType: no write permission: DeleteType is for root or group devservices-test$/);
    expect(await a.call("DescribeType", { typeName: "apps" })).toMatchObject({ returnValue: true, size: 20 });
    expect(await a.callAs(APP, member, "DeleteType", { typeName: "apps" })).toEqual({ returnValue: true, freedSpace: 0 });
  }, 60000);

  test('"*": any caller defines types; a type still belongs to the uid that defined it', async () => {
    const { uid: other } = testAccounts();
    a = await apart({ typeGroup: "*" });
    expect(await a.callAs(APP, [], "DefineType", { typeName: "open", loWatermark: 0, hiWatermark: MiB, size: 10 })).toEqual({ returnValue: true });
    expect(await a.callAs(APP, [], "ChangeType", { typeName: "open", size: 20 })).toEqual({ returnValue: true });
    expectError(await a.callAs(other, [], "ChangeType", { typeName: "open", size: 99 }), -193, /^ChangeType: no write permission on type open: it belongs to another user/);
    expectError(await a.callAs(other, [], "DeleteType", { typeName: "open" }), -193, /^DeleteType: no write permission on type open/);
    expect(await a.call("DescribeType", { typeName: "open" })).toMatchObject({ returnValue: true, size: 20 });
    expect(await a.callAs(APP, [], "DeleteType", { typeName: "open" })).toEqual({ returnValue: true, freedSpace: 0 });
    expect(await a.call("GetCacheTypes")).toEqual({ returnValue: true });
  }, 60000);
});
