// Power service API (spec part 2, com.vendor.service.power2, API level 12;
// notifyAlarmExpiry from level 29). One entry per spec method.
import { z } from "zod";
import { answerSchema as answer, once, type Api, type Caller } from "../../core/service";
import { allowed, group, type AccessRule } from "../../core/access";

/** Every failure carries the spec's errorCode and errorText (errors.ts; answerSchema, core/service.ts). */
const clientId = once(() => z.string().min(1).describe("the clientId returned by registerStateTransition"));
/** Root or members of this group may power the device off or reboot it (docs/decisions/power.md, "Who may power off"). */
export const POWER_GROUP = "devservices-power";
const POWER_ACCESS = group(POWER_GROUP);

/**
 * setState's rule: any caller, except that a state whose action powers the device off
 * or reboots it is for root and the power group. `powers(state)` says which states
 * do; the table's default (no board known) counts every state, and the service binds
 * the rule to its board's machine (instance.access) with the same description.
 */
export function setStateAccess(powers: (state: string) => boolean): AccessRule {
  return {
    describe: `any caller; root or group ${POWER_GROUP} when the requested state powers off or reboots (a state with an action)`,
    test: (caller: Caller, req: { state?: unknown }) => !(typeof req?.state === "string" && powers(req.state)) || allowed(POWER_ACCESS, caller, req),
  };
}

/** Longest wake lock: 23:59:59. */
export const MAX_WAKE_LOCK_SECONDS = 24 * 60 * 60 - 1;

export const api = {
  acquireWakeLock: {
    summary:
      "Keeps the device on for timeout seconds: no other state change runs while any lock is held (those calls get errorPower2Busy). The lock belongs to the registered client clientId: only that client's own connection or root may acquire, renew or release it (others: errorPermissionDenied); released at expiry, by releaseWakeLock or notifyAlarmExpiry, or when that client leaves the bus.",
    request: () => z.looseObject({
      clientId: clientId(),
      timeout: z.number().positive().max(MAX_WAKE_LOCK_SECONDS).describe("seconds, at most 86399"),
    }),
    response: () => answer({}),
    level: 12,
  },
  getPowerOnReason: {
    summary: "The last power-on reason set with setPowerOnReason (kept across restarts); subscribers get {returnValue: true, reason} on every change.",
    request: () => z.looseObject({ subscribe: z.boolean() }),
    response: () => answer({ subscribed: z.boolean(), reason: z.string() }),
    subscribable: true,
    level: 12,
  },
  getState: {
    summary: "The device's power state; subscribers get {returnValue: true, state} on every change.",
    request: () => z.looseObject({ subscribe: z.boolean().optional() }),
    response: () => answer({ state: z.string(), subscribed: z.boolean() }),
    subscribable: true,
    level: 12,
  },
  notifyAlarmExpiry: {
    summary: "The wake lock of clientId has expired: it is released (errorTimerNotRunning when it holds none). From that client's connection or root.",
    request: () => z.looseObject({ clientId: clientId() }),
    response: () => answer({ clientId: z.string().optional() }),
    level: 29,
  },
  reboot: {
    summary:
      "Reboots: clients registered for the states left are asked; all acks (or the configured timeout) proceed, one nack fails the call with errorPower2Busy. For root and the devservices-power group.",
    request: () => z.looseObject({ reason: z.string() }),
    response: () => answer({}),
    access: POWER_ACCESS,
    level: 12,
  },
  registerStateTransition: {
    summary:
      "Registers the caller (clientId: its unique bus name) for state; always a subscription: it is told {returnValue: true, state, nextState, token} whenever the device leaves state, and votes with respondStateTransitionAck.",
    request: () => z.looseObject({ state: z.string().describe("the state whose leaving is watched"), subscribe: z.boolean().optional().describe("ignored: the call always subscribes") }),
    response: () => answer({ clientId: z.string(), subscribed: z.boolean().optional(), state: z.string() }),
    subscribable: true,
    alwaysSubscribes: true,
    level: 12,
  },
  releaseWakeLock: {
    summary: "Releases the wake lock of clientId: from that client's connection or root (others: errorPermissionDenied).",
    request: () => z.looseObject({ clientId: clientId() }),
    response: () => answer({}),
    level: 12,
  },
  respondStateTransitionAck: {
    summary: "A registered client's vote on the transition announced with token: ack true lets it proceed, false stops it.",
    request: () => z.looseObject({ state: z.string(), ack: z.boolean(), token: z.string() }),
    response: () => answer({}),
    level: 12,
  },
  setPowerOnReason: {
    summary: "Records the power-on reason (kept in the state directory across restarts).",
    request: () => z.looseObject({ reason: z.string().min(1) }),
    response: () => answer({}),
    level: 12,
  },
  setState: {
    summary:
      "Forces a state: clients registered for the state left are told, not asked; no automatic follow-up; a state with a power-off or reboot action runs it, and only root and the devservices-power group may force such a state.",
    request: () => z.looseObject({ state: z.string(), reason: z.number().describe("Number: the event that caused the change, such as 1 (wake on a network message)") }),
    response: () => answer({}),
    access: setStateAccess(() => true),
    level: 12,
  },
  shutdown: {
    summary:
      "Powers off: clients registered for the states left are asked, as for reboot. With the board's garage option, from its state and with wireless on and a network name configured, the device enters the garage state instead. For root and the devservices-power group.",
    request: () => z.looseObject({ reason: z.string() }),
    response: () => answer({}),
    access: POWER_ACCESS,
    level: 12,
  },
} satisfies Api;
