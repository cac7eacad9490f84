// Power service (spec part 2, com.vendor.service.power2). The board's state machine
// (machine.ts, docs/power-states.md) says which states exist, which methods lead
// where and which transitions ask registered clients; backend/ reaches the system.
// Registrations, state and power-on-reason subscribers are topics of the platform's
// catalog; a wake lock is a lease of the registered client it was taken for, which
// only that client's connection or root may act on. Powering off and rebooting are
// for root and the power group (schemas.ts access rules).
// Choices where the spec is silent: docs/decisions/power.md.
import { join } from "node:path";
import { raise, ok } from "../../core/errors";
import { readJsonStore, writeJsonStore, STORE_BUMP, StoreTooNew, type JsonFormat } from "../../core/store";
import { defineService, type Caller, type Subscription } from "../../core/service";
import { mayAct, type Lease, type ReleaseReason } from "../../core/leases";
import { Throttle } from "../../core/log";
import { api, setStateAccess } from "./schemas";
import { E } from "./errors";
import { PowerMachine, type PowerEvent, type Transition } from "./machine";
import { loadPowerOptions } from "./config";
import { openBackend, type PowerBackend } from "./backend";
import { wirelessUp } from "./backend/net";

export const DEFAULT_POWER_ON_REASON = "unknown";
const REASON_FILE = "power-on-reason.json";

/**
 * The power-on reason file's format (docs/services/power.md, "State"). Format 1:
 * `{"version":1,"reason":"..."}` (the product before versions wrote it without
 * `version`: the same format). A test build (STORE_BUMP) knows a format 2 that adds
 * `setAt` (ms since the epoch; null when the reason came from format 1).
 */
export const REASON_FORMAT: JsonFormat = {
  what: "the power-on reason",
  version: STORE_BUMP ? 2 : 1,
  steps: { 2: (v1) => ({ ...v1, setAt: null }) },
};

