// UI test automation service (spec part 1). Clients send commands; nubs (agents in
// the applications, see nub.ts) subscribe for them and answer with replyToCommand.
// Stage lifetime and timeouts: docs/decisions.md "Test automation".
import { fail, ServiceError, type Json } from "../../core/errors";
import { defineService, type Subscription, type Caller } from "../../core/service";
import { api } from "./schemas";
import { E } from "./errors";
import pkg from "../../../package.json" with { type: "json" };

/** Commands the service answers itself; any other is redirected to a stage. */
const MAPPED = new Set(["getRunningAppsAndStages", "getApplicationInformation"]);
/** Commands the nub protocol defines (nub.ts); an unknown one with no stage is refused here. */
const STAGE_COMMANDS = new Set(["getItems", "commandsBatch"]);

interface StageState {
  id: number;
  pid: number;
  width: number;
  height: number;
  name: string;
  isActive: boolean;
  scene: string;
  type: string;
  appId: string;
  baseURI?: string;
  version?: string;
  owner: string;
  commands: Subscription;
}

interface Pending {
  stageId: number;
  command: string;
  resolve: (queue: unknown[]) => void;
  reject: (fields: { code: number; text: string }) => void;
}

const isInt = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v);

export default defineService({
  spec: {
    name: "testautomation",
    busName: "com.vendor.service.testautomation",
    description:
      "UI test automation: mediates between test clients that send commands and nubs, the agents inside applications, which subscribe to commands and reply.",
    api,
    badRequest: (_method, p) => {
      if (p.kind === "json") return { errorCode: E.invalidJson.code, errorText: E.invalidJson.text };
      const field = String(p.path?.[0] ?? "");
      const row =
        p.missing !== undefined && p.path?.length === 1
          ? E.missing(field)
          : field === "stageId"
            ? E.badStage
            : field === "teCommandId"
              ? E.badCommandId
              : field === "appInfo"
                ? E.badAppId
                : field === "command"
                  ? E.noCommandName
                  : E.missing(p.path?.join(".") ?? field);
      return { errorCode: row.code, errorText: row.text };
    },
    internalError: () => ({ errorCode: -1, errorText: "Unknown error" }),
  },

  create(ctx) {
    const cfg = ctx.config as { replyTimeoutMs?: number };
    const replyTimeoutMs = cfg.replyTimeoutMs ?? 10000;
    const stages = new Map<number, StageState>();
    const events = new Set<Subscription>();
    const pending = new Map<number, Pending>();
    let nextStageId = 1;
    let nextCommandId = 1;

    const publishEvent = (event: Json) => {
      for (const s of events) s.push({ returnValue: true, ...event });
    };

    const removeStage = (stage: StageState) => {
      if (!stages.delete(stage.id)) return;
      for (const [id, p] of pending) if (p.stageId === stage.id) {
        pending.delete(id);
        p.reject(E.badStage);
      }
      publishEvent({ stageId: stage.id, type: "stageRemoved" });
      ctx.log.info({ stageId: stage.id, appId: stage.appId }, "stage removed");
    };

    const stageInfo = (s: StageState) => ({
      id: s.id,
      pid: s.pid,
      width: s.width,
      height: s.height,
      name: s.name,
      isActive: s.isActive,
      scene: s.scene,
      type: s.type,
    });

    const lookupStage = (stageId: unknown): StageState => {
      if (stageId === undefined) fail(E.missing("stageId").code, E.missing("stageId").text);
      const s = isInt(stageId) ? stages.get(stageId) : undefined;
      if (!s) fail(E.badStage.code, E.badStage.text);
      return s;
    };

    /** Sends a command to a stage's nub and waits for its replyToCommand. */
    const redirect = (stage: StageState, teCommandId: number, message: Json): Promise<unknown[]> =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          if (pending.delete(teCommandId))
            reject({ code: -1, text: `Stage ${stage.id} did not answer command ${teCommandId} within ${replyTimeoutMs} ms` });
        }, replyTimeoutMs);
        pending.set(teCommandId, {
          stageId: stage.id,
          command: String(message.command),
          resolve: (q) => (clearTimeout(timer), resolve(q)),
          reject: (f) => (clearTimeout(timer), reject(f)),
        });
        stage.commands.push({ returnValue: true, ...message, stageId: stage.id, teCommandId });
      });

    return {
      handlers: {
        broadcastCommand(req: { command?: string }) {
          const command = req.command ?? "";
          for (const s of stages.values()) s.commands.push({ returnValue: true, command, broadcast: true });
          return { returnValue: true };
        },

        async handleRequest(req: { command?: unknown; stageId?: unknown; queue?: unknown }) {
          // Observed behavior 1: no command at all.
          if (req.command === undefined) fail(E.missing("command").code, E.missing("command").text);
          const command = req.command;
          if (command === "getRunningAppsAndStages") {
            const byApp = new Map<string, StageState[]>();
            for (const s of stages.values()) byApp.set(s.appId, [...(byApp.get(s.appId) ?? []), s]);
            return {
              returnValue: true,
              result: [...byApp].map(([appId, list]) => ({ appId, displayId: 0, stages: list.map(stageInfo) })),
            };
          }
          if (command === "getApplicationInformation") {
            const s = lookupStage(req.stageId);
            return {
              returnValue: true,
              result: {
                resolution: { width: s.width, height: s.height },
                displayId: -1,
                pid: s.pid,
                isQmlApplication: s.type.toLowerCase() === "qml",
                id: s.appId,
              },
            };
          }
          // Everything else goes to a stage, under a new teCommandId.
          const teCommandId = nextCommandId++;
          // Observed behavior 3.
          if (typeof command !== "string")
            fail(E.noCommandName.code, E.noCommandName.text, { teCommandId });
          // Observed behavior 4.
          if (command === "commandsBatch" && !Array.isArray(req.queue))
            return { returnValue: false, result: null, teCommandId };
          // Observed behavior 2 (a command nobody here knows, with no stage to ask).
          if (!STAGE_COMMANDS.has(command) && req.stageId === undefined)
            fail(E.unknownCommand(command).code, E.unknownCommand(command).text, { teCommandId });
          let stage: StageState;
          try {
            stage = lookupStage(req.stageId);
          } catch (e) {
            throw new ServiceError({ ...(e as ServiceError).fields, teCommandId });
          }
          const message: Json = { ...(req as Json), command };
          delete message.subscribe;
          let queue: unknown[];
          try {
            queue = await redirect(stage, teCommandId, message);
          } catch (f) {
            const { code, text } = f as { code: number; text: string };
            fail(code, text, { teCommandId });
          }
          if (command === "commandsBatch") return { returnValue: true, result: queue, teCommandId };
          // A single command: the nub's queue holds its one result object.
          const r = (queue[0] ?? {}) as Json;
          const out: Json = { returnValue: r.returnValue !== false, teCommandId };
          if ("result" in r) out.result = r.result;
          if (r.errorCode !== undefined) out.errorCode = r.errorCode;
          if (r.errorText !== undefined) out.errorText = r.errorText;
          return out;
        },

        notifyEvent(req: { stageId: number; type: string }) {
          const stage = lookupStage(req.stageId);
          if (req.type === "stageActivate")
            for (const s of stages.values()) if (s.appId === stage.appId) s.isActive = s.id === stage.id;
          publishEvent({ stageId: stage.id, type: req.type });
          return { returnValue: true };
        },

        ping(req: { Message?: string }) {
          return req.Message === undefined ? {} : { Message: req.Message };
        },

        replyToCommand(req: { stageId: number; teCommandId: number; command: string; queue: unknown[] }, call) {
          const p = pending.get(req.teCommandId);
          if (!p) fail(E.badCommandId.code, E.badCommandId.text, { teCommandId: req.teCommandId });
          const stage = stages.get(req.stageId);
          if (!stage || stage.id !== p.stageId || stage.owner !== call.caller.name)
            fail(E.badStage.code, E.badStage.text, { teCommandId: req.teCommandId });
          pending.delete(req.teCommandId);
          p.resolve(req.queue);
          return { returnValue: true, teCommandId: req.teCommandId };
        },

        subscribeToCommands(req: any, call) {
          if (req.subscribe !== true || !call.subscription) fail(E.notSubscription.code, E.notSubscription.text);
          if (!req.appInfo.id) fail(E.badAppId.code, E.badAppId.text);
          const caller: Caller = call.caller;
          const stage: StageState = {
            id: nextStageId++,
            pid: caller.pid,
            width: req.width ?? req.appInfo.resolution?.width ?? 1920,
            height: req.height ?? req.appInfo.resolution?.height ?? 1080,
            name: req.name,
            isActive: false,
            scene: req.scene,
            type: req.type,
            appId: req.appInfo.id,
            baseURI: req.baseURI,
            version: req.version,
            owner: caller.name,
            commands: call.subscription,
          };
          stages.set(stage.id, stage);
          call.subscription.onEnd(() => removeStage(stage));
          ctx.log.info({ stageId: stage.id, appId: stage.appId, pid: stage.pid }, "stage created");
          return { returnValue: true, subscribed: true, stageId: stage.id };
        },

        subscribeToEvents(req: { subscribe: boolean }, call) {
          if (req.subscribe !== true || !call.subscription) fail(E.notSubscription.code, E.notSubscription.text);
          const sub = call.subscription;
          events.add(sub);
          sub.onEnd(() => events.delete(sub));
          return { returnValue: true, subscribed: true };
        },

        version() {
          return { returnValue: true, version: pkg.version };
        },
      },

      // Subscriptions end by themselves when their caller goes (which removes its
      // stages); nothing else is held per client.
      clientGone() {},
    };
  },
});
