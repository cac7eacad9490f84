// Each hosted media indexer is its own: two in one process (two runtimes, two
// private buses) answer from their own index, plugin factory and devices, also
// when a request cannot be read (getPluginList answers returnValue true whatever
// the payload) and after the other one stopped.
import { test, expect, afterAll } from "bun:test";
import { join } from "node:path";
import { miEnv, type MiEnv } from "./env";
import { mp3, put } from "./media";
import type { Json } from "../../src/core/errors";

const envs: MiEnv[] = [];
afterAll(async () => {
  for (const e of envs) await e.stop().catch(() => {});
});

test("two media indexers in one process answer from their own plugin factory and index", async () => {
  const a = await miEnv({ detect: false });
  envs.push(a);
  const b = await miEnv({ detect: false, plugins: ["storage", "msc"] });
  envs.push(b);
  put(join(a.media, "only-a.mp3"), mp3({ title: "Only A" }));
  await a.call("requestMediaScan", { path: a.media });
  await a.idle();

  const listA = [{ uri: "storage" }];
  const listB = [{ uri: "storage" }, { uri: "msc" }];
  expect(await a.call("getPluginList")).toEqual({ returnValue: true, pluginList: listA });
  expect(await b.call("getPluginList")).toEqual({ returnValue: true, pluginList: listB });
  // A payload that is not JSON: returnValue true, and never the other instance's plugins.
  for (const [mi, own] of [[a, listA], [b, listB]] as const) {
    for (const payload of ["{garbage", "[1]"]) {
      const r = await mi.call("getPluginList", payload);
      expect(r.returnValue).toBe(true);
      expect(r.pluginList ?? own).toEqual(own);
    }
  }
  const titles = async (mi: MiEnv) => (((await mi.call("getAudioList")).audioList as Json).results as Json[]).map((e) => e.title);
  expect(await titles(a)).toEqual(["Only A"]);
  expect(await titles(b)).toEqual([]);

  // The second one stopped: the first serves as before.
  await b.stop();
  envs.pop();
  expect(await a.call("getPluginList")).toEqual({ returnValue: true, pluginList: listA });
  const r = await a.call("getPluginList", "{garbage");
  expect(r.returnValue).toBe(true);
  expect(r.pluginList ?? listA).toEqual(listA);
  expect(await titles(a)).toEqual(["Only A"]);
}, 30000);
