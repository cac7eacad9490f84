// Intent service (spec part 1): routes intents to handler applications, launches
// them with the intent in their launch parameters, and routes their results back.
// Matching order, sessions and the lifetime of an intent: docs/decisions/intent.md.
import { dirname } from "node:path";
import { z } from "zod";
import { raise, ok, type Json } from "../../core/errors";
import { defineService, type Caller, type ServiceInstance } from "../../core/service";
import { uidOwner, type Lease } from "../../core/leases";
import { loadConfig } from "../../core/config";
import { intentOptions } from "./config";
import { IdSource } from "../../core/ids";
import { api, ResultMessage, type IntentT } from "./schemas";
import { E } from "./errors";
import { matchIntent, ordered, type HandlerEntry } from "./match";
import { HandlerRegistry, type AppSource } from "./backend/registry";
import { readFileSync } from "node:fs";
import { HandlerProcessLimits, LaunchRate, isRefusal, refusalReason, type RateRefusal, type Refusal } from "./limits";
import { Throttle } from "../../core/log";
import { AppManagerLauncher, AutoLauncher, ExecLauncher, LaunchRefused, type Launcher } from "./backend/launcher";

export const DEFAULT_APPLICATION_DIR = "/usr/share/devservices/applications";

/** A started intent and its handler; who wants its results is the topic resultKey(id). */
interface RunningIntent {
  id: number;
  handler: HandlerEntry;
  /** The process launched for it, when known: results are accepted from it (and its descendants) only. */
  pid?: number;
  timer?: ReturnType<typeof setTimeout>;
  /** The requester's uid holds the intent's results (uidOwner: the intent outlives its connection). */
  requester: Lease;
  /** Where the handler's process is not known: the uid of its first result, which alone answers from then on. */
  answerer?: Lease;
}

/** The topic of an intent's result subscribers (start with subscribe, subscribeResult). */
const resultKey = (id: number) => `result/${id}`;
/** The lease of an intent's requester: who may follow its results. */
const requesterKey = (id: number) => `requester/${id}`;
/** The lease of the handler that answers an intent whose process is not known: the uid of its first result. */
const answererKey = (id: number) => `answerer/${id}`;

const hasKey = (v: unknown) => typeof v === "string" && v !== "";

/** Whether process pid is ancestor or one of its descendants (parents read from /proc, at most 64 steps). */
export function isProcessOrDescendant(pid: number, ancestor: number): boolean {
  for (let p = pid, steps = 0; p > 1 && steps < 64; steps++) {
    if (p === ancestor) return true;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
      p = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    } catch {
      return false;
    }
  }
  return false;
}

