// Power service (spec part 2, com.vendor.service.power2). The board's state machine
// (machine.ts, docs/power-states.md) says which states exist, which methods lead
// where and which transitions ask registered clients; backend/ reaches the system.
// Choices where the spec is silent: docs/decisions/power.md.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { raise } from "../../core/errors";
import { defineService, type Subscription } from "../../core/service";
import { api } from "./schemas";
import { E } from "./errors";
import { PowerMachine, type PowerEvent, type Transition } from "./machine";
import { DEFAULT_CONFIG_FILE, loadPowerConfig } from "./config";
import { openBackend, type PowerBackend } from "./backend";
import { wirelessUp } from "./backend/net";

/** serviceConfig.power2 of the board recipe (docs/services/power.md). */
export const ServiceConfigSchema = z.object({
  configFile: z.string().default(DEFAULT_CONFIG_FILE),
  backend: z.enum(["auto", "logind", "syscall", "virtual"]).default("auto"),
  logindBus: z.string().optional(),
  netSysfs: z.string().default("/sys/class/net"),
});

export const DEFAULT_POWER_ON_REASON = "unknown";
const REASON_FILE = "power-on-reason.json";

/** One round of votes on leaving `state` (spec: transition notification). */
interface Vote {
  token: string;
  state: string;
  nextState: string;
  /** Asked clients that have not answered yet. */
  waiting: Set<string>;
  answered: Set<string>;
  finish(proceed: boolean, why: string): void;
}

interface WakeLock {
  clientId: string;
  /** Unique bus name of the connection that acquired it. */
  holder: string;
  timer: ReturnType<typeof setTimeout>;
}

