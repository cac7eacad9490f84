// Only the media framework may call the service: root and the access group (from the
// recipe, or the Key=Value file videooutput.conf, whose value wins). Callers of other
// uids are the shipped binary's `call` run through setpriv.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "bun";
import { binaryBuilt, binaryForAnyUser, openBusToAll, callAsUser, groupGid } from "../helpers/harness";
import { OK, voEnv, type VoEnv } from "./env";

const GROUP = "devservices-votest";
const skip = process.getuid?.() !== 0 ? "needs root (setpriv)" : !binaryBuilt() ? "dist/devservices is not built (bun run build)" : null;
if (skip) console.warn(`videooutput access tests skipped: ${skip}`);

describe.skipIf(skip !== null)("access: root and the media framework's group", () => {
  let v: VoEnv;
  let dir: string;
  let app: string;
  let gid: number;
  beforeAll(async () => {
    gid = groupGid(GROUP);
    dir = mkdtempSync(join(tmpdir(), "videooutput-access-"));
    // The file names the group; the recipe's value (a group nobody is in) loses.
    writeFileSync(join(dir, "videooutput.conf"), `# media framework\naccessGroup=${GROUP}\n`);
    v = await voEnv({ configFile: join(dir, "videooutput.conf"), accessGroup: "devservices-media" });
    // Other uids reach the bus's socket and the binary.
    openBusToAll(v.env.bus.address);
    app = binaryForAnyUser(dir);
  }, 30000);
  afterAll(async () => {
    await v?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function callAs(uid: number, groups: number[], method: string, payload: object) {
    return callAsUser({ app, bus: v.env.bus.address, cwd: dir, uid, groups }, `com.vendor.service.videooutput/${method}`, payload);
  }

  const refused = (m: string, errorCode = 1) => ({
    returnValue: false, errorCode, errorMessage: `Permission denied: ${m} is for the media framework (root and the service's access group)`,
  });

  test("another uid is refused every method, reading ones included; nothing changes", async () => {
    for (const [m, p] of [["getStatus", {}], ["display/getOutputCapabilities", {}], ["register", { context: "X" }]] as const) {
      expect(await callAs(65534, [], m, p)).toEqual(refused(m));
    }
    expect(await callAs(65534, [], "connect", { source: "VDEC", sink: "MAIN" })).toMatchObject({ returnValue: false });
    expect((await v.status()).MAIN!.connected).toBe(false);
  }, 30000);

  test("connect refused to another uid answers the spec's code for connect, 67", async () => {
    expect(await callAs(65534, [], "connect", { source: "VDEC", sink: "MAIN" })).toEqual(refused("connect", 67));
    expect((await v.status()).MAIN!.connected).toBe(false);
  }, 30000);

  test("a member of the configured group and root are let in", async () => {
    expect(await callAs(65534, [gid], "connect", { source: "VDEC", sink: "MAIN" })).toEqual({ returnValue: true, planeID: 31 });
    expect((await callAs(65534, [gid], "getStatus", {})).video[0]).toMatchObject({ sink: "MAIN", connected: true });
    expect(await callAs(0, [], "disconnect", { sink: "MAIN" })).toEqual(OK);
    expect((await v.status()).MAIN!.connected).toBe(false);
  }, 30000);
});
