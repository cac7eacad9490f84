// The typed client for applications (docs/clients.md):
//
//   const power = await connect("power2", { bus: "system" });
//   const { state } = await power.getState({});
//   for await (const m of power.getState.subscribe({})) { ... break; }   // break sends Cancel
//
// Request and response types come from the zod schemas each service validates with
// (its schemas.ts), never written here: a request is z.input of the method's request
// schema, a response z.input of its response schema (what the handler answers, as
// JSON). Method paths become nested properties (`gpio/open` -> `gpio.open`). A
// failure answer (`returnValue: false`) is thrown as a ServiceError carrying the
// spec's errorCode and errorText.
import type { z } from "zod";
import { BusClient, BusError, type ClientSubscription } from "../bus/client";
import { resolveBusAddress } from "../bus/connection";
import type { MethodSpec } from "../core/service";
import type { Json } from "../core/errors";
import { SERVICE_APIS, busNameFor, type ServiceName } from "./services";

export { BusError } from "../bus/client";
export { SERVICE_APIS, type ServiceName } from "./services";

// ---- types ------------------------------------------------------------------------

type ApiOf<N extends ServiceName> = (typeof SERVICE_APIS)[N]["api"];

/** A method's request payload: what its request schema accepts. */
export type RequestOf<M extends MethodSpec> = z.input<ReturnType<M["request"]>>;
/** A method's response: what its handler answers (the input of its response schema), as JSON. */
export type ResponseOf<M extends MethodSpec> = z.input<ReturnType<M["response"]>>;
/** A response that is not a failure (`returnValue: false` is thrown as ServiceError). */
export type SuccessOf<M extends MethodSpec> = Exclude<ResponseOf<M>, { returnValue: false }>;
/** A later message of a subscription: some of the success response's fields (a service pushes what changed). */
export type MessageOf<M extends MethodSpec> = SuccessOf<M> extends infer O ? (O extends object ? { [K in keyof O]?: O[K] } : never) : never;

/** The request without `subscribe` (the subscribe variant sets it). */
type WithoutSubscribe<T> = { [K in keyof T as K extends "subscribe" ? never : K]: T[K] };

export interface CallOptions {
  /** Reply timeout in milliseconds (default: the connection's, 25 s). */
  timeoutMs?: number;
}

/** A one-shot call; methods that can keep a call open also have `subscribe`. */
export type MethodFn<M extends MethodSpec> = ((request: RequestOf<M>, opts?: CallOptions) => Promise<SuccessOf<M>>) &
  (M extends { subscribable: true } ? { subscribe(request: WithoutSubscribe<RequestOf<M>>, opts?: CallOptions): Subscription<M> } : {});

type Rel<A, P extends string> = { [K in keyof A & string]: K extends `${P}${infer R}` ? R : never }[keyof A & string];
type Head<R> = R extends `${infer H}/${string}` ? H : never;

/** The methods of an api, method paths (`gpio/open`) as nested properties (`gpio.open`). */
export type MethodTree<A, P extends string = ""> = {
  [R in Rel<A, P> as R extends `${string}/${string}` ? never : R]: A[`${P}${R}` & keyof A] extends infer M extends MethodSpec ? MethodFn<M> : never;
} & {
  [H in Head<Rel<A, P>>]: MethodTree<A, `${P}${H}/`>;
};

/** A connected service: its methods, plus `$`-prefixed members of the connection itself. */
export type ServiceClient<N extends ServiceName> = MethodTree<ApiOf<N>> & {
  /** The bus name called. */
  readonly $busName: string;
  /** This client's unique name on the bus (":1.42"). */
  readonly $uniqueName: string;
  /** The bus connection (shared with other services through `connect(name, { connection })`). */
  readonly $connection: BusClient;
  /** Resolves when the connection has ended. */
  readonly $closed: Promise<void>;
  /** Cancels this client's open subscriptions and, when it opened the connection, closes it. */
  $close(): Promise<void>;
};

export interface ConnectOptions {
  /** `system` (default, or $DEVSERVICES_BUS when set), `session`, or a D-Bus address (`unix:path=...`). */
  bus?: string;
  /** An open connection to share (its bus is used; $close() leaves it open). */
  connection?: BusClient;
  /**
   * The application's ID, as luna-send's `-a` (`devservices call -a`): the payload's
   * top-level `appId` in every call (docs/bus.md, "Caller identity"); a request with
   * another `appId` is refused here (TypeError). Methods that read it (camera2 `open`,
   * videooutput `connect`) take it from there, the others ignore it. A claim of the
   * caller, never a credential: what a caller may do is decided by its uid and groups
   * (docs/security.md); an appId can only narrow that (camera2's `appIds`).
   */
  appId?: string;
  /** For a family of services (`record`): the instance, e.g. the pipeline ID `main`. */
  instance?: string;
  /** Default reply timeout in milliseconds (25 s). */
  timeoutMs?: number;
  /**
   * Messages a subscription keeps while its reader does not take them (default
   * 10000): past that the subscription is cancelled and its iterator throws
   * SubscriptionLost with reason `overflow`.
   */
  maxBuffered?: number;
}

