// devservices health, the updater's check: 0 when every service of the board owns
// its name and answers; 1 naming a service that is not running, and one whose name
// is held by a connection that does not answer for it (it gives up at --timeout).
import { test, expect, afterEach } from "bun:test";
import { BusClient } from "../../src/bus/client";
import { DBUS } from "../../src/bus/connection";
import { CURRENT, MANIFEST, fixtureCopy, serve, type Served } from "./env";

let served: Served | undefined;
let copy: ReturnType<typeof fixtureCopy> | undefined;
let squatter: BusClient | undefined;
afterEach(async () => {
  squatter?.close();
  await served?.stop();
  copy?.cleanup();
  served = copy = squatter = undefined;
});

test("a service of the board that is not running: exit 1 naming it; the others are listed as answering", async () => {
  copy = fixtureCopy();
  served = await serve(CURRENT, copy.stateDir, copy.board, MANIFEST.services.filter((s) => s !== "nettools"));
  expect((await served.ready).failed).toEqual([]);
  const h = await served.health();
  expect(h.code).toBe(1);
  expect(h.out).toMatchObject({ healthy: false, board: "virtual", missing: ["com.vendor.service.nettools"], notAnswering: [] });
  expect(h.out.answering).toHaveLength(MANIFEST.services.length - 1);
}, 60000);

test("a name owned by a connection that does not answer for the service: exit 1 within --timeout, naming it as not answering", async () => {
  copy = fixtureCopy();
  served = await serve(CURRENT, copy.stateDir, copy.board, MANIFEST.services.filter((s) => s !== "power2"));
  await served.ready;
  squatter = await BusClient.connect(served.bus.address);
  const r = await squatter.callRaw({ ...DBUS, member: "RequestName", signature: "su", body: ["com.vendor.service.power2", 4] });
  expect(r.body[0]).toBe(1);
  const t0 = Date.now();
  const h = await served.health(["--timeout", "1500"]);
  expect(Date.now() - t0).toBeLessThan(10000);
  expect(h.code).toBe(1);
  expect(h.out.missing).toEqual([]);
  expect(h.out.notAnswering).toEqual([{ busName: "com.vendor.service.power2", error: expect.any(String) }]);
}, 60000);
