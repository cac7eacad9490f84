// What a service is, independent of the bus: a spec API (schemas per method, in the
// service's schemas.ts, with who may call each), typed handlers, and the shared
// platform pieces it is created with (leases, topics, configuration, logging).
// src/bus/ hosts these on D-Bus; services never import dbus-next.
import { z } from "zod";
import { ASK_ZOD, simpleParse, type SimpleParse } from "./simple-parse";
import { PARSE_OPTIONS } from "./config";
import { withoutFTL } from "./engine";
import { answer, rowForInvalid, type ErrorRow, type Invalid, type InvalidRows, type Json } from "./errors";
import type { Logger } from "./log";
import type { Board } from "./board";
import type { AccessRule } from "./access";
import type { Leases } from "./leases";
import type { Topics } from "./topics";

export interface MethodSpec<Req extends z.ZodType = z.ZodType, Res extends z.ZodType = z.ZodType> {
  /** One line for --help and describe. */
  summary: string;
  /**
   * The request payload schema: the single source of truth for validation and docs.
   * Built when first needed (schemaOf): a process hosting every service does not pay
   * at start for the schemas of methods nobody has called yet.
   */
  request: () => Req;
  /** The response schema (success and failure shapes), built when first needed. */
  response: () => Res;
  /** True when `subscribe: true` keeps the call open. */
  subscribable?: boolean;
  /** Every successful call is a subscription, whatever the payload says (the spec's "always true"). */
  alwaysSubscribes?: boolean;
  /** True when the reply carries a file descriptor (D-Bus out signature `sh`). */
  passesFd?: boolean;
  /** Who may call it (default: any caller). A service may override it from configuration. */
  access?: AccessRule;
  /** Platform API level the method exists from. */
  level?: number;
  /**
   * The spec error a request failing the request schema gets, by field or for the
   * method (errors.ts, InvalidRows); the service's `invalid` when this has no row.
   */
  invalid?: InvalidRows;
}

/** Builds a method spec keeping its schema types (for typed handlers). */
export function method<Req extends z.ZodType, Res extends z.ZodType>(m: MethodSpec<Req, Res>): MethodSpec<Req, Res> {
  return m;
}

export type Api = Record<string, MethodSpec<any, any>>;

/**
 * A value (a schema shared by several methods) built on its first use and kept. A
 * module-level schema is built when the module is evaluated, at every start, whether
 * or not any method that uses it is ever called: a process hosting every service
 * paid for all of them in start time and idle heap (docs/performance.md). A schema
 * used only once (a service's options, read at start) is a plain function instead,
 * so that it is garbage once used.
 */
export function once<T>(build: () => T): () => T {
  let value: T | undefined;
  let made = false;
  return () => {
    if (!made) {
      value = build();
      made = true;
    }
    return value as T;
  };
}

const built = new WeakMap<MethodSpec, { request?: z.ZodType; response?: z.ZodType; simple?: SimpleParse | null }>();

/** What is built for a method, kept by its spec. */
function builtFor(m: MethodSpec) {
  let b = built.get(m);
  if (!b) built.set(m, (b = {}));
  return b;
}

/** A method's request or response schema, built on first use and kept. */
export function schemaOf<M extends MethodSpec>(m: M, which: "request" | "response"): z.ZodType {
  const b = builtFor(m);
  return (b[which] ??= m[which]());
}

/**
 * A request as the method's schema makes it: the schema's simple parse when it has
 * one (src/core/simple-parse.ts) and it vouches for the input, else zod's.
 */
export function parseRequest(m: MethodSpec, payload: unknown): z.ZodSafeParseResult<unknown> {
  const b = builtFor(m);
  const schema = (b.request ??= m.request());
  if (b.simple === undefined) b.simple = simpleParse(schema) ?? null;
  if (b.simple) {
    const data = b.simple(payload);
    if (data !== ASK_ZOD) return { success: true, data };
  }
  return schema.safeParse(payload, PARSE_OPTIONS);
}

/**
 * How a request that is not valid JSON, is over the limits, or fails its schema
 * without a row in the method tables (`invalid`) is answered. For a schema failure,
 * `message` is the first invalid value's sentence, `missing` the name of a required
 * value absent (a wrong type: undefined), `path` where it is, and `invalid` the whole
 * description.
 */
export type BadRequest = (
  method: string,
  problem: { kind: "json" | "schema" | "limits"; message: string; missing?: string; path?: (string | number)[]; invalid?: Invalid },
) => Json;