// ---- errors -----------------------------------------------------------------------

/** A failure answer of a service: `returnValue: false` with the spec's errorCode and errorText. */
export class ServiceError extends Error {
  readonly errorCode: number | undefined;
  readonly errorText: string;
  constructor(
    readonly service: string,
    readonly method: string,
    /** The whole answer (some methods add fields to failures, e.g. intent's intentId). */
    readonly response: Json,
  ) {
    const code = typeof response.errorCode === "number" ? response.errorCode : undefined;
    const text = typeof response.errorText === "string" ? response.errorText : "failed";
    super(`${service}/${method}: ${code !== undefined ? `${code} ` : ""}${text}`);
    this.name = "ServiceError";
    this.errorCode = code;
    this.errorText = text;
  }
}

/** A subscription that ended without the service ending it. */
export class SubscriptionLost extends Error {
  constructor(
    /** `connection`: this client's bus connection ended; `service`: the service left the bus; `overflow`: maxBuffered messages were not read. */
    readonly reason: "connection" | "service" | "overflow",
    readonly service: string,
    readonly method: string,
  ) {
    super(
      `${service}/${method}: subscription lost: ${reason === "connection" ? "the bus connection ended" : reason === "service" ? "the service left the bus" : "too many messages not read"}`,
    );
    this.name = "SubscriptionLost";
  }
}

// ---- subscriptions ----------------------------------------------------------------

/**
 * An open call (`subscribe: true`). Iterate it with `for await`: the first response,
 * then every later message, until the service ends it. Leaving the loop (`break`,
 * `return`, an exception) cancels it on the service; so does cancel(). A failure
 * (first answer or a later message with `returnValue: false`) is thrown as a
 * ServiceError; a lost connection or service as SubscriptionLost.
 */
export class Subscription<M extends MethodSpec = MethodSpec> implements AsyncIterableIterator<MessageOf<M>> {
  /** The first response (rejects with ServiceError on a failure answer). */
  readonly first: Promise<SuccessOf<M>>;
  private queue: Json[] = [];
  private done = false;
  private error?: Error;
  private wake?: () => void;
  private sub?: ClientSubscription;
  private started: Promise<void>;
  private cancelled = false;
  private untrack: () => void;

  /** @internal Use a method's `subscribe`. */
  constructor(
    private readonly client: BusClient,
    private readonly busName: string,
    private readonly method: string,
    payload: Json,
    opts: { timeoutMs?: number; maxBuffered: number; isLost: () => boolean; track: (s: Subscription<any>) => () => void },
  ) {
    this.untrack = opts.track(this);
    let resolveFirst!: (v: SuccessOf<M>) => void, rejectFirst!: (e: Error) => void;
    this.first = new Promise((res, rej) => ((resolveFirst = res), (rejectFirst = rej)));
    this.first.catch(() => {}); // read through the iterator or awaited: either way, not unhandled
    const onMessage = (m: Json) => {
      if (this.done) return;
      if (this.queue.length >= opts.maxBuffered) {
        this.finish(new SubscriptionLost("overflow", busName, method));
        void this.sub?.cancel();
        return;
      }
      this.queue.push(m);
      this.wake?.();
    };
    this.started = client.subscribe(busName, method, payload, onMessage, { timeoutMs: opts.timeoutMs }).then(
      async (sub) => {
        this.sub = sub;
        if (sub.first.returnValue === false) {
          const e = new ServiceError(busName, method, sub.first);
          rejectFirst(e);
          this.finish(e);
          return;
        }
        resolveFirst(sub.first as SuccessOf<M>);
        this.queue.unshift(sub.first);
        this.wake?.();
        if (this.cancelled) await sub.cancel();
        void sub.ended.then(async () => {
          if (this.done) return;
          // Why it ended: cancelled here, our connection ended, the service left, or the service ended it.
          if (this.cancelled) return this.finish();
          if (opts.isLost()) return this.finish(new SubscriptionLost("connection", busName, method));
          const gone = sub.first.subscribed === true && !(await client.hasOwner(busName).catch(() => false));
          this.finish(gone ? new SubscriptionLost("service", busName, method) : undefined);
        });
      },
      (e: Error) => {
        rejectFirst(e);
        this.finish(opts.isLost() ? new SubscriptionLost("connection", busName, method) : e);
      },
    );
  }

  /** The call serial: the subscription's key on the wire (docs/bus.md). Known once the first response arrived. */
  get serial(): number | undefined {
    return this.sub?.serial;
  }

