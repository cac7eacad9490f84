// UI test automation API (spec part 1, com.vendor.service.testautomation, API level 24).
import { z } from "zod";
import { base, once, type Api, type Caller } from "../../core/service";
import { allowed, group, type AccessRule } from "../../core/access";

/** Root or members of this group may send commands into applications and post stage events. */
export const TEST_GROUP = "devservices-test";
const TEST_ACCESS = group(TEST_GROUP);
/** handleRequest commands the service answers itself from its stage list; any other is sent into an application. */
export const MAPPED = new Set(["getRunningAppsAndStages", "getApplicationInformation"]);

/** handleRequest: reading the service's stage list is anyone's; a command sent into an application is the group's. */
const HANDLE_REQUEST_ACCESS: AccessRule = {
  describe: `any caller for ${[...MAPPED].join(" and ")} (answered by the service); root or group ${TEST_GROUP} for a command sent into an application`,
  test: (caller: Caller, req: { command?: unknown }) =>
    req?.command === undefined || (typeof req.command === "string" && MAPPED.has(req.command)) || allowed(TEST_ACCESS, caller, req),
};

export const Resolution = once(() => z.lazy(() => z.object({ width: z.number().default(1920), height: z.number().default(1080) })));
export const AppInfo = once(() => z.lazy(() => z.looseObject({ id: z.string(), resolution: Resolution().optional() })));
export const Filter = once(() => z.lazy(() => z.looseObject({
  className: z.string().optional().describe("matches an item whose class name begins with it"),
  objectName: z.string().optional(),
  visible: z.boolean().optional(),
  onlyActiveWindow: z.boolean().optional(),
  hierarchy: z.string().optional().describe("object names ('#a #b'), matched against the end of the item's hierarchy"),
})));
export const QueueEntry = once(() => z.lazy(() => z.looseObject({ command: z.unknown().describe("string: the command"), filter: Filter().optional() })));
export const Stage = once(() => z.lazy(() => z.object({
  id: z.number(),
  pid: z.number(),
  width: z.number(),
  height: z.number(),
  name: z.string(),
  isActive: z.boolean(),
  scene: z.string(),
  type: z.string(),
})));
export const RunningApp = once(() => z.lazy(() => z.object({ appId: z.string(), displayId: z.number(), stages: z.array(Stage()) })));
export const ApplicationInformation = once(() => z.lazy(() => z.object({
  resolution: z.object({ width: z.number(), height: z.number() }),
  displayId: z.number(),
  pid: z.number(),
  isQmlApplication: z.boolean(),
  id: z.string(),
})));
const Response = once(() => z.looseObject(base()));
/** Spec: Number. Stage and command IDs are whole numbers; any other number names none ("Invalid Stage ID", "Command ID is invalid"). */
const stageId = once(() => z.number());

export const api = {
  broadcastCommand: {
    summary:
      "Sends a command to every nub; always succeeds for root and the devservices-test group (an absent, empty or non-string command is sent as the empty command); any other caller is refused (-1, Permission denied) and nothing is sent.",
    request: () => z.looseObject({ command: z.unknown().optional().describe("string; empty or absent accepted") }),
    response: () => z.union([
      z.object({ returnValue: z.literal(true) }),
      z.object({ returnValue: z.literal(false), errorCode: z.number(), errorText: z.string() }).describe("a caller outside root and devservices-test"),
    ]),
    access: TEST_ACCESS,
  },
  handleRequest: {
    summary:
      "Processes a command: getRunningAppsAndStages and getApplicationInformation are answered by the service (any caller); other commands (getItems, commandsBatch, ...) are redirected to the stage's nub with a teCommandId (root and the devservices-test group).",
    request: () => z.looseObject({
      command: z.unknown().describe("string, required"),
      stageId: z.unknown().optional().describe("number; required for getApplicationInformation and redirected commands"),
      queue: z.unknown().optional().describe("array of {command, filter}; for commandsBatch"),
    }),
    response: () => Response().extend({ result: z.unknown().optional(), teCommandId: z.number().optional() }),
    access: HANDLE_REQUEST_ACCESS,
  },
  notifyEvent: {
    summary: "A nub reports an event of its stage; subscribeToEvents subscribers receive it. Root and the devservices-test group.",
    request: () => z.looseObject({ stageId: stageId(), type: z.string() }),
    response: () => Response(),
    access: TEST_ACCESS,
  },
  ping: {
    summary: "Liveness check: returnValue true, with Message echoed when one was sent.",
    request: () => z.looseObject({ Message: z.string().optional() }),
    response: () => Response().extend({ Message: z.string().optional() }),
  },
  replyToCommand: {
    summary: "A nub answers a redirected command; queue holds one result object per executed command.",
    request: () => z.looseObject({ stageId: stageId(), teCommandId: z.number(), command: z.string(), queue: z.array(z.unknown()) }),
    response: () => Response().extend({ teCommandId: z.number().optional() }),
  },
  subscribeToCommands: {
    summary: "A nub subscribes for commands; its stage is created and its stageId returned. The stage is removed when the subscription ends.",
    request: () => z.looseObject({
      subscribe: z.boolean(),
      appInfo: AppInfo(),
      baseURI: z.string().optional(),
      width: z.number().optional(),
      height: z.number().optional(),
      name: z.string(),
      scene: z.string(),
      version: z.string().optional(),
      type: z.string(),
    }),
    response: () => Response().extend({ subscribed: z.boolean().optional(), stageId: z.number().optional() }),
    subscribable: true,
  },
  subscribeToEvents: {
    summary: "Subscribes to stage events (from notifyEvent, and stageRemoved when a nub goes away).",
    request: () => z.looseObject({ subscribe: z.boolean() }),
    response: () => Response().extend({ subscribed: z.boolean().optional() }),
    subscribable: true,
  },
  version: {
    summary: "The service version.",
    request: () => z.looseObject({}),
    response: () => Response().extend({ version: z.string().optional() }),
  },
} satisfies Api;