function valueAt(v: unknown, path: PropertyKey[]): unknown {
  for (const k of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

/** The one place a validator's issue becomes a description services choose their row from. */
export function describeInvalid(method: string, payload: unknown, error: z.ZodError): { invalid: Invalid; problem: Parameters<BadRequest>[1] } {
  const issue = error.issues[0]!;
  const path = issue.path.filter((k): k is string | number => typeof k !== "symbol");
  const absent = path.length > 0 && valueAt(payload, path) === undefined;
  const invalid: Invalid = {
    method,
    path,
    field: path.length ? String(path[0]) : "",
    ...(absent ? { missing: String(path.at(-1)) } : {}),
    range: issue.code === "too_big" || issue.code === "too_small",
    message: issue.message,
  };
  // `missing` of badRequest: a required value of the wrong type that is absent (as services read it).
  const missing = issue.code === "invalid_type" && absent ? invalid.missing : undefined;
  return { invalid, problem: { kind: "schema", message: issue.message, missing, path, invalid } };
}

/** The failure fields of an invalid request when the tables have a row for it (the method's, then the service's). */
export function invalidAnswer(service: ServiceSpec, method: string, invalid: Invalid): Json | undefined {
  const row = rowForInvalid(invalid, service.api[method]?.invalid, service.invalid);
  return row && (service.answer ? service.answer(method, row) : answer(row));
}

export interface ServiceSpec<A extends Api = Api> {
  /** Short name: the last label of the bus name (`testautomation`). */
  name: string;
  busName: string;
  /** One paragraph for describe/--help. */
  description: string;
  api: A;
  badRequest: BadRequest;
  /** The rows of requests failing their schema for methods that declare none of their own (MethodSpec.invalid). */
  invalid?: InvalidRows;
  /** How a spec row is written in this service's failures (default: errorCode and errorText, errors.ts answer). */
  answer?(method: string, row: ErrorRow): Json;
  /** How an unexpected failure inside a handler is answered (the spec's "unknown error" row). */
  internalError(method: string, error: unknown): Json;
  /** How a caller that the method's access rule refuses is answered. */
  denied?(method: string, caller: Caller): Json;
  /**
   * Fields the spec requires in every response of a method, failures included (intent
   * `start`'s `intentId`, `query`'s `handlers`): merged under every failure response
   * of the method, whatever produced it. `payload` is the request as far as it parsed.
   */
  failureFields?(method: string, payload: unknown): Json;
}

export interface Caller {
  /** Unique bus name (":1.42"). */
  name: string;
  uid: number;
  pid: number;
  /** Group ids when the bus daemon reported them (else read from /proc when needed). */
  gids?: number[];
}

/** A kept-open call (`subscribe: true`). Messages go to the subscribing caller only. */
export interface Subscription {
  readonly id: string;
  readonly caller: Caller;
  readonly method: string;
  readonly active: boolean;
  push(message: Json): void;
  /** Ends it from the service side, optionally with a last message. */
  end(last?: Json): void;
  /** Runs when it ends for any reason (cancel, disconnect, end()). */
  onEnd(fn: () => void): void;
}

export interface Call {
  caller: Caller;
  method: string;
  /** Present when the call is a subscription (`subscribe: true`, or alwaysSubscribes). */
  subscription?: Subscription;
}

/** A reply that carries a file descriptor (methods with passesFd). */
export class FdReply<R = Json> {
  constructor(
    public readonly response: R,
    public readonly fd: number,
    /** Close our copy once sent (for fds made just for this reply). */
    public readonly closeAfterSend = true,
  ) {}
}

export type RequestOf<M extends MethodSpec> = z.output<ReturnType<M["request"]>>;
export type ResponseOf<M extends MethodSpec> = z.input<ReturnType<M["response"]>>;
type Answer<R> = R | FdReply<R>;

/** A handler: the validated request in, the method's response (or a thrown ServiceError) out. */
export type Handler<M extends MethodSpec = MethodSpec> = (
  req: RequestOf<M>,
  call: Call,
) => Answer<ResponseOf<M>> | Promise<Answer<ResponseOf<M>>>;

export interface ServiceInstance<A extends Api = Api> {
  handlers: { [K in keyof A]: Handler<A[K]> };
  /** Access rules replacing the spec's defaults (from the service's configuration). */
  access?: Partial<Record<keyof A & string, AccessRule>>;
  stop?(): void | Promise<void>;
}

/** What a service gets when it is created. */
export interface ServiceContext {
  board: Board;
  stateDir: string;
  log: Logger;
  /** Address of the bus this process serves on (for calling other services or system peers). */
  busAddress: string;
  /** Calling other services and system daemons. */
  peers: Peers;
  /** Per-client ownership (released when the owner's connection goes away). */
  leases: Leases;
  /** The subscription catalog of this service. */
  topics: Topics;
  /** Per-service configuration from the board recipe's `services.<name>` section. */
  config: Json;
  /** Paths a client names, touched with that client's rights (never the service's). */
  files: CallerFiles;
}

/**
 * The file system as a caller may use it: every path a client names (an output file,
 * a directory to scan, a file to delete) goes through here. Paths must be absolute,
 * without `.`/`..` components or symlinks; the state directory and the product's own
 * files are never a target; the kernel decides with the caller's uid and groups;
 * what is created is the caller's (O_EXCL where the method creates). Failures throw
 * PathRefused.
 */
export interface CallerFiles {
  /** Opens path for the caller; resolves with the fd (the service closes it). */
  open(caller: Caller, path: string, flags: OpenFlags, mode?: number): Promise<number>;
  unlink(caller: Caller, path: string): Promise<void>;
  /** Removes an empty directory. */
  rmdir(caller: Caller, path: string): Promise<void>;
  mkdir(caller: Caller, path: string, mode?: number): Promise<void>;
  /** Whether the caller may read (r), write (w) or search/execute (x) path: the kernel's answer. */
  may(caller: Caller, path: string, what: "r" | "w" | "x" | "rx" | "wx"): Promise<boolean>;
  /** The path rules alone (absolute, no traversal, not the product's own files); throws PathRefused. */
  check(path: string): string;
}

/** How a caller's file is opened: read, write (create: a new file only; truncate: an existing one may be replaced), or a directory to read. */
export type OpenFlags = { read?: boolean; write?: boolean; create?: "new" | "new-or-existing"; truncate?: boolean; directory?: boolean; append?: boolean };

/** Why a path a client named was not used. */
export class PathRefused extends Error {
  constructor(
    readonly path: string,
    /** relative | traversal | own (the product's own files) | denied (EACCES/EPERM) | symlink | exists | missing | notdir | isdir | special (not a regular file or directory) | nospace | other */
    readonly reason: "relative" | "traversal" | "own" | "denied" | "symlink" | "exists" | "missing" | "notdir" | "isdir" | "special" | "nospace" | "other",
    readonly errno?: number,
    message?: string,
  ) {
    super(message ?? `${path}: ${reason}`);
  }
}

/** Calling peers on the bus: what core needs of the bus client, without importing it. */
export interface Peers {
  /** Calls a devservices method with a JSON payload. */
  call(service: string, method: string, payload?: Json | string, opts?: { timeoutMs?: number }): Promise<Json>;
  /** Calls a method that answers with an fd (camera getFd, gpio getPollingFd); the fd is the caller's. */
  callForFd(service: string, method: string, payload?: Json | string, opts?: { timeoutMs?: number }): Promise<{ response: Json; fd?: number }>;
  /** A plain D-Bus call (system daemons): the reply's body values. `receiveFds` when the reply carries fds. */
  callRaw(
    m: { destination: string; path: string; interface: string; member: string; signature?: string; body?: unknown[] },
    opts?: { timeoutMs?: number; receiveFds?: boolean },
  ): Promise<{ signature: string; body: any[]; sender?: string }>;
  /** Whether a bus name has an owner now. */
  hasOwner(name: string): Promise<boolean>;
  /** Runs fn when the named peer (a unique or well-known name) leaves the bus; returns an unwatch. */
  watchPeer(name: string, fn: () => void): Promise<() => void>;
  /** Receives D-Bus signals matching the rule's fields; returns an unsubscribe. */
  onSignal(
    match: { sender?: string; path?: string; interface?: string; member?: string },
    fn: (signal: { sender?: string; path?: string; member?: string; body: any[] }) => void,
  ): Promise<() => void>;
}

export interface ServiceModule<A extends Api = Api> {
  spec: ServiceSpec<A>;
  create(ctx: ServiceContext): ServiceInstance<A> | Promise<ServiceInstance<A>>;
  /**
   * A service with several instances, each on a bus name of its own (the recording
   * pipeline: `com.vendor.pipeline.record.<id>`): the modules the runtime hosts in
   * its place on this board, each as a service of its own (spec name, state
   * directory, topics, leases). `spec` then describes the family.
   */
  instances?(board: Board): ServiceModule<A>[];
}

export function defineService<A extends Api>(m: ServiceModule<A>): ServiceModule<A> {
  return m;
}

/** A failed answer as most services give it: returnValue false, the spec's errorCode and errorText. */
export const failureSchema = once(() => z.object({ returnValue: z.literal(false), errorCode: z.number(), errorText: z.string() }));

/** A method's response: its success shape (returnValue true and `shape`) or failureSchema. */
export const answerSchema = <T extends z.ZodRawShape>(shape: T) =>
  z.union([z.object({ returnValue: z.literal(true), ...shape }), failureSchema()]);

/** `returnValue` plus optional error fields: the common response base, built on first use. */
export const base = once(() => ({
  returnValue: z.boolean(),
  errorCode: z.number().optional(),
  errorText: z.string().optional(),
}));

// The per-call path stops at the DFG tier (engine.ts, withoutFTL).
withoutFTL(parseRequest);