export default defineService({
  spec: {
    name: "intent",
    busName: "com.vendor.service.intent",
    description:
      "Routes intents (an action on a uri or mime type, or a named handler) to handler applications declared by their appinfo.json intentFilters, launches the handler with the intent, and delivers the handler's results to subscribers.",
    api,
    badRequest: (_method, p) => {
      const row = p.kind === "schema" && p.missing === "intentId" && p.path?.length === 1 ? E.intentIdRequired : E.invalidParameter;
      return { errorText: row.text };
    },
    internalError: () => ({ errorText: E.startFailed.text }),
    // The fields the spec requires in every response, failures too: start and
    // subscribeResult carry intentId (0 when no intent was started or named), query handlers.
    failureFields: (method, payload) => {
      const p = (payload ?? {}) as Json;
      if (method === "query") return { handlers: [] };
      if (method === "start") return { intentId: 0 };
      if (method === "subscribeResult") return { intentId: typeof p.intentId === "number" && Number.isFinite(p.intentId) ? p.intentId : 0 };
      return {};
    },
  },

  create(ctx) {
    const cfg = loadConfig({ service: "intent", schema: intentOptions, section: ctx.config }).config;
    const sources: AppSource[] = (cfg.applicationDirs ?? [DEFAULT_APPLICATION_DIR, `${dirname(ctx.stateDir)}/applications`]).map((dir) => ({ dir }));
    for (const [sessionId, dirs] of Object.entries(cfg.sessions)) for (const dir of dirs) sources.push({ dir, sessionId });
    const registry = new HandlerRegistry(sources, ctx.log.child({ component: "registry" }), { reloadDelayMs: cfg.reloadDelayMs });
    registry.start();

    const appManager = new AppManagerLauncher(ctx.peers, cfg.applicationManager, cfg.launchTimeoutMs);
    const exec = new ExecLauncher(ctx.busAddress, ctx.log.child({ component: "launcher" }), cfg.handlerNice);
    const launcher: Launcher =
      cfg.launcher === "exec" ? exec : cfg.launcher === "applicationmanager" ? appManager : new AutoLauncher(ctx.peers, cfg.applicationManager, appManager, exec);

    // A place per handler process, taken before its launch and given back when it is gone.
    const processes = new HandlerProcessLimits({ perUid: cfg.maxHandlerProcessesPerUid, total: cfg.maxHandlerProcesses });
    // And a launch from the uid's budget of launches a second, taken once a place is given.
    const rate = new LaunchRate({ perSecond: cfg.maxLaunchesPerUidPerSecond, burst: cfg.launchBurstPerUid ?? cfg.maxHandlerProcessesPerUid });
    // A refused caller tends to ask again at once: one line per uid and kind of refusal per 10 s.
    const refusals = new Throttle();
    function refuse(r: Refusal | RateRefusal, handler: HandlerEntry, caller: Caller): never {
      const reason = refusalReason(r);
      refusals.log(`${caller.uid}/${r.bound}`, (repeated) =>
        ctx.log.warn({ handler: handler.name, caller: caller.name, uid: caller.uid, pid: caller.pid, reason, ...(repeated ? { repeated } : {}) }, "handler launch refused"),
      );
      return raise(E.startFailed, { reason });
    }

    // Running intents, oldest activity first (a Map keeps insertion order; touch() re-inserts).
    const intents = new Map<number, RunningIntent>();
    // IDs unique across restarts: a handler from before a crash cannot answer a new intent.
    const intentIds = new IdSource(`${ctx.stateDir}/intent-ids`, { onError: (e) => ctx.log.warn({ err: e }, "intent IDs: the reserved block was not saved") });

    const expire = (rec: RunningIntent, why: string) => {
      if (intents.get(rec.id) !== rec) return;
      intents.delete(rec.id);
      clearTimeout(rec.timer);
      ctx.topics.end(resultKey(rec.id));
      rec.requester.release();
      rec.answerer?.release();
      ctx.log.debug({ intentId: rec.id, handler: rec.handler.name, why }, "intent ended");
    };

    /** An intent lives intentLifetimeMs after its last activity (start, sendResult, subscribeResult). */
    const touch = (rec: RunningIntent) => {
      clearTimeout(rec.timer);
      rec.timer = setTimeout(() => expire(rec, "lifetime over"), cfg.intentLifetimeMs);
      rec.timer.unref?.();
      intents.delete(rec.id);
      intents.set(rec.id, rec);
    };

    const runningIntent = (id: number): RunningIntent => intents.get(id) ?? raise(E.invalidParameter);

    /**
     * Whether caller may follow the results of rec: its requester's uid or root (the
     * lease registry decides). Others are "Invalid parameter" with a reason, logged.
     */
    const requireRequester = (rec: RunningIntent, caller: Caller) => {
      if (ctx.leases.forActor(caller, requesterKey(rec.id)) === rec.requester) return;
      refusals.log(`${caller.uid}/follow`, (repeated) =>
        ctx.log.warn({ intentId: rec.id, caller: caller.name, uid: caller.uid, pid: caller.pid, ...(repeated ? { repeated } : {}) }, "result subscription refused: not the requester"),
      );
      raise(E.invalidParameter, { reason: `intent ${rec.id} was started by another user; only its requester and root may follow its results` });
    };

    /**
     * Whether caller may answer rec: where the handler's process is known, that process
     * or one of its descendants; else the uid that answered it first (it holds the
     * answerer lease from then on) or root.
     */
    const requireHandler = (rec: RunningIntent, caller: Caller) => {
      let ok: boolean;
      if (rec.pid !== undefined) ok = isProcessOrDescendant(caller.pid, rec.pid);
      else {
        const held = ctx.leases.forActor(caller, answererKey(rec.id));
        if (held === "free") rec.answerer = ctx.leases.take(uidOwner(caller.uid), answererKey(rec.id));
        ok = held !== "others";
      }
      if (ok) return;
      refusals.log(`${caller.uid}/answer`, (repeated) =>
        ctx.log.warn(
          { intentId: rec.id, handler: rec.handler.name, handlerPid: rec.pid, sender: caller.name, senderPid: caller.pid, uid: caller.uid, ...(repeated ? { repeated } : {}) },
          "result refused: not from the handler",
        ),
      );
      raise(E.invalidParameter, { reason: `intent ${rec.id} was routed to ${rec.handler.name}; results are accepted from it only` });
    };

    const sessionHandlers = (sessionId: string | undefined): HandlerEntry[] => {
      if (sessionId === undefined) return registry.handlers;
      if (!(sessionId in cfg.sessions)) raise(E.noSession);
      return registry.handlers.filter((h) => h.sessionId === sessionId);
    };

    const handlerObject = (h: HandlerEntry) => ({
      name: h.name,
      ...(h.sessionId !== undefined ? { sessionId: h.sessionId } : {}),
      intentFilters: h.intentFilters,
    });

    const requireKeys = (intent: IntentT | undefined): IntentT => {
      if (!intent || (!hasKey(intent.name) && !hasKey(intent.action))) raise(E.parseIntent);
      return intent;
    };

    // A requester holds nothing but its result subscriptions, which leave the catalog
    // when they end (cancel or disconnect); an intent belongs to no client and ends
    // with its lifetime.
    const handlers: ServiceInstance<typeof api>["handlers"] = {
      query(req) {
        const pool = sessionHandlers(req.sessionId);
        const found = req.intent === undefined ? ordered(pool) : matchIntent(pool, requireKeys(req.intent));
        return ok({ handlers: found.map(handlerObject) });
      },

      async start(req, call) {
        const pool = sessionHandlers(req.sessionId);
        const intent = requireKeys(req.intent);
        const handler = matchIntent(pool, intent)[0] ?? raise(E.noHandler);
        // Taken before anything awaits, so launches asked for together are counted together.
        const place = processes.take(call.caller.uid);
        if (isRefusal(place)) refuse(place, handler, call.caller);
        const tooFast = rate.take(call.caller.uid);
        if (tooFast) {
          place.release();
          refuse(tooFast, handler, call.caller);
        }
        const id = intentIds.take();
        // The requester's results are its uid's: another connection of the same uid may follow them (subscribeResult), no other uid.
        const rec: RunningIntent = { id, handler, requester: ctx.leases.take(uidOwner(call.caller.uid), requesterKey(id)) };
        if (intents.size >= cfg.maxIntents) expire(intents.values().next().value!, "too many running intents");
        touch(rec);
        // Subscribed before the launch: a quick handler's result waits for our first response.
        if (call.subscription) ctx.topics.add(resultKey(id), call.subscription);
        const params: Json = { intent: { ...intent, intentId: id } };
        try {
          const launched = await launcher.launch(handler, params);
          rec.pid = launched.pid;
          // The place is held while the service's own process lives; a process the
          // application manager started is the manager's to bound.
          if (launched.ended) launched.ended.then(place.release, place.release);
          else place.release();
        } catch (e) {
          place.release();
          ctx.log.error({ intentId: id, handler: handler.name, sessionId: handler.sessionId, err: (e as Error).message }, "handler launch failed");
          expire(rec, "launch failed");
          raise(E.startFailed, e instanceof LaunchRefused ? { reason: e.message } : {});
        }
        ctx.log.info({ intentId: id, handler: handler.name, sessionId: handler.sessionId, action: intent.action, uri: intent.uri }, "intent started");
        return ok(call.subscription ? { subscribed: true, intentId: id } : { intentId: id });
      },

      sendResult(req, call) {
        const rec = runningIntent(req.intentId);
        // Only the handler the intent was routed to answers it.
        requireHandler(rec, call.caller);
        const message: z.input<ReturnType<typeof ResultMessage>> = {
          returnValue: true,
          subscribed: true,
          intentId: rec.id,
          ...(req.result !== undefined ? { result: req.result } : {}),
          ...(req.intent !== undefined ? { intent: req.intent } : {}),
          from: rec.handler.name,
        };
        ctx.topics.publish(resultKey(rec.id), message);
        touch(rec);
        return ok({ intentId: rec.id });
      },

      subscribeResult(req, call) {
        const rec = runningIntent(req.intentId);
        requireRequester(rec, call.caller);
        touch(rec);
        if (!call.subscription) return ok({ subscribed: false, intentId: rec.id });
        ctx.topics.add(resultKey(rec.id), call.subscription);
        return ok({ subscribed: true, intentId: rec.id });
      },
    };

    const instance = {
      handlers,

      stop() {
        registry.stop();
        launcher.stop();
        for (const rec of [...intents.values()]) expire(rec, "service stopping");
      },

      /** Counts for tests and diagnostics. */
      inspect() {
        let subscribers = 0;
        const perIntent: Record<number, number> = {};
        for (const r of intents.values()) {
          const n = ctx.topics.subscribers(resultKey(r.id)).length;
          subscribers += n;
          perIntent[r.id] = n;
        }
        return { intents: intents.size, subscribers, perIntent, handlers: registry.handlers.length, generation: registry.generation, processes: processes.counts(), rateLimitedUids: rate.size };
      },
      registry,
    };
    return instance;
  },
});
