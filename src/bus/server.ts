// Hosts services on one bus connection: owns their names, dispatches calls to
// handlers (payload limits, JSON, schema, access rule, handler), keeps
// subscriptions, knows each caller's uid/pid, and releases everything a caller held
// (its subscriptions and its leases, in every service) when its connection goes.
import { z } from "zod";
import { connectBus, Connection, DBUS, METHOD_CALL, METHOD_RETURN, SIGNAL, ERROR, NO_REPLY_EXPECTED, type Message, type Outgoing } from "./connection";
import { memberName, objectPath, SUBSCRIPTION_INTERFACE, TOPIC_INTERFACE, ERROR_PREFIX } from "./wire";
import { introspectXml, childNodesXml } from "./introspect";
import { parsePayload, stringifyJson, PAYLOAD_LIMITS } from "./json";

/** Largest method call the hosting connection reads whole (4 x the payload limit: a JSON string's UTF-8 on the wire, with its escapes). */
export const maxRequestMessage = (payloadBytes: number) => 4 * payloadBytes;
import { ServiceError, type Json } from "../core/errors";
import { describeInvalid, FdReply, invalidAnswer, parseRequest, schemaOf, type Caller, type MethodSpec, type ServiceInstance, type ServiceSpec, type Subscription } from "../core/service";
import { allowed, describeRule, type AccessRule } from "../core/access";
import { LeaseRegistry } from "../core/leases";
import { noteCall, withoutFTL } from "../core/engine";
import { PARSE_OPTIONS } from "../core/config";
import { TopicCatalog } from "../core/topics";
import { logger, Throttle, type Logger } from "../core/log";
import { libc } from "../ffi/libc";

interface Hosted {
  spec: ServiceSpec;
  instance: ServiceInstance;
  path: string;
  members: Map<string, string>; // D-Bus member -> spec method
}

interface ClientState {
  caller: Promise<Caller>;
  /** The caller's credentials once the daemon has told them: later calls go on at once. */
  known?: Caller;
  subscriptions: Map<number, SubscriptionImpl>;
}

/** What a handler's call came to: its response, and the subscription opened for it. */
interface Ran {
  response: Json | FdReply;
  subscription?: SubscriptionImpl;
}

/** A value to wait for (a handler's or an access test's promise), or not. */
const isThenable = <T>(v: T | PromiseLike<T>): v is PromiseLike<T> => typeof (v as PromiseLike<T> | undefined)?.then === "function";

/** One call being dispatched: where it goes and who made it. */
interface Dispatch {
  h: Hosted;
  method: string;
  msg: Message;
  spec: MethodSpec;
  c: ClientState;
  caller: Caller;
}

class SubscriptionImpl implements Subscription {
  active = true;
  private ready = false;
  /** Shared catalog keys whose messages reach this subscription as broadcasts (it attached them). */
  readonly attached = new Set<string>();
  private queued: Json[] = [];
  private endFns: (() => void)[] = [];
  constructor(
    private server: BusServer,
    readonly id: string,
    readonly caller: Caller,
    readonly method: string,
    readonly serial: number,
    readonly path: string,
  ) {}
  push(message: Json) {
    if (!this.active) return;
    if (!this.ready) this.queued.push(message);
    else this.server.emitSubscriptionSignal(this, "Push", message);
  }
  end(last?: Json) {
    if (!this.active) return;
    if (last) this.push(last);
    if (this.ready) this.server.emitSubscriptionSignal(this, "Ended");
    this.finish();
  }
  onEnd(fn: () => void) {
    if (this.active) this.endFns.push(fn);
    else fn();
  }
  get opened(): boolean {
    return this.ready;
  }
  /** The first response went out: later messages may flow now. */
  open() {
    this.ready = true;
    for (const m of this.queued.splice(0)) this.server.emitSubscriptionSignal(this, "Push", m);
  }
  /** Ends without telling the caller (cancelled by it, or it is gone). */
  finish() {
    if (!this.active) return;
    this.active = false;
    this.server.forget(this);
    for (const fn of this.endFns.splice(0)) {
      try {
        fn();
      } catch (e) {
        logger("bus").error({ err: e, subscription: this.id }, "subscription end hook failed");
      }
    }
  }
}