/** Topic keys: getState and getPowerOnReason subscribers, and the clients registered for a state. */
const STATE = "state";
const REASON = "reason";
const registeredKey = (state: string) => `registered/${state}`;
/** Lease key of a client's wake lock; the lease's owner is the client (clientId = its unique bus name). */
const lockKey = (clientId: string) => `wakelock/${clientId}`;

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
  /** Unique bus name of the connection that last acquired it (for the log). */
  acquiredBy: string;
  timer?: ReturnType<typeof setTimeout>;
  /** Why it is being released, when the service releases it. */
  why?: string;
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
    denied: () => ({ errorCode: E.denied.code, errorText: E.denied.text }),
  },

  async create(ctx) {
    const machine = PowerMachine.parse((ctx.board as Record<string, unknown>).power2, `board ${ctx.board.name}`);
    const loaded = loadPowerOptions(ctx.config);
    const options = loaded.config;
    for (const p of loaded.problems) ctx.log.error({ file: loaded.file }, `power configuration: ${p}; keeping the default`);
    const config = { transitionTimeoutS: options.TransitionTimeout, garageNetworkName: options.GarageNetworkName };

    // ---- power-on reason, kept in the state directory (read before the
    // backend opens: a store this binary refuses stops the start with nothing to undo)
    const reasonPath = join(ctx.stateDir, REASON_FILE);
    let powerOnReason = DEFAULT_POWER_ON_REASON;
    try {
      // An older format is migrated (written beside and renamed) here; a newer one
      // (a rollback) throws StoreTooNew, untouched, and the service does not start.
      const saved = readJsonStore(reasonPath, REASON_FORMAT).value;
      if (typeof saved?.reason === "string") powerOnReason = saved.reason;
    } catch (e) {
      if (e instanceof StoreTooNew) throw e;
      ctx.log.error({ err: e, file: reasonPath }, "power-on reason file unreadable; starting from the default");
    }
    const saveReason = (reason: string) => writeJsonStore(reasonPath, REASON_FORMAT, STORE_BUMP ? { reason, setAt: Date.now() } : { reason });

    const backend: PowerBackend = await openBackend({
      choice: options.backend,
      boardBackend: ctx.board.backend,
      client: ctx.peers,
      busAddress: ctx.busAddress,
      logindBus: options.logindBus,
      log: ctx.log,
    });
    ctx.log.info(
      { backend: backend.kind, configFile: loaded.file, transitionTimeoutS: config.transitionTimeoutS, states: machine.states() },
      "power service ready",
    );

    let current = machine.initialState;
    /** The live wake locks by clientId: an index of the leases, kept by their release hook. */
    const locks = new Map<string, Lease<WakeLock>>();
    /** Set while reboot, shutdown or an action of setState runs: the service is busy. */
    let running: string | undefined;
    let vote: Vote | undefined;
    let releaseInhibitor: (() => void) | undefined;
    let inhibitorChain: Promise<void> = Promise.resolve();

    // ---- registrations ----------------------------------------------------------
    /** The clients (unique bus names) registered for a state, with their subscriptions. */
    const registered = (state: string): Subscription[] => ctx.topics.subscribers(registeredKey(state));
    const isRegisteredFor = (state: string, clientId: string) => registered(state).some((s) => s.caller.name === clientId);
    const isRegistered = (clientId: string) => machine.states().some((state) => isRegisteredFor(state, clientId));

    // ---- state ----------------------------------------------------------------
    const enter = (state: string) => {
      if (state === current) return;
      ctx.log.info({ from: current, to: state }, "power state");
      current = state;
      ctx.topics.publish(STATE, ok({ state }));
    };

    /** Tells the clients registered for t.from; when t.ask, waits for their votes. */
    const leave = (t: Pick<Transition, "from" | "to" | "ask">): Promise<boolean> => {
      const regs = registered(t.from);
      if (!regs.length) return Promise.resolve(true);
      const message = ok({ state: t.from, nextState: t.to, token: Buffer.from(crypto.getRandomValues(new Uint8Array(8))).toString("hex") });
      if (!t.ask) {
        ctx.topics.publish(registeredKey(t.from), message);
        return Promise.resolve(true);
      }
      return new Promise((resolve) => {
        const timer = setTimeout(() => v.finish(true, "timeout"), config.transitionTimeoutS * 1000);
        const v: Vote = {
          token: message.token,
          state: t.from,
          nextState: t.to,
          waiting: new Set(regs.map((s) => s.caller.name)),
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
        ctx.log.info({ state: t.from, nextState: t.to, clients: [...v.waiting], timeoutS: config.transitionTimeoutS }, "asking registered clients");
        ctx.topics.publish(registeredKey(t.from), message);
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
      return ok();
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

    const WHY: Record<ReleaseReason, string> = {
      released: "released",
      "owner-gone": "its client left the bus",
      "subscription-ended": "subscription ended",
      "service-stopped": "service stopping",
    };

    /** Takes the lock of clientId for its client (the lease's owner), or renews it. */
    const acquire = (clientId: string, acquiredBy: string, seconds: number) => {
      let lease = locks.get(clientId);
      if (!lease) {
        const data: WakeLock = { clientId, acquiredBy };
        lease = ctx.leases.take(clientId, lockKey(clientId), {
          data,
          release: (why) => {
            clearTimeout(data.timer);
            locks.delete(clientId);
            ctx.log.info({ clientId, why: data.why ?? WHY[why] }, "wake lock released");
            void syncInhibitor();
          },
        });
        locks.set(clientId, lease);
      }
      const l = lease;
      clearTimeout(l.data.timer);
      l.data.acquiredBy = acquiredBy;
      l.data.timer = setTimeout(() => drop(l, "timeout"), seconds * 1000);
      ctx.log.info({ clientId, acquiredBy, timeoutS: seconds }, "wake lock acquired");
    };

    const drop = (lease: Lease<WakeLock>, why: string) => {
      lease.data.why = why;
      lease.release();
    };

    // A client can repeat a refused call at will: one line per uid per 10 s, with the count held back.
    const refusals = new Throttle();
    /** errorPermissionDenied for an act on clientId's lock by a caller that may not act on it. */
    const deny = (caller: Caller, clientId: string): never => {
      refusals.log(`${caller.uid} wakelock`, (repeated) =>
        ctx.log.warn({ clientId, caller: caller.name, uid: caller.uid, ...(repeated ? { repeated } : {}) }, "wake lock of another client refused"),
      );
      return raise(E.denied);
    };

    /**
     * The lock of clientId as caller may act on it: the lease when caller is that
     * client's connection or root (the registry decides), "free" when there is none,
     * errorPermissionDenied when it is another client's.
     */
    const lockFor = (caller: Caller, clientId: string): Lease<WakeLock> | "free" => {
      const l = ctx.leases.forActor<WakeLock>(caller, lockKey(clientId));
      return l === "others" ? deny(caller, clientId) : l;
    };

    /** releaseWakeLock and notifyAlarmExpiry: the lock of clientId, or the spec's error. */
    const release = async (caller: Caller, clientId: string, why: string) => {
      const l = lockFor(caller, clientId);
      const lease = l === "free" ? raise(isRegistered(clientId) ? E.timerNotRunning : E.notRegistered) : l;
      drop(lease, why);
      await syncInhibitor();
    };

    return {
      // The table's setState rule, bound to this board's machine: forcing a state with
      // an action (power off, reboot) is for root and the power group.
      access: { setState: setStateAccess((state) => machine.action(state) !== undefined) },

      handlers: {
        async acquireWakeLock(req, call) {
          if (!isRegistered(req.clientId)) raise(E.notRegistered);
          // The lock, held or not, is a lease owned by clientId: taking or renewing it
          // is for that connection or root (the registry's rule).
          if (!mayAct(call.caller, { owner: req.clientId })) deny(call.caller, req.clientId);
          if (running) raise(E.busy);
          acquire(req.clientId, call.caller.name, req.timeout);
          await syncInhibitor();
          return ok();
        },

        getPowerOnReason(_req, call) {
          if (call.subscription) ctx.topics.add(REASON, call.subscription);
          return ok({ subscribed: !!call.subscription, reason: powerOnReason });
        },

        getState(_req, call) {
          if (call.subscription) ctx.topics.add(STATE, call.subscription, { shared: true }); // the same {state} for everyone, any caller: shared
          return ok({ state: current, subscribed: !!call.subscription });
        },

        async notifyAlarmExpiry(req, call) {
          await release(call.caller, req.clientId, "alarm expiry");
          return ok({ clientId: req.clientId });
        },

        reboot: (req) => runEvent("reboot", req.reason),

        registerStateTransition(req, call) {
          if (!machine.has(req.state)) {
            ctx.log.warn({ state: req.state, states: machine.states() }, "registration for a state the board does not have");
            raise(E.unknown);
          }
          // alwaysSubscribes: every call that gets this far is a subscription.
          const sub = call.subscription ?? raise(E.unknown);
          const clientId = call.caller.name;
          if (isRegisteredFor(req.state, clientId)) raise(E.alreadyRegistered);
          if (running) raise(E.busy);
          ctx.topics.add(registeredKey(req.state), sub);
          // A client that leaves during a vote can no longer object.
          sub.onEnd(() => {
            if (vote?.state === req.state && vote.waiting.delete(clientId) && vote.waiting.size === 0) vote.finish(true, "all remaining clients acked");
          });
          ctx.log.info({ clientId, state: req.state }, "client registered for state transitions");
          return ok({ subscribed: true, clientId, state: req.state });
        },

        async releaseWakeLock(req, call) {
          await release(call.caller, req.clientId, "releaseWakeLock");
          return ok();
        },

        respondStateTransitionAck(req, call) {
          const clientId = call.caller.name;
          if (!isRegisteredFor(req.state, clientId)) raise(E.notRegistered);
          const v = vote;
          // No vote open with this token (it closed, or never asked): too late.
          if (!v || v.token !== req.token || v.state !== req.state || v.answered.has(clientId)) raise(E.tooLate);
          if (!v.waiting.delete(clientId)) raise(E.notRegistered);
          v.answered.add(clientId);
          ctx.log.info({ clientId, state: req.state, ack: req.ack }, "transition vote");
          if (!req.ack) v.finish(false, `nack from ${clientId}`);
          else if (v.waiting.size === 0) v.finish(true, "all clients acked");
          return ok();
        },

        setPowerOnReason(req) {
          try {
            saveReason(req.reason);
          } catch (e) {
            ctx.log.error({ err: e, file: reasonPath }, "cannot save the power-on reason");
            raise(E.unknown);
          }
          powerOnReason = req.reason;
          ctx.topics.publish(REASON, ok({ reason: powerOnReason }));
          return ok();
        },

        async setState(req) {
          if (!machine.has(req.state)) {
            ctx.log.warn({ state: req.state, states: machine.states() }, "setState to a state the board does not have");
            raise(E.unknown);
          }
          gateStateChange();
          if (req.state === current) return ok();
          const origin = current;
          ctx.log.info({ from: origin, to: req.state, reason: req.reason }, "state forced");
          // Spec: a change away from S notifies the clients registered for S; setState
          // skips acknowledgement, so they are told and not asked.
          await leave({ from: origin, to: req.state, ask: false });
          enter(req.state);
          if (machine.action(req.state)) {
            running = "setState";
            try {
              await act(req.state, origin);
            } finally {
              running = undefined;
            }
          }
          return ok();
        },

        shutdown: (req) => runEvent("shutdown", req.reason),
      },

      // Nothing per client here: registrations and subscribers leave the catalog when
      // their subscriptions end, and a wake lock is a lease its client's departure ends.
      async stop() {
        vote?.finish(false, "service stopping");
        for (const lease of [...locks.values()]) drop(lease, "service stopping");
        await syncInhibitor();
        backend.close();
      },
    };
  },
});