  private finish(error?: Error) {
    if (this.done) return;
    this.done = true;
    this.error = error;
    this.untrack();
    this.wake?.();
  }

  async next(): Promise<IteratorResult<MessageOf<M>>> {
    for (;;) {
      const m = this.queue.shift();
      if (m !== undefined) {
        if (m.returnValue === false) {
          // A failure pushed by the service (e.g. a pin closed under a watch): the end.
          await this.cancel();
          throw new ServiceError(this.busName, this.method, m);
        }
        return { value: m as MessageOf<M>, done: false };
      }
      if (this.done) {
        if (this.error) {
          const e = this.error;
          this.error = undefined; // thrown once; then the iterator is simply done
          throw e;
        }
        return { value: undefined, done: true };
      }
      await new Promise<void>((r) => (this.wake = r));
      this.wake = undefined;
    }
  }

  /** Leaving a `for await` loop: cancels on the service and waits for its answer. */
  async return(): Promise<IteratorResult<MessageOf<M>>> {
    await this.cancel();
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.cancel();
  }

  /** Cancels it on the service (the Cancel call of docs/bus.md); waits for the service's answer. */
  async cancel(): Promise<void> {
    this.cancelled = true;
    this.queue.length = 0;
    this.finish();
    await this.started.catch(() => {});
    await this.sub?.cancel();
  }
}

// ---- connect ----------------------------------------------------------------------

/**
 * Connects to a service by its short name (`power2`, `peripheralmanager`, `record`
 * with `instance`). The returned object has one function per method; `$close()`
 * ends it.
 */
export async function connect<N extends ServiceName>(name: N, opts: ConnectOptions = {}): Promise<ServiceClient<N>> {
  const entry = SERVICE_APIS[name];
  if (!entry) throw new TypeError(`no service named '${name}' (one of ${Object.keys(SERVICE_APIS).join(", ")})`);
  const busName = busNameFor(name, opts.instance);
  const own = !opts.connection;
  const client = opts.connection ?? (await BusClient.connect(resolveBusAddress(opts.bus), opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}));
  let lost = false;
  client.conn.onClose(() => (lost = true));
  const open = new Set<Subscription<any>>();
  const maxBuffered = opts.maxBuffered ?? 10000;
  const timeout = (o?: CallOptions) => ({ timeoutMs: o?.timeoutMs ?? opts.timeoutMs });

  // The bus contract's application id (docs/bus.md, "Caller identity"): the payload's top-level appId.
  const withAppId = (method: string, req: Json): Json => {
    if (opts.appId === undefined || req.appId === opts.appId) return req;
    if (req.appId !== undefined) throw new TypeError(`${busName}/${method}: the request's appId '${String(req.appId)}' is not the client's '${opts.appId}'`);
    return { ...req, appId: opts.appId };
  };

  const methodFn = (method: string, spec: MethodSpec) => {
    const call = async (request: Json = {}, o?: CallOptions) => {
      const payload = withAppId(method, request);
      let response: Json;
      if (spec.subscribable && (payload.subscribe === true || spec.alwaysSubscribes)) {
        // One answer asked for a call that stays open: take the first, then cancel.
        const sub = await client.subscribe(busName, method, payload, () => {}, timeout(o));
        await sub.cancel();
        response = sub.first;
      } else response = await client.call(busName, method, payload, timeout(o));
      if (response.returnValue === false) throw new ServiceError(busName, method, response);
      return response;
    };
    if (spec.subscribable) {
      (call as any).subscribe = (request: Json = {}, o?: CallOptions) =>
        new Subscription(client, busName, method, withAppId(method, request), {
          ...timeout(o),
          maxBuffered,
          isLost: () => lost,
          track: (s) => (open.add(s), () => open.delete(s)),
        });
    }
    return call;
  };

  const root: Record<string, any> = {};
  for (const [method, spec] of Object.entries(entry.api as Record<string, MethodSpec>)) {
    const parts = method.split("/");
    let node = root;
    for (const p of parts.slice(0, -1)) node = node[p] ??= {};
    node[parts.at(-1)!] = methodFn(method, spec);
  }
  // Subscriptions leave the set when they end; cancel() runs for those still open at $close().
  const cancelAll = () => Promise.all([...open].map((s) => s.cancel()));
  Object.assign(root, {
    $busName: busName,
    $uniqueName: client.uniqueName,
    $connection: client,
    $closed: client.closed,
    async $close() {
      await cancelAll();
      open.clear();
      if (own) client.close();
    },
  });
  return root as ServiceClient<N>;
}

/** Re-exported for `instanceof` checks on D-Bus errors (no such service, timeout). */
export const isBusError = (e: unknown): e is BusError => e instanceof BusError;
