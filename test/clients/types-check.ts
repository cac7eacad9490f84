// Compile-time checks of the client's types (tsc, `bun run typecheck`): each line
// marked @ts-expect-error must fail to type-check; the others must pass.
import { connect } from "../../src/clients";

export async function typed() {
  const power = await connect("power2", { bus: "session" });
  const s = await power.getState({});
  const state: string = s.state;
  // @ts-expect-error getState's success has no clientId
  s.clientId;
  // @ts-expect-error setState requires a Number reason
  await power.setState({ state: "ActiveState", reason: "x" });
  for await (const m of power.getState.subscribe({})) {
    const st: string | undefined = m.state;
    void st;
    break;
  }
  // @ts-expect-error acquireWakeLock is not subscribable
  power.acquireWakeLock.subscribe;
  const pm = await connect("peripheralmanager");
  const r = await pm.gpio.open({ pin: "gpio4" });
  // @ts-expect-error gpio/open takes a pin, not a number
  await pm.gpio.open({ pin: 4 });
  // @ts-expect-error gpio/setDirection's direction is in, outLow or outHigh
  await pm.gpio.setDirection({ pin: "gpio4", direction: "out" });
  // @ts-expect-error no such method
  pm.gpio.frobnicate;
  return [state, r];
}
