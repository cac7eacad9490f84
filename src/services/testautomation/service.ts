// UI test automation service (spec part 1). Clients send commands; nubs (agents in
// the applications, see nub.ts) subscribe for them and answer with replyToCommand.
// A stage is a lease of its nub bound to the nub's subscribeToCommands call, so it
// goes when that call ends (cancel, disconnect). Stage lifetime and timeouts:
// docs/decisions.md "Test automation"; who may send into applications (root and
// devservices-test, schemas.ts access rules): docs/decisions/testautomation.md.
import { answer, raise, ok, ServiceError, type ErrorRow, type Json } from "../../core/errors";
import { IdSource } from "../../core/ids";
import { defineService, type ResponseOf } from "../../core/service";
import { loadConfig } from "../../core/config";
import { testAutomationOptions } from "./config";
import { api, MAPPED, TEST_GROUP } from "./schemas";
import { E } from "./errors";
import pkg from "../../../package.json" with { type: "json" };

/** Commands the nub protocol defines (nub.ts); an unknown one with no stage is refused here. */
const STAGE_COMMANDS = new Set(["getItems", "commandsBatch"]);

/** Topic keys: every nub (broadcasts), one stage's nub, the event subscribers. */
const NUBS = "nubs";
const EVENTS = "events";
const stageKey = (id: number) => `stage/${id}`;

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
}

interface Pending {
  stageId: number;
  resolve: (queue: unknown[]) => void;
  reject: (row: ErrorRow) => void;
}

type Api = typeof api;
type Res<M extends keyof Api> = ResponseOf<Api[M]>;

const isInt = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v);
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** The row of a request that fails its schema (a present field of the wrong type is not "missing"). */
function schemaRow(p: { missing?: string; path?: (string | number)[] }): ErrorRow {
  const field = String(p.path?.[0] ?? "");
  if (p.missing !== undefined && p.path?.length === 1) return E.missing(field);
  switch (field) {
    case "stageId":
      return E.badStage;
    case "teCommandId":
      return E.badCommandId;
    case "appInfo":
      return E.badAppId;
    case "command":
      return E.noCommandName;
    case "subscribe":
      return E.notSubscription;
    default:
      return E.invalidJson;
  }
}