export default defineService({
  spec: {
    name: "power2",
    busName: "com.vendor.service.power2",
    description:
      "Power service: the device's power state machine (from the board recipe), reboot and shutdown with client acknowledgement, wake locks, and the power-on reason.",
    api,
    badRequest: () => ({ errorCode: E.invalidJson.code, errorText: E.invalidJson.text }),
    internalError: () => ({ errorCode: E.unknown.code, errorText: E.unknown.text }),
  },

  async create(ctx) {
    const options = ServiceConfigSchema.parse(ctx.config);
    const machine = PowerMachine.parse((ctx.board as Record<string, unknown>).power2, `board ${ctx.board.name}`);
    const { config, problems, found } = loadPowerConfig(options.configFile);
    for (const p of problems) ctx.log.error({ file: options.configFile }, `power configuration: ${p}; keeping the default`);
    const backend: PowerBackend = await openBackend({
      choice: options.backend,
      boardBackend: ctx.board.backend,
      client: ctx.peers,
      busAddress: ctx.busAddress,
      logindBus: options.logindBus,
      log: ctx.log,
    });
    ctx.log.info(
      { backend: backend.kind, configFile: found ? options.configFile : null, transitionTimeoutS: config.transitionTimeoutS, states: machine.states() },
      "power service ready",
    );

    let current = machine.initialState;
    const stateSubs = new Set<Subscription>();
    const reasonSubs = new Set<Subscription>();
    /** state -> clientId -> the registerStateTransition subscription. */
    const registrations = new Map<string, Map<string, Subscription>>();
    const locks = new Map<string, WakeLock>();
    /** Set while reboot, shutdown or an action of setState runs: the service is busy. */
    let running: string | undefined;
    let vote: Vote | undefined;
    let releaseInhibitor: (() => void) | undefined;
    let inhibitorChain: Promise<void> = Promise.resolve();

    // ---- power-on reason, kept in the state directory -----------------------
    const reasonPath = join(ctx.stateDir, REASON_FILE);
    let powerOnReason = DEFAULT_POWER_ON_REASON;
    if (existsSync(reasonPath)) {
      try {
        const saved = JSON.parse(readFileSync(reasonPath, "utf8"));
        if (typeof saved?.reason === "string") powerOnReason = saved.reason;
      } catch (e) {
        ctx.log.error({ err: e, file: reasonPath }, "power-on reason file unreadable; starting from the default");
      }
    }
    const saveReason = (reason: string) => {
      const tmp = `${reasonPath}.tmp`;
      writeFileSync(tmp, JSON.stringify({ reason }) + "\n");
      renameSync(tmp, reasonPath);
    };

    // ---- state ----------------------------------------------------------------
    const enter = (state: string) => {
      if (state === current) return;
      ctx.log.info({ from: current, to: state }, "power state");
      current = state;
      for (const s of stateSubs) s.push({ state });
    };

    const isRegistered = (clientId: string) => [...registrations.values()].some((m) => m.has(clientId));

    /** Tells the clients registered for t.from; when t.ask, waits for their votes. */
    const leave = (t: Transition): Promise<boolean> => {
      const regs = registrations.get(t.from);
      if (!regs?.size) return Promise.resolve(true);
      const message = { state: t.from, nextState: t.to, token: randomBytes(8).toString("hex") };
      if (!t.ask) {
        for (const s of regs.values()) s.push(message);
        return Promise.resolve(true);
      }
      return new Promise((resolve) => {
        const timer = setTimeout(() => v.finish(true, "timeout"), config.transitionTimeoutS * 1000);
        const v: Vote = {
          token: message.token,
          state: t.from,
          nextState: t.to,
          waiting: new Set(regs.keys()),
          answered: new Set(),
          finish(proceed, why) {
            if (vote !== v) return;
            vote = undefined;
            clearTimeout(timer);
            ctx.log.info({ state: v.state, nextState: v.nextState, proceed, why }, "transition vote closed");
            resolve(proceed);
          },
        };
        vote = v;
        ctx.log.info({ state: t.from, nextState: t.to, clients: [...regs.keys()], timeoutS: config.transitionTimeoutS }, "asking registered clients");
        for (const s of regs.values()) s.push(message);
      });
    };

    /** Runs one action state's action; on failure the device goes back to `origin`. */
    const act = async (state: string, origin: string) => {
      const action = machine.action(state);
      if (!action) return;
      try {
        if (action === "powerOff") await backend.powerOff();
        else await backend.reboot();
      } catch (e) {
        ctx.log.error({ err: e, action, backend: backend.kind }, "power action failed");
        enter(origin);
        raise(E.unknown);
      }
      ctx.log.info({ action, backend: backend.kind }, "power action taken");
      // The virtual device comes back up after a reboot.
      if (backend.kind === "virtual" && action === "reboot") enter(machine.initialState);
    };

    const gateStateChange = () => {
      if (running || locks.size > 0) raise(E.busy);
    };

    const garageReady = () => config.garageNetworkName !== "" && wirelessUp(options.netSysfs);

    /** reboot and shutdown: the event's path through the machine, with votes. */
    const runEvent = async (event: PowerEvent, reason: string) => {
      gateStateChange();
      const origin = current;
      let t = (event === "shutdown" && garageReady() ? machine.garageFrom(origin) : undefined) ?? machine.on(origin, event);
      if (!t) {
        ctx.log.warn({ state: origin, event }, "the board's power machine has no such transition");
        raise(E.unknown);
      }
      running = event;
      ctx.log.info({ event, reason, from: origin }, "state change requested");
      try {
        for (; t; t = machine.automatic(current)) {
          if (!(await leave(t))) {
            enter(origin);
            raise(E.busy);
          }
          enter(t.to);
          if (machine.action(t.to)) {
            await act(t.to, origin);
            break;
          }
        }
      } finally {
        running = undefined;
      }
      return { returnValue: true as const };
    };

    // ---- wake locks -----------------------------------------------------------
    /** Holds the system inhibitor exactly while wake locks exist (serialized). */
    const syncInhibitor = () =>
      (inhibitorChain = inhibitorChain.then(async () => {
        if (locks.size > 0 && !releaseInhibitor) {
          try {
            releaseInhibitor = await backend.inhibit("wake locks of the power service are held");
          } catch (e) {
            ctx.log.warn({ err: e }, "system inhibitor not taken; wake locks still hold this service's state changes");
          }
        } else if (locks.size === 0 && releaseInhibitor) {
          releaseInhibitor();
          releaseInhibitor = undefined;
        }
      }));

    const dropLock = (clientId: string, why: string) => {
      const lock = locks.get(clientId);
      if (!lock) return false;
      clearTimeout(lock.timer);
      locks.delete(clientId);
      ctx.log.info({ clientId, why }, "wake lock released");
      return true;
    };

    return {
      handlers: {
        async acquireWakeLock(req: { clientId: string; timeout: number }, call) {
          if (!isRegistered(req.clientId)) raise(E.notRegistered);
          if (running) raise(E.busy);
          const held = locks.get(req.clientId);
          if (held) clearTimeout(held.timer);
          const lock: WakeLock = {
            clientId: req.clientId,
            holder: call.caller.name,
            timer: setTimeout(() => {
              if (locks.get(req.clientId) === lock && dropLock(req.clientId, "timeout")) void syncInhibitor();
            }, req.timeout * 1000),
          };
          locks.set(req.clientId, lock);
          ctx.log.info({ clientId: req.clientId, holder: lock.holder, timeoutS: req.timeout }, "wake lock acquired");
          await syncInhibitor();
          return { returnValue: true };
        },

        getPowerOnReason(_req: { subscribe: boolean }, call) {
          const sub = call.subscription;
          if (sub) {
            reasonSubs.add(sub);
            sub.onEnd(() => reasonSubs.delete(sub));
          }
          return { returnValue: true, subscribed: !!sub, reason: powerOnReason };
        },

        getState(_req: { subscribe?: boolean }, call) {
          const sub = call.subscription;
          if (sub) {
            stateSubs.add(sub);
            sub.onEnd(() => stateSubs.delete(sub));
          }
          return { returnValue: true, state: current, subscribed: !!sub };
        },

        async notifyAlarmExpiry(req: { clientId: string }) {
          if (!dropLock(req.clientId, "alarm expiry")) raise(isRegistered(req.clientId) ? E.timerNotRunning : E.notRegistered);
          await syncInhibitor();
          return { returnValue: true, clientId: req.clientId };
        },

        reboot: (req: { reason: string }) => runEvent("reboot", req.reason),

        registerStateTransition(req: { state: string }, call) {
          if (!machine.has(req.state)) {
            ctx.log.warn({ state: req.state, states: machine.states() }, "registration for a state the board does not have");
            raise(E.unknown);
          }
          const sub = call.subscription;
          if (!sub) raise(E.invalidJson);
          const clientId = call.caller.name;
          const regs = registrations.get(req.state) ?? new Map<string, Subscription>();
          if (regs.has(clientId)) raise(E.alreadyRegistered);
          if (running) raise(E.busy);
          regs.set(clientId, sub);
          registrations.set(req.state, regs);
          sub.onEnd(() => {
            if (regs.get(clientId) === sub) regs.delete(clientId);
            // A client that leaves during a vote can no longer object.
            if (vote?.state === req.state && vote.waiting.delete(clientId) && vote.waiting.size === 0) vote.finish(true, "all remaining clients acked");
          });
          ctx.log.info({ clientId, state: req.state }, "client registered for state transitions");
          return { returnValue: true, subscribed: true, clientId, state: req.state };
        },

        async releaseWakeLock(req: { clientId: string }) {
          if (!dropLock(req.clientId, "releaseWakeLock")) raise(isRegistered(req.clientId) ? E.timerNotRunning : E.notRegistered);
          await syncInhibitor();
          return { returnValue: true };
        },

        respondStateTransitionAck(req: { state: string; ack: boolean; token: string }, call) {
          const clientId = call.caller.name;
          if (!registrations.get(req.state)?.has(clientId)) raise(E.notRegistered);
          const v = vote;
          // No vote open with this token (it closed, or never asked): too late.
          if (!v || v.token !== req.token || v.state !== req.state || v.answered.has(clientId)) raise(E.tooLate);
          if (!v.waiting.delete(clientId)) raise(E.notRegistered);
          v.answered.add(clientId);
          ctx.log.info({ clientId, state: req.state, ack: req.ack }, "transition vote");
          if (!req.ack) v.finish(false, `nack from ${clientId}`);
          else if (v.waiting.size === 0) v.finish(true, "all clients acked");
          return { returnValue: true };
        },

        setPowerOnReason(req: { reason: string }) {
          try {
            saveReason(req.reason);
          } catch (e) {
            ctx.log.error({ err: e, file: reasonPath }, "cannot save the power-on reason");
            raise(E.unknown);
          }
          powerOnReason = req.reason;
          for (const s of reasonSubs) s.push({ reason: powerOnReason });
          return { returnValue: true };
        },

        async setState(req: { state: string; reason: number }) {
          if (!machine.has(req.state)) {
            ctx.log.warn({ state: req.state, states: machine.states() }, "setState to a state the board does not have");
            raise(E.unknown);
          }
          gateStateChange();
          if (req.state === current) return { returnValue: true };
          const origin = current;
          ctx.log.info({ from: origin, to: req.state, reason: req.reason }, "state forced");
          enter(req.state);
          if (machine.action(req.state)) {
            running = "setState";
            try {
              await act(req.state, origin);
            } finally {
              running = undefined;
            }
          }
          return { returnValue: true };
        },

        shutdown: (req: { reason: string }) => runEvent("shutdown", req.reason),
      },

      // Everything a client holds: its registrations end with their subscriptions;
      // its wake locks (held or acquired for its clientId) are released here.
      async clientGone(name: string) {
        let dropped = false;
        for (const lock of [...locks.values()])
          if (lock.holder === name || lock.clientId === name) dropped = dropLock(lock.clientId, "holder left the bus") || dropped;
        if (dropped) await syncInhibitor();
      },

      async stop() {
        vote?.finish(false, "service stopping");
        for (const id of [...locks.keys()]) dropLock(id, "service stopping");
        await syncInhibitor();
        backend.close();
      },
    };
  },
});
