import { test, expect, beforeAll, afterAll } from "bun:test";
import { testEnv, type Env } from "../helpers/harness";

let env: Env;
beforeAll(async () => {
  env = await testEnv();
  await env.start(["testautomation"]);
});
afterAll(() => env.stop());

test("busctl introspect lists all eight methods", async () => {
  const out = await Bun.$`busctl --address=${env.bus.address} introspect com.vendor.service.testautomation /com/vendor/service/testautomation com.vendor.service.testautomation`.text();
  const methods = out.split("\n").filter((l) => l.includes(" method ")).map((l) => l.trim().split(/\s+/)[0]);
  expect(methods.sort()).toEqual(
    [".broadcastCommand", ".handleRequest", ".notifyEvent", ".ping", ".replyToCommand", ".subscribeToCommands", ".subscribeToEvents", ".version"],
  );
});

test("busctl call ping echoes Message", async () => {
  const out = await Bun.$`busctl --address=${env.bus.address} call com.vendor.service.testautomation /com/vendor/service/testautomation com.vendor.service.testautomation ping s ${'{"Message":"hi"}'}`.text();
  expect(out.trim()).toBe('s "{\\"Message\\":\\"hi\\"}"');
});