/** What one client may hold at once (board recipe `limits`, docs/limits.md). */
export interface ClientLimits {
  /** Bytes of one request's JSON payload, and its nesting depth (checked before it is parsed). */
  payloadBytes: number;
  payloadDepth: number;
  /** Open subscriptions of one connection (unique name). */
  subscriptionsPerClient: number;
  /** Open subscriptions of all connections of one uid (an app may open many). */
  subscriptionsPerUser: number;
}

export const DEFAULT_CLIENT_LIMITS: ClientLimits = {
  payloadBytes: PAYLOAD_LIMITS.maxBytes,
  payloadDepth: PAYLOAD_LIMITS.maxDepth,
  subscriptionsPerClient: 1024,
  subscriptionsPerUser: 4096,
};

export interface ServerOptions {
  log?: Logger;
  /**
   * The bus enforces the layer's D-Bus policy (meta-devservices, src/policy.ts), whose
   * receive rules keep a group-limited method's topic broadcasts from other clients:
   * only then are shared topics of methods limited to root or groups broadcast. Default:
   * DEVSERVICES_BUS_POLICY=layer in the environment; otherwise those stay addressed.
   */
  policyEnforced?: boolean;
  limits?: Partial<ClientLimits>;
  /** Validate every response against the method's response schema (tests turn this on). */
  checkResponses?: boolean;
}

export class BusServer {
  readonly log: Logger;
  /** Per-client ownership, shared by every hosted service (each in its own key space). */
  readonly leases = new LeaseRegistry();
  /** The subscription catalog, shared likewise. */
  readonly topics = new TopicCatalog();
  private hosted = new Map<string, Hosted>(); // by object path
  private clients = new Map<string, ClientState>();
  private gone = new Set<string>();
  private checkResponses: boolean;
  readonly limits: ClientLimits;
  readonly policyEnforced: boolean;
  /** Refusals a client causes per call are logged once per interval per client and kind. */
  private refusals = new Throttle();
  /** Open subscriptions by caller uid (the per-user bound). */
  private subscriptionsOfUid = new Map<number, number>();
  disconnected = false;
  private closing = false;
  /** How long host() waits in the queue for a name another connection still holds. */
  nameWaitMs = 3000;
  /** Runs when the bus connection is lost (serve exits so that systemd restarts it). */
  readonly onDisconnect: (() => void)[] = [];
  /** The daemon's answer to the rule that tells clients' departures (connect). */
  private watching: Promise<void> = Promise.resolve();

  private constructor(readonly conn: Connection, readonly address: string, opts: ServerOptions) {
    this.log = opts.log ?? logger("bus");
    this.checkResponses = opts.checkResponses ?? process.env.DEVSERVICES_CHECK_RESPONSES === "1";
    this.limits = { ...DEFAULT_CLIENT_LIMITS, ...opts.limits };
    this.policyEnforced = opts.policyEnforced ?? process.env.DEVSERVICES_BUS_POLICY === "layer";
    this.topics.fanout = (key, id, subs, message) => this.fanOut(key, id, subs, message);
    this.topics.onLeave = (key, id, sub) => {
      if (sub instanceof SubscriptionImpl && sub.attached.delete(key) && sub.active)
        this.send({ type: SIGNAL, path: sub.path, interface: SUBSCRIPTION_INTERFACE, member: "Left", destination: sub.caller.name, signature: "us", body: [sub.serial, id] });
    };
    this.leases.onError = (e, lease) => this.log.error({ err: e, lease: lease.key, owner: lease.owner }, "releasing a lease failed");
    conn.onCall = (msg) => this.onMethodCall(msg);
    conn.onClose(() => {
      if (this.closing) return;
      this.log.error("the bus closed our connection");
      this.disconnected = true;
      for (const fn of this.onDisconnect) fn();
    });
    conn.onSignal((msg) => {
      if (msg.sender === "org.freedesktop.DBus" && msg.member === "NameOwnerChanged" && msg.body[2] === "") this.onNameGone(msg.body[0]);
    });
  }

