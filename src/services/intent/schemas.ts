// Intent service API (spec part 1, com.vendor.service.intent, API level 12).
import { z } from "zod";
import { once, type Api } from "../../core/service";

/** A `mimeTypes` entry of a filter (spec "What the service does"); a plain string is short for `{mime}`. */
export const MimeTypeEntry = once(() => z.lazy(() => z.union([
  z.string(),
  z.looseObject({
    mime: z.string().optional().describe("mime type, `type/*` and `*/*` allowed"),
    extension: z.string().optional().describe("file name extension of the uri's path"),
    stream: z.boolean().optional().describe("also handles this type from a non-file uri (a stream)"),
    scheme: z.string().optional().describe("handles every uri of this scheme"),
  }),
])));

export const IntentFilter = once(() => z.lazy(() => z.looseObject({
  actions: z.array(z.string()).optional(),
  uris: z.array(z.string()).optional().describe("prefixes: `http://` matches any http address"),
  mimeTypes: z.array(MimeTypeEntry()).optional(),
  priority: z.number().int().optional().describe("higher first among matching handlers (default 0)"),
})));

export const Intent = once(() => z.lazy(() => z.looseObject({
  name: z.string().optional().describe("handler name (explicit intent)"),
  action: z.string().optional().describe("action name (implicit intent)"),
  uri: z.string().optional(),
  mimeType: z.string().optional(),
  extra: z.record(z.string(), z.unknown()).optional(),
})));

export const Handler = once(() => z.lazy(() => z.object({
  name: z.string(),
  sessionId: z.string().optional(),
  intentFilters: z.array(IntentFilter()).optional(),
})));

export type IntentT = z.infer<ReturnType<typeof Intent>>;
export type IntentFilterT = z.infer<ReturnType<typeof IntentFilter>>;
export type MimeTypeEntryT = z.infer<ReturnType<typeof MimeTypeEntry>>;

const Failure = once(() => z.object({ returnValue: z.literal(false), errorCode: z.number().optional(), errorText: z.string() }));
/** Success with shape, or failure with the fields the spec requires in every response (failure). */
const answer = <S extends z.ZodRawShape, F extends z.ZodRawShape = {}>(shape: S, failure?: F) =>
  z.union([z.object({ returnValue: z.literal(true), errorText: z.string().optional(), ...shape }), Failure().extend(failure ?? ({} as F))]);

/** Spec: Number. The IDs handed out are whole numbers; any other number names no running intent. */
const intentId = once(() => z.number().describe("Number, the intent ID from start"));
const sessionId = once(() => z.string().optional().describe("only handlers running under this session"));

export const api = {
  query: {
    summary: "Lists handlers: all, those named by intent.name, or those whose filters match intent.action (and uri, mimeType).",
    request: () => z.looseObject({ intent: Intent().optional(), sessionId: sessionId() }),
    response: () => answer({ handlers: z.array(Handler()) }, { handlers: z.array(Handler()).describe("empty on failure") }),
    level: 12,
  },
  start: {
    summary: "Starts the best handler for an intent; with subscribe true the caller receives its results.",
    request: () => z.looseObject({ intent: Intent().optional(), subscribe: z.boolean().optional(), sessionId: sessionId() }),
    response: () => answer({ subscribed: z.boolean().optional(), intentId: intentId() }, { intentId: intentId().describe("the intent's ID; 0 when none was started"), reason: z.string().optional() }),
    subscribable: true,
    level: 12,
  },
  sendResult: {
    summary: "A handler replies to an intent; subscribers of start and subscribeResult receive the result.",
    request: () => z.looseObject({ intentId: intentId(), result: z.string().optional(), intent: Intent().optional() }),
    response: () => answer({ intentId: intentId() }, { reason: z.string().optional() }),
    level: 12,
  },
  subscribeResult: {
    summary: "Subscribes to the results of a running intent (without subscribe: tells whether it is running).",
    request: () => z.looseObject({ intentId: intentId(), subscribe: z.boolean().optional() }),
    response: () => answer({ subscribed: z.boolean().optional(), intentId: intentId() }, { intentId: intentId().describe("the intentId asked about; 0 when none was given"), reason: z.string().optional() }),
    subscribable: true,
    level: 12,
  },
} satisfies Api;

/** The intent result message (spec "Events"), pushed to result subscribers. */
export const ResultMessage = once(() => z.object({
  returnValue: z.literal(true),
  subscribed: z.literal(true),
  intentId: intentId(),
  result: z.string().optional(),
  intent: Intent().optional(),
  from: z.string(),
}));
