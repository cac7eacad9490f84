// devservices call prints a subscription's first response before any push, also when
// the push arrives right behind the reply (in the same read from the socket): the
// service sent them in that order.
import { test, expect, afterAll } from "bun:test";
import { spawn } from "bun";
import { startPrivateBus } from "../../src/bus/daemon";
import { connectBus, DBUS, METHOD_CALL, METHOD_RETURN, SIGNAL, type Message } from "../../src/bus/connection";
import { SUBSCRIPTION_INTERFACE } from "../../src/bus/wire";
import { BINARY, binaryBuilt } from "../helpers/harness";

const NAME = "com.vendor.service.orderfake";
const PATH = "/com/vendor/service/orderfake";
const bus = await startPrivateBus();
afterAll(() => bus.stop());

test.skipIf(!binaryBuilt())("the first response, then the pushes, in the order the service sent them", async () => {
  const svc = await connectBus(bus.address);
  expect((await svc.call({ ...DBUS, type: METHOD_CALL, member: "RequestName", signature: "su", body: [NAME, 4] })).body[0]).toBe(1);
  // Answers, then pushes twice at once: the three arrive together.
  svc.onCall = (msg: Message) => {
    svc.send({ type: METHOD_RETURN, replySerial: msg.serial, destination: msg.sender, signature: "s", body: [JSON.stringify({ returnValue: true, subscribed: true })] });
    for (const n of [1, 2])
      svc.send({ type: SIGNAL, path: PATH, interface: SUBSCRIPTION_INTERFACE, member: "Push", destination: msg.sender, signature: "us", body: [msg.serial, JSON.stringify({ returnValue: true, n })] });
  };
  try {
    for (let round = 0; round < 5; round++) {
      const p = spawn([BINARY, "call", "--bus", bus.address, "-n", "3", `${NAME}/watch`, '{"subscribe":true}'], { stdout: "pipe", stderr: "pipe" });
      const out = await new Response(p.stdout).text();
      expect(await p.exited).toBe(0);
      expect(out.trim().split("\n").map((l) => JSON.parse(l))).toEqual([{ returnValue: true, subscribed: true }, { returnValue: true, n: 1 }, { returnValue: true, n: 2 }]);
    }
  } finally {
    svc.close();
  }
}, 60000);