  static async connect(address: string, opts: ServerOptions = {}): Promise<BusServer> {
    const payloadBytes = opts.limits?.payloadBytes ?? DEFAULT_CLIENT_LIMITS.payloadBytes;
    const conn = await connectBus(address, {
      negotiateUnixFd: true,
      receiveFds: process.env.DEVSERVICES_BUS_TRANSPORT === "poll",
      // A request is at most limits.payloadBytes of JSON; a message far larger is
      // dropped as it arrives (never held in memory) and answered as over the limits.
      maxIncoming: maxRequestMessage(payloadBytes),
    });
    const server = new BusServer(conn, address, opts);
    // One rule for every client's departure (arg2 = "": the name has no new owner).
    // Answered while the services start: the daemon takes a connection's messages in
    // order, so the rule is in place before any name is requested, and host() waits
    // for the answer (a refused rule fails every service: no departure would be seen).
    server.watching = conn.addMatch("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg2=''").then(() => {});
    server.watching.catch(() => {});
    return server;
  }

  get uniqueName(): string {
    return this.conn.uniqueName;
  }

  /** Live callers, open subscriptions, leases and catalog entries (tests check that nothing leaks). */
  stats(): { clients: number; subscriptions: number; leases: number; topics: number; matchRules: number; pendingCalls: number } {
    let subscriptions = 0;
    for (const c of this.clients.values()) subscriptions += c.subscriptions.size;
    return {
      clients: this.clients.size,
      subscriptions,
      leases: this.leases.count(),
      topics: this.topics.count(),
      matchRules: this.conn.matchRules,
      pendingCalls: this.conn.pendingCalls,
    };
  }

  private async dbusCall(member: string, signature: string, body: unknown[]): Promise<any[]> {
    return (await this.conn.call({ ...DBUS, type: METHOD_CALL, member, signature, body })).body;
  }

  /** Exports a service at its object path and takes its bus name. */
  async host(spec: ServiceSpec, instance: ServiceInstance): Promise<void> {
    await this.watching;
    const path = objectPath(spec.busName);
    const members = new Map<string, string>();
    for (const method of Object.keys(spec.api)) members.set(memberName(method), method);
    this.hosted.set(path, { spec, instance, path, members });
    // Queued rather than refused: a predecessor that just died (a restart after a
    // crash) may still own the name until the daemon has noticed; a live owner keeps it.
    const [result] = await this.dbusCall("RequestName", "su", [spec.busName, 0]);
    if (result === 2 /* IN_QUEUE */ && !(await this.waitForName(spec.busName, this.nameWaitMs))) {
      await this.dbusCall("ReleaseName", "s", [spec.busName]).catch(() => {});
      this.hosted.delete(path);
      throw new Error(`bus name ${spec.busName} is owned by another connection`);
    }
    if (result === 3 /* EXISTS */) {
      this.hosted.delete(path);
      throw new Error(`bus name ${spec.busName} is owned by another connection`);
    }
    this.log.info({ service: spec.busName, path, methods: members.size }, "service on the bus");
  }