export default defineService({
  spec: {
    name: "testautomation",
    busName: "com.vendor.service.testautomation",
    description:
      "UI test automation: mediates between test clients that send commands and nubs, the agents inside applications, which subscribe to commands and reply.",
    api,
    badRequest: (method, p) => {
      // Spec: broadcastCommand's returnValue is always true, whatever was sent.
      if (method === "broadcastCommand") return { returnValue: true };
      return answer(p.kind === "schema" ? schemaRow(p) : E.invalidJson);
    },
    internalError: () => answer(E.internal),
    // Not in the spec's table (docs/decisions/testautomation.md): its general code, our text.
    denied: (method) => answer(E.denied(method, TEST_GROUP)),
  },

  create(ctx) {
    const { replyTimeoutMs } = loadConfig({ service: "testautomation", schema: testAutomationOptions, section: ctx.config }).config;
    /** Live stages by id; each is a lease of its nub (released when its subscription ends). */
    const stages = new Map<number, StageState>();
    const pending = new Map<number, Pending>();
    let nextStageId = 1;
    // IDs unique across restarts: a nub's late reply from before a crash cannot answer a new command.
    const commandIds = new IdSource(`${ctx.stateDir}/command-ids`, { onError: (e) => ctx.log.warn({ err: e }, "teCommandId: the reserved block was not saved") });

    const publishEvent = (event: Json) => ctx.topics.publish(EVENTS, { returnValue: true, ...event });

    const removeStage = (stage: StageState) => {
      if (!stages.delete(stage.id)) return;
      for (const [id, p] of pending)
        if (p.stageId === stage.id) {
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
      if (stageId === undefined) raise(E.missing("stageId"));
      return (isInt(stageId) ? stages.get(stageId) : undefined) ?? raise(E.badStage);
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
          resolve: (q) => (clearTimeout(timer), resolve(q)),
          reject: (row) => (clearTimeout(timer), reject(row)),
        });
        if (ctx.topics.publish(stageKey(stage.id), { returnValue: true, ...message, stageId: stage.id, teCommandId }) === 0) {
          pending.delete(teCommandId);
          clearTimeout(timer);
          reject(E.badStage);
        }
      });

    /** The client's answer to a single redirected command: the nub's one result object. */
    const singleResult = (entry: unknown, teCommandId: number): Res<"handleRequest"> => {
      const r = isObject(entry) ? entry : {};
      const out: Res<"handleRequest"> = { returnValue: r.returnValue !== false, teCommandId };
      if ("result" in r) out.result = r.result;
      if (typeof r.errorCode === "number") out.errorCode = r.errorCode;
      if (typeof r.errorText === "string") out.errorText = r.errorText;
      return out;
    };

    return {
      handlers: {
        broadcastCommand(req) {
          // Absent, empty or not a string: the empty command (the call succeeds regardless).
          const command = typeof req.command === "string" ? req.command : "";
          ctx.topics.publish(NUBS, { returnValue: true, command, broadcast: true });
          return ok();
        },

        async handleRequest(req) {
          // Observed behavior 1: no command at all.
          if (req.command === undefined) raise(E.missing("command"));
          const command = req.command;
          if (command === "getRunningAppsAndStages") {
            const byApp = new Map<string, StageState[]>();
            for (const s of stages.values()) byApp.set(s.appId, [...(byApp.get(s.appId) ?? []), s]);
            return ok({ result: [...byApp].map(([appId, list]) => ({ appId, displayId: 0, stages: list.map(stageInfo) })) });
          }
          if (command === "getApplicationInformation") {
            const s = lookupStage(req.stageId);
            return ok({
              result: {
                resolution: { width: s.width, height: s.height },
                displayId: -1,
                pid: s.pid,
                isQmlApplication: s.type.toLowerCase() === "qml",
                id: s.appId,
              },
            });
          }
          // Everything else goes to a stage, under a new teCommandId.
          const teCommandId = commandIds.take();
          // Observed behavior 3.
          if (typeof command !== "string") raise(E.noCommandName, { teCommandId });
          // Observed behavior 4.
          if (command === "commandsBatch" && !Array.isArray(req.queue)) return { returnValue: false, result: null, teCommandId };
          // Observed behavior 2 (a command nobody here knows, with no stage to ask).
          if (!STAGE_COMMANDS.has(command) && req.stageId === undefined) raise(E.unknownCommand(command), { teCommandId });
          let stage: StageState;
          try {
            stage = lookupStage(req.stageId);
          } catch (e) {
            if (e instanceof ServiceError) throw new ServiceError({ ...e.fields, teCommandId });
            throw e;
          }
          const message: Json = { ...req, command };
          delete message.subscribe;
          let queue: unknown[];
          try {
            queue = await redirect(stage, teCommandId, message);
          } catch (row) {
            raise(row as ErrorRow, { teCommandId });
          }
          if (command === "commandsBatch") return ok({ result: queue, teCommandId });
          return singleResult(queue[0], teCommandId);
        },

        notifyEvent(req) {
          const stage = lookupStage(req.stageId);
          if (req.type === "stageActivate") for (const s of stages.values()) if (s.appId === stage.appId) s.isActive = s.id === stage.id;
          publishEvent({ stageId: stage.id, type: req.type });
          return ok();
        },

        ping(req) {
          // Convention 2 beside the ping row: returnValue true, with Message echoed when sent (docs/decisions/testautomation.md).
          return req.Message === undefined ? ok() : ok({ Message: req.Message });
        },

        replyToCommand(req, call) {
          const p = pending.get(req.teCommandId) ?? raise(E.badCommandId, { teCommandId: req.teCommandId });
          // Only the stage's own nub (the holder of its lease) may answer its commands.
          if (req.stageId !== p.stageId || !ctx.leases.heldBy(call.caller.name, stageKey(req.stageId)))
            raise(E.badStage, { teCommandId: req.teCommandId });
          pending.delete(req.teCommandId);
          p.resolve(req.queue);
          return ok({ teCommandId: req.teCommandId });
        },

        subscribeToCommands(req, call) {
          const sub = call.subscription;
          if (req.subscribe !== true || !sub) raise(E.notSubscription);
          if (!req.appInfo.id) raise(E.badAppId);
          const stage: StageState = {
            id: nextStageId++,
            pid: call.caller.pid,
            width: req.width ?? req.appInfo.resolution?.width ?? 1920,
            height: req.height ?? req.appInfo.resolution?.height ?? 1080,
            name: req.name,
            isActive: false,
            scene: req.scene,
            type: req.type,
            appId: req.appInfo.id,
            baseURI: req.baseURI,
            version: req.version,
          };
          stages.set(stage.id, stage);
          ctx.leases.take(call.caller.name, stageKey(stage.id), { boundTo: sub, data: stage, release: () => removeStage(stage) });
          ctx.topics.add(stageKey(stage.id), sub);
          // Every nub gets the same broadcastCommand message, and anyone may subscribe: shared.
          ctx.topics.add(NUBS, sub, { shared: true });
          ctx.log.info({ stageId: stage.id, appId: stage.appId, pid: stage.pid }, "stage created");
          return ok({ subscribed: true, stageId: stage.id });
        },

        subscribeToEvents(req, call) {
          if (req.subscribe !== true || !call.subscription) raise(E.notSubscription);
          ctx.topics.add(EVENTS, call.subscription, { shared: true });
          return ok({ subscribed: true });
        },

        version() {
          return ok({ version: pkg.version });
        },
      },
    };
  },
});
