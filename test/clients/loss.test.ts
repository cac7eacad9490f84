// A subscription ends with an error when what carries it goes away: the service's
// process dies (SubscriptionLost "service"), or this client's bus connection ends
// (the daemon is killed: SubscriptionLost "connection"). The service runs as its own
// process (`src/main.ts serve`) on a private bus.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { connect, SubscriptionLost } from "../../src/clients";
import { spawnScript, testEnv, type Env } from "../helpers/harness";

let env: Env;
let serve: ReturnType<typeof spawnScript> | undefined;
const startServe = async () => {
  serve = spawnScript("src/main.ts", ["serve", "--bus", env.bus.address, "--state-dir", `${env.stateDir}/state`, "--log-level", "info", "power2"]);
  await serve.waitFor("devservices ready", 20000);
};
beforeAll(async () => {
  env = await testEnv();
  await startServe();
}, 30000);
afterAll(async () => {
  await serve?.kill();
  await env?.stop();
});

/** Reads a subscription until it ends; returns what it read and how it ended. */
async function drain(it: AsyncIterable<unknown>, onFirst: () => unknown) {
  const seen: unknown[] = [];
  try {
    for await (const m of it) {
      seen.push(m);
      if (seen.length === 1) await onFirst();
    }
    return { seen, error: undefined };
  } catch (e) {
    return { seen, error: e as Error };
  }
}

test("the service's process dies: the loop ends with SubscriptionLost 'service'", async () => {
  const power = await connect("power2", { bus: env.bus.address });
  const { seen, error } = await drain(power.getState.subscribe({}), () => serve!.kill("SIGKILL"));
  expect(seen).toEqual([{ returnValue: true, state: "ActiveState", subscribed: true }]);
  expect(error).toBeInstanceOf(SubscriptionLost);
  expect((error as SubscriptionLost).reason).toBe("service");
  await power.$close();
}, 20000);

test("the bus connection ends (the daemon is killed): every open loop ends with SubscriptionLost 'connection'", async () => {
  await startServe();
  const power = await connect("power2", { bus: env.bus.address });
  const a = power.getState.subscribe({});
  const b = power.getPowerOnReason.subscribe({});
  await Promise.all([a.first, b.first]);
  const [ra, rb] = await Promise.all([drain(a, () => {}), drain(b, () => process.kill(env.bus.pid, "SIGKILL"))]);
  for (const r of [ra, rb]) {
    expect(r.seen.length).toBe(1);
    expect(r.error).toBeInstanceOf(SubscriptionLost);
    expect((r.error as SubscriptionLost).reason).toBe("connection");
  }
  await power.$closed;
  await power.$close();
}, 20000);