  /** True once this connection is the name's primary owner, false after timeoutMs. */
  private async waitForName(name: string, timeoutMs: number): Promise<boolean> {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
      const [owner] = await this.dbusCall("GetNameOwner", "s", [name]).catch(() => [""]);
      if (owner === this.uniqueName) return true;
      await Bun.sleep(20);
    }
    return false;
  }

  async unhost(busName: string): Promise<void> {
    const path = objectPath(busName);
    const h = this.hosted.get(path);
    if (!h) return;
    for (const c of this.clients.values()) for (const s of [...c.subscriptions.values()]) if (s.path === path) s.end();
    this.hosted.delete(path);
    if (!this.conn.isClosed) await this.dbusCall("ReleaseName", "s", [busName]).catch(() => {});
    try {
      await h.instance.stop?.();
    } finally {
      this.leases.releasePrefix(`${h.spec.name}/`);
    }
  }

  async close(): Promise<void> {
    for (const h of [...this.hosted.values()]) await this.unhost(h.spec.busName);
    this.closing = true;
    this.conn.close();
  }

  // ---- callers -------------------------------------------------------------

  private client(name: string): ClientState {
    let c = this.clients.get(name);
    if (!c) {
      const state: ClientState = { caller: this.credentials(name), subscriptions: new Map() };
      // Registered first, so it runs before the calls that wait for the credentials.
      void state.caller.then((k) => (state.known = k));
      this.clients.set(name, (c = state));
    }
    return c;
  }

  private async credentials(name: string): Promise<Caller> {
    try {
      const [creds] = await this.dbusCall("GetConnectionCredentials", "s", [name]);
      const gids = creds.UnixGroupIDs?.value;
      return {
        name,
        uid: Number(creds.UnixUserID?.value ?? -1),
        pid: Number(creds.ProcessID?.value ?? -1),
        ...(Array.isArray(gids) ? { gids: gids.map(Number) } : {}),
      };
    } catch {
      // Already gone: the call is answered into the void and cleanup runs.
      return { name, uid: -1, pid: -1 };
    }
  }

  private onNameGone(name: string) {
    if (!name.startsWith(":")) return;
    const c = this.clients.get(name);
    this.clients.delete(name);
    if (c) {
      this.gone.add(name);
      if (this.gone.size > 4096) this.gone.delete(this.gone.values().next().value!);
      for (const s of [...c.subscriptions.values()]) s.finish();
    }
    // Leases may belong to a name that never called us (a registered client id's owner).
    const n = this.leases.releaseOwner(name);
    if (c || n) this.log.debug({ client: name, leases: n }, "client gone, its state released");
  }

  /** Called once per subscription, when it ends. */
  forget(s: SubscriptionImpl) {
    this.clients.get(s.caller.name)?.subscriptions.delete(s.serial);
    const n = (this.subscriptionsOfUid.get(s.caller.uid) ?? 1) - 1;
    if (n > 0) this.subscriptionsOfUid.set(s.caller.uid, n);
    else this.subscriptionsOfUid.delete(s.caller.uid);
  }

  /** Why caller may not open another subscription now, or undefined when it may. */
  private subscriptionRefused(c: ClientState, caller: Caller): string | undefined {
    if (c.subscriptions.size >= this.limits.subscriptionsPerClient)
      return `Too many subscriptions: a client may hold ${this.limits.subscriptionsPerClient} at once`;
    if ((this.subscriptionsOfUid.get(caller.uid) ?? 0) >= this.limits.subscriptionsPerUser)
      return `Too many subscriptions: the clients of one user may hold ${this.limits.subscriptionsPerUser} at once`;
    return undefined;
  }

  // One change published to many subscribers is the same object: serialize it once.
  private lastPushed?: { message: Json; text: string };

  private pushText(message: Json): string {
    if (this.lastPushed?.message === message) return this.lastPushed.text;
    const text = stringifyJson(message);
    // Only within this tick: a service may change the object before a later push.
    if (!this.lastPushed) queueMicrotask(() => (this.lastPushed = undefined));
    this.lastPushed = { message, text };
    return text;
  }

  /**
   * One message to the subscribers of a shared key: one broadcast per subscribing
   * method for the subscriptions that attached the key (the daemon delivers it to each
   * connection whose match rule selects it and whose policy lets it receive); returns
   * the others, which get an addressed push each.
   */
  private fanOut(key: string, id: string, subs: Subscription[], message: Json): Subscription[] {
    const rest: Subscription[] = [];
    const groups = new Map<string, SubscriptionImpl>();
    for (const s of subs) {
      if (s instanceof SubscriptionImpl && s.active && s.opened && s.attached.has(key)) {
        const g = `${s.path} ${s.method}`;
        if (!groups.has(g)) groups.set(g, s);
      } else rest.push(s);
    }
    for (const s of groups.values())
      this.send({ type: SIGNAL, path: s.path, interface: TOPIC_INTERFACE, member: memberName(s.method), signature: "ss", body: [id, this.pushText(message)] });
    return rest;
  }

  /**
   * Whether a method's shared topics may be broadcast: its rule is the method table's
   * (the rule the layer's policy is made from: a rule configuration changed keeps the
   * method addressed, or the policy would let the wrong clients receive) and admits
   * every bus client, or is limited to root or groups and the bus enforces the policy.
   */
  private mayBroadcast(h: Hosted, method: string): boolean {
    const table = h.spec.api[method]?.access;
    const rule: AccessRule | undefined = h.instance.access?.[method] ?? table;
    if (rule !== table && describeRule(rule) !== describeRule(table)) return false;
    if (!rule || rule === "any") return true;
    return this.policyEnforced && (rule === "root" || "groups" in rule);
  }

  /** Shared(u serial) -> a(ss): the (member, topic id) pairs the caller's subscription may attach. */
  private sharedTopics(h: Hosted, s: SubscriptionImpl | undefined): [string, string][] {
    if (!s || !s.active || s.path !== h.path || !this.mayBroadcast(h, s.method)) return [];
    return this.topics.sharedOf(s).map(({ id }) => [memberName(s.method), id]);
  }

  /** Attach(u serial, as ids) -> as: the topics whose messages now reach the subscription as broadcasts. */
  private attach(h: Hosted, s: SubscriptionImpl | undefined, ids: string[]): string[] {
    if (!s || !s.active || !s.opened || s.path !== h.path || !this.mayBroadcast(h, s.method)) return [];
    const out: string[] = [];
    for (const id of ids) {
      const key = this.topics.keyOf(id);
      if (key === undefined || !this.topics.isShared(key, s)) continue;
      s.attached.add(key);
      out.push(id);
    }
    return out;
  }

  emitSubscriptionSignal(s: SubscriptionImpl, member: "Push" | "Ended", message?: Json) {
    this.send({
      type: SIGNAL,
      path: s.path,
      interface: SUBSCRIPTION_INTERFACE,
      member,
      destination: s.caller.name,
      signature: member === "Push" ? "us" : "u",
      body: member === "Push" ? [s.serial, this.pushText(message!)] : [s.serial],
    });
  }

  // ---- dispatch --------------------------------------------------------------

  private onMethodCall(msg: Message): void {
    noteCall();
    const path = msg.path!;
    const h = this.hosted.get(path);
    const iface = msg.interface;
    if (iface === "org.freedesktop.DBus.Introspectable" && msg.member === "Introspect") {
      const xml = h ? introspectXml(h.spec) : childNodesXml(path, [...this.hosted.keys()]);
      if (xml === null) return this.unknown(msg);
      return this.reply(msg, "s", [xml]);
    }
    if (iface === "org.freedesktop.DBus.Peer") {
      if (msg.member === "Ping") return this.reply(msg, "", []);
      if (msg.member === "GetMachineId") return this.reply(msg, "s", [machineId()]);
    }
    if (!h) return this.unknown(msg);
    if (iface === "org.freedesktop.DBus.Properties") {
      // Services have no D-Bus properties: GetAll answers an empty set.
      if (msg.member === "GetAll") return this.reply(msg, "a{sv}", [{}]);
      if (msg.member === "Get" || msg.member === "Set")
        return this.replyError(msg, "org.freedesktop.DBus.Error.UnknownProperty", `${h.spec.busName} has no D-Bus properties; its API is its methods`);
    }
    if (iface === SUBSCRIPTION_INTERFACE && msg.member === "Cancel" && msg.signature === "u") {
      const s = this.clients.get(msg.sender!)?.subscriptions.get(msg.body[0]);
      if (s && s.path === path) s.finish();
      return this.reply(msg, "b", [!!s && s.path === path]);
    }
    if (iface === SUBSCRIPTION_INTERFACE && msg.member === "Shared" && msg.signature === "u")
      return this.reply(msg, "a(ss)", [this.sharedTopics(h, this.clients.get(msg.sender!)?.subscriptions.get(msg.body[0]))]);
    if (iface === SUBSCRIPTION_INTERFACE && msg.member === "Attach" && msg.signature === "uas")
      return this.reply(msg, "as", [this.attach(h, this.clients.get(msg.sender!)?.subscriptions.get(msg.body[0]), msg.body[1] as string[])]);
    if (iface && iface !== h.spec.busName) return this.unknown(msg);
    const method = h.members.get(msg.member!);
    if (!method) return this.unknown(msg);
    if (msg.signature !== "s") {
      for (const fd of msg.fds) libc.close(fd);
      return this.replyError(msg, "org.freedesktop.DBus.Error.InvalidArgs", `${msg.member} takes one string (the JSON payload), got '${msg.signature ?? ""}'`);
    }
    for (const fd of msg.fds) libc.close(fd);
    this.dispatch(h, method, msg);
  }

  /**
   * One call through its steps: find its caller, decode, validate, authorize, run,
   * answer. A step waits only for what is not there yet (the caller's credentials on
   * its first call, an access test or a handler that returns a promise); otherwise the
   * call runs to its answer at once, with no turn of the event loop between steps
   * (docs/performance.md, warm calls). Calls of one caller start in the order they came.
   */
  private dispatch(h: Hosted, method: string, msg: Message): void {
    try {
      const c = this.client(msg.sender!);
      const spec = h.spec.api[method]!;
      // A closure is made only for a call that waits (the first calls after start run
      // in the interpreter, where each costs: docs/performance.md, the cold path).
      const waiting = c.known
        ? this.dispatchAs({ h, method, msg, spec, c, caller: c.known })
        : c.caller.then((caller) => this.dispatchAs({ h, method, msg, spec, c, caller }));
      if (waiting) waiting.then(undefined, (e) => this.dispatchFailed(msg, method, e));
    } catch (e) {
      this.dispatchFailed(msg, method, e);
    }
  }

  /** A call whose dispatch threw or rejected: logged, and answered with the failure. */
  private dispatchFailed(msg: Message, method: string, e: any): void {
    this.log.error({ err: e, method }, "dispatch failed");
    this.replyError(msg, `${ERROR_PREFIX}.Failed`, String(e?.message ?? e));
  }

  /** Decode, validate and authorize; then run and answer, or answer the refusal. */
  private dispatchAs(d: Dispatch): PromiseLike<void> | void {
    const decoded = this.decode(d);
    if ("problem" in decoded) return this.answer(d, { returnValue: false, ...d.h.spec.badRequest(d.method, decoded.problem) }, decoded.value);
    const valid = this.validate(d, decoded.value);
    if ("response" in valid) return this.answer(d, valid.response, decoded.value);
    const may = this.authorize(d, valid.data);
    if (may instanceof Promise) return may.then((denied) => this.runAndAnswer(d, denied, decoded.value, valid.data));
    return this.runAndAnswer(d, may, decoded.value, valid.data);
  }

  /** The refusal answered, or the handler run and its response answered (waiting only for its promise). */
  private runAndAnswer(d: Dispatch, denied: Json | undefined, payload: Json, data: unknown): PromiseLike<void> | void {
    if (denied) return this.answer(d, denied, payload);
    const ran = this.run(d, payload, data);
    if (isThenable(ran)) return ran.then(({ response, subscription }) => this.answer(d, response, payload, subscription));
    this.answer(d, ran.response, payload, ran.subscription);
  }

  /** The payload within the limits, as a JSON object; else the problem (over the limits logged, throttled). */
  private decode({ h, method, msg, caller }: Dispatch): { value: Json } | { problem: Parameters<ServiceSpec["badRequest"]>[1]; value?: unknown } {
    const parsed = msg.oversized
      ? { problem: { kind: "limits" as const, message: `payload is larger than ${this.limits.payloadBytes} bytes (message of ${msg.oversized} bytes)` } }
      : parsePayload(msg.body[0] as string, { maxBytes: this.limits.payloadBytes, maxDepth: this.limits.payloadDepth });
    if ("problem" in parsed) {
      if (parsed.problem.kind === "limits") {
        const problem = parsed.problem.message;
        this.refusals.log(`${caller.name} limits`, (repeated) => this.log.warn({ service: h.spec.name, method, caller: caller.name, uid: caller.uid, problem, repeated }, "request refused"));
      }
      return { problem: parsed.problem };
    }
    const value = parsed.value;
    if (typeof value !== "object" || value === null || Array.isArray(value)) return { problem: { kind: "json", message: "payload must be a JSON object" }, value };
    return { value: value as Json };
  }

  /** The request as its schema makes it; else the failure: the tables' row for the invalid value, or the service's badRequest. */
  private validate({ h, method, spec }: Dispatch, payload: Json): { data: unknown } | { response: Json } {
    const parsed = parseRequest(spec, payload);
    if (parsed.success) return { data: parsed.data };
    const { invalid, problem } = describeInvalid(method, payload, parsed.error);
    return { response: { returnValue: false, ...(invalidAnswer(h.spec, method, invalid) ?? h.spec.badRequest(method, problem)) } };
  }

  /**
   * The method's access rule (configuration's, else the table's): undefined when the
   * caller may call, else the refusal; a promise of either when the rule's test is one.
   * (Told apart by value, not by a call: each call counts toward the tier-up whose
   * compile stalls one of the first calls after start; docs/performance.md.)
   */
  private authorize(d: Dispatch, data: unknown): Promise<Json | undefined> | Json | undefined {
    const rule = d.h.instance.access?.[d.method] ?? d.spec.access;
    const may = allowed(rule, d.caller, data);
    if (may === true) return undefined;
    if (may === false) return this.refusal(d, rule);
    return Promise.resolve(may).then((ok) => (ok ? undefined : this.refusal(d, rule)));
  }

  /** A caller refused by the method's access rule: logged (throttled), and the answer it gets. */
  private refusal({ h, method, caller }: Dispatch, rule: AccessRule | undefined): Json {
    this.refusals.log(`${caller.name} access ${h.spec.name} ${method}`, (repeated) =>
      this.log.info({ service: h.spec.name, method, caller: caller.name, uid: caller.uid, rule: describeRule(rule), repeated }, "caller refused by the method's access rule"),
    );
    return h.spec.denied
      ? { returnValue: false, ...h.spec.denied(method, caller) }
      : { returnValue: false, errorText: `Permission denied: ${method} is for ${describeRule(rule)}` };
  }

  /**
   * The handler's response, with the subscription opened for the call (within the
   * caller's limits); a throw or a rejection becomes the failure. A promise only when
   * the handler returned one.
   */
  private run(d: Dispatch, payload: Json, data: unknown): PromiseLike<Ran> | Ran {
    const { h, method, msg, spec, c, caller } = d;
    const subscribes = (spec.subscribable && payload.subscribe === true) || spec.alwaysSubscribes;
    const refused = subscribes ? this.subscriptionRefused(c, caller) : undefined;
    if (refused) {
      this.refusals.log(`${caller.name} subscriptions`, (repeated) => this.log.warn({ service: h.spec.name, method, caller: caller.name, uid: caller.uid, repeated }, refused));
      // The service's own code for a failure it did not cause, with the reason as text.
      return { response: { returnValue: false, ...h.spec.internalError(method, new Error(refused)), errorText: refused } };
    }
    let subscription: SubscriptionImpl | undefined;
    if (subscribes) {
      subscription = new SubscriptionImpl(this, `${caller.name}/${msg.serial}`, caller, method, msg.serial, h.path);
      c.subscriptions.set(msg.serial, subscription);
      this.subscriptionsOfUid.set(caller.uid, (this.subscriptionsOfUid.get(caller.uid) ?? 0) + 1);
    }
    let response: Json | FdReply | PromiseLike<Json | FdReply>;
    try {
      response = h.instance.handlers[method]!(data, { caller, method, subscription });
    } catch (e) {
      return this.handlerFailed(d, subscription, e);
    }
    if (isThenable(response)) return response.then((r) => ({ response: r, subscription }), (e) => this.handlerFailed(d, subscription, e));
    return { response, subscription };
  }

  /** A handler's throw or rejection: a ServiceError's own response, else the service's internal error (logged). */
  private handlerFailed({ h, method, caller }: Dispatch, subscription: SubscriptionImpl | undefined, e: unknown): Ran {
    if (e instanceof ServiceError) return { response: e.response(), subscription };
    this.log.error({ err: e, service: h.spec.name, method, caller: caller.name }, "handler failed");
    return { response: { returnValue: false, ...h.spec.internalError(method, e) }, subscription };
  }

  /**
   * Sends the response: a failure with the method's failureFields under it, checked
   * against the response schema when asked; the subscription kept only when the
   * response says subscribed, and released at once when the caller left meanwhile.
   */
  private answer({ h, method, msg, spec, caller }: Dispatch, response: Json | FdReply, payload?: unknown, subscription?: SubscriptionImpl) {
    if (h.spec.failureFields && !(response instanceof FdReply) && response.returnValue === false) {
      response = { ...h.spec.failureFields(method, payload), ...response };
    }
    const json = response instanceof FdReply ? response.response : response;
    if (this.checkResponses) {
      const r = schemaOf(spec, "response").safeParse(json, PARSE_OPTIONS);
      if (!r.success) {
        this.log.error({ service: h.spec.name, method, response: json, problem: z.prettifyError(r.error) }, "response does not match its schema");
        subscription?.finish();
        if (response instanceof FdReply && response.closeAfterSend) libc.close(response.fd);
        this.replyError(msg, `${ERROR_PREFIX}.ResponseSchema`, `${method} response does not match its schema: ${z.prettifyError(r.error)}`);
        return;
      }
    }
    const keep = subscription && subscription.active && json.subscribed === true;
    if (subscription && !keep) subscription.finish();
    if (response instanceof FdReply) {
      try {
        this.reply(msg, "sh", [stringifyJson(json), response.fd], response.closeAfterSend);
      } catch (e) {
        if (response.closeAfterSend) libc.close(response.fd);
        this.replyError(msg, `${ERROR_PREFIX}.FdPassing`, String((e as Error).message));
      }
    } else {
      // Also the failure of an fd method: it answers `s` alone (docs/bus.md).
      this.reply(msg, "s", [stringifyJson(json)]);
    }
    if (keep) subscription!.open();
    // The caller vanished while we worked: whatever the handler just took is released.
    if (this.gone.has(caller.name)) {
      subscription?.finish();
      this.leases.releaseOwner(caller.name);
    }
  }

  /** Sends, unless the connection is gone (then the process is on its way out). */
  private send(m: Outgoing, ownFds = false) {
    try {
      this.conn.send(m, undefined, ownFds);
    } catch (e) {
      if (ownFds) for (const fd of m.fds ?? []) libc.close(fd);
      this.log.debug({ err: e }, "not sent");
    }
  }

  private reply(msg: Message, signature: string, body: unknown[], ownFds = false) {
    const withFds = signature.includes("h");
    if (msg.flags & NO_REPLY_EXPECTED) {
      if (ownFds && withFds) for (const v of body) if (typeof v === "number") libc.close(v);
      return;
    }
    if (withFds && !this.conn.unixFd) throw new Error("file descriptor passing was not negotiated on this connection");
    const fds = withFds ? (body.filter((_, i) => signature[i] === "h") as number[]) : [];
    this.send({ type: METHOD_RETURN, replySerial: msg.serial, destination: msg.sender, signature, body, fds }, ownFds);
  }

  private replyError(msg: Message, name: string, text: string) {
    if (msg.flags & NO_REPLY_EXPECTED) return;
    this.send({ type: ERROR, errorName: name, replySerial: msg.serial, destination: msg.sender, signature: "s", body: [text] });
  }

  private unknown(msg: Message) {
    this.replyError(
      msg,
      "org.freedesktop.DBus.Error.UnknownMethod",
      `No such method '${msg.member}' in interface '${msg.interface ?? ""}' at object path '${msg.path}' (signature '${msg.signature}')`,
    );
  }
}

let machineIdCache: string | undefined;
function machineId(): string {
  if (machineIdCache === undefined) {
    try {
      machineIdCache = require("node:fs").readFileSync("/etc/machine-id", "utf8").trim();
    } catch {
      machineIdCache = "";
    }
  }
  return machineIdCache!;
}

// The per-call path stops at the DFG tier (core/engine.ts, withoutFTL).
withoutFTL(BusServer.prototype);
