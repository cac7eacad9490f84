// What a service is, independent of the bus: a spec API (schemas per method, in
// the service's schemas.ts), a handler per method, and one per-client cleanup hook.
// src/bus/ hosts these on D-Bus; services never import dbus-next.
import { z } from "zod";
import type { Json } from "./errors";
import type { Logger } from "./log";
import type { Board } from "./board";

export interface MethodSpec {
  /** One line for --help and describe. */
  summary: string;
  /** The request payload schema: the single source of truth for validation and docs. */
  request: z.ZodType;
  /** The response schema (success and failure shapes). */
  response: z.ZodType;
  /** True when `subscribe: true` keeps the call open. */
  subscribable?: boolean;
  /** True when the reply carries a file descriptor (D-Bus out signature `sh`). */
  passesFd?: boolean;
  /** Platform API level the method exists from. */
  level?: number;
}

export type Api = Record<string, MethodSpec>;

/** How a request that is not valid JSON or fails its schema is answered. */
export type BadRequest = (
  method: string,
  problem: { kind: "json" | "schema"; message: string; missing?: string; path?: (string | number)[] },
) => Json;

export interface ServiceSpec<A extends Api = Api> {
  /** Short name: the last label of the bus name (`testautomation`). */
  name: string;
  busName: string;
  /** One paragraph for describe/--help. */
  description: string;
  api: A;
  badRequest: BadRequest;
  /** How an unexpected failure inside a handler is answered (the spec's "unknown error" row). */
  internalError(method: string, error: unknown): Json;
}

export interface Caller {
  /** Unique bus name (":1.42"). */
  name: string;
  uid: number;
  pid: number;
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
  /** Present when the payload had `subscribe: true` (a JSON boolean) on a subscribable method. */
  subscription?: Subscription;
}

/** A reply that carries a file descriptor (methods with passesFd). */
export class FdReply {
  constructor(
    public readonly response: Json,
    public readonly fd: number,
    /** Close our copy once sent (for fds made just for this reply). */
    public readonly closeAfterSend = true,
  ) {}
}

export type Handler = (req: any, call: Call) => Json | FdReply | Promise<Json | FdReply>;

export interface ServiceInstance<A extends Api = Api> {
  handlers: { [K in keyof A]: Handler };
  /** The per-client cleanup hook: the caller's connection is gone; release all it held. */
  clientGone?(caller: string): void | Promise<void>;
  stop?(): void | Promise<void>;
}

/** What a service gets when it is created. */
export interface ServiceContext {
  board: Board;
  stateDir: string;
  log: Logger;
  /** Address of the bus this process serves on (for calling other services or system peers). */
  busAddress: string;
  /** Bus client of this process, for calls to other services and system daemons. */
  client: import("../bus/client").BusClient;
  /** Per-service configuration from the board recipe's `services.<name>` section. */
  config: Json;
}

export interface ServiceModule<A extends Api = Api> {
  spec: ServiceSpec<A>;
  create(ctx: ServiceContext): ServiceInstance<A> | Promise<ServiceInstance<A>>;
}

export function defineService<A extends Api>(m: ServiceModule<A>): ServiceModule<A> {
  return m;
}

/** `returnValue` plus optional error fields: the common response base. */
export const base = {
  returnValue: z.boolean(),
  errorCode: z.number().optional(),
  errorText: z.string().optional(),
};
