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
  expect(out.trim()).toBe('s "{\\"returnValue\\":true,\\"Message\\":\\"hi\\"}"');
});

// Convention 2 (every response has boolean returnValue) and the ping row (an object
// echoing Message): returnValue true beside the echoed Message, and alone when none
// was sent (docs/decisions/testautomation.md).
test("ping answers returnValue true beside the echoed Message, and returnValue true alone without one", async () => {
  const c = await env.client();
  expect(await c.call("testautomation", "ping", { Message: "hi" })).toEqual({ returnValue: true, Message: "hi" });
  expect(await c.call("testautomation", "ping", { Message: "" })).toEqual({ returnValue: true, Message: "" });
  expect(await c.call("testautomation", "ping", {})).toEqual({ returnValue: true });
  // Fields other than Message are not echoed.
  expect(await c.call("testautomation", "ping", { Message: "x", other: 1 })).toEqual({ returnValue: true, Message: "x" });
});
