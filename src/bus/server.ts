// Hosts services on one bus connection: owns their names, dispatches calls to
// handlers, keeps subscriptions, knows each caller's uid/pid, and runs the one
// per-client cleanup hook when a caller's connection goes away.
import dbus from "dbus-next";
import { z } from "zod";
import { connectBus, Message, type MessageBus } from "./connection";
import { memberName, objectPath, SUBSCRIPTION_INTERFACE, ERROR_PREFIX } from "./wire";
import { introspectXml, childNodesXml } from "./introspect";
import { ServiceError, type Json } from "../core/errors";
import { FdReply, type Caller, type ServiceInstance, type ServiceSpec, type Subscription } from "../core/service";
import { logger, type Logger } from "../core/log";
import { libc } from "../ffi/libc";

const { METHOD_CALL, SIGNAL, METHOD_RETURN } = dbus.MessageType;
const NO_REPLY_EXPECTED = dbus.MessageFlag.NO_REPLY_EXPECTED;
const DBUS = { destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus" };

interface Hosted {
  spec: ServiceSpec;
  instance: ServiceInstance;
  path: string;
  members: Map<string, string>; // D-Bus member -> spec method
}

interface ClientState {
  caller: Promise<Caller>;
  subscriptions: Map<number, SubscriptionImpl>;
}

class SubscriptionImpl implements Subscription {
  active = true;
  private ready = false;
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

function valueAt(v: unknown, path: PropertyKey[]): unknown {
  for (const k of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

export interface ServerOptions {
  log?: Logger;
  /** Validate every response against the method's response schema (tests turn this on). */
  checkResponses?: boolean;
}

export class BusServer {
  readonly log: Logger;
  private hosted = new Map<string, Hosted>(); // by object path
  private clients = new Map<string, ClientState>();
  private gone = new Set<string>();
  private checkResponses: boolean;
  disconnected = false;
  /** How long host() waits in the queue for a name another connection still holds. */
  nameWaitMs = 3000;
  /** Runs when the bus connection is lost (serve exits so that systemd restarts it). */
  readonly onDisconnect: (() => void)[] = [];

  private constructor(readonly bus: MessageBus, readonly address: string, opts: ServerOptions) {
    this.log = opts.log ?? logger("bus");
    this.checkResponses = opts.checkResponses ?? process.env.DEVSERVICES_CHECK_RESPONSES === "1";
    bus.addMethodHandler((msg: Message) => this.onMethodCall(msg));
    (bus as unknown as NodeJS.EventEmitter).on("disconnected", () => {
      this.log.error("the bus closed our connection");
      this.disconnected = true;
      for (const fn of this.onDisconnect) fn();
    });
    bus.on("message", (msg: Message) => {
      if (
        msg.type === SIGNAL &&
        msg.sender === "org.freedesktop.DBus" &&
        msg.member === "NameOwnerChanged" &&
        msg.body[2] === ""
      ) {
        this.onNameGone(msg.body[0]);
      }
    });
  }

  static async connect(address: string, opts: ServerOptions = {}): Promise<BusServer> {
    const bus = await connectBus(address, { negotiateUnixFd: true });
    const server = new BusServer(bus, address, opts);
    await server.dbusCall("AddMatch", "s", [
      "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg2=''",
    ]);
    return server;
  }

  get uniqueName(): string {
    return (this.bus as unknown as { name: string }).name;
  }

  /** Live callers and open subscriptions (tests check that nothing leaks). */
  stats(): { clients: number; subscriptions: number } {
    let subscriptions = 0;
    for (const c of this.clients.values()) subscriptions += c.subscriptions.size;
    return { clients: this.clients.size, subscriptions };
  }

  private async dbusCall(member: string, signature: string, body: unknown[]): Promise<any[]> {
    const reply = await this.bus.call(new Message({ ...DBUS, member, signature, body }));
    return reply!.body;
  }

  /** Exports a service at its object path and takes its bus name. */
  async host(spec: ServiceSpec, instance: ServiceInstance): Promise<void> {
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
    for (const c of this.clients.values())
      for (const s of [...c.subscriptions.values()]) if (s.path === path) s.end();
    this.hosted.delete(path);
    await this.dbusCall("ReleaseName", "s", [busName]).catch(() => {});
    await h.instance.stop?.();
  }

  async close(): Promise<void> {
    for (const h of [...this.hosted.values()]) await this.unhost(h.spec.busName);
    this.bus.disconnect();
  }

  // ---- callers -------------------------------------------------------------

  private client(name: string): ClientState {
    let c = this.clients.get(name);
    if (!c) {
      c = { caller: this.credentials(name), subscriptions: new Map() };
      this.clients.set(name, c);
    }
    return c;
  }

  private async credentials(name: string): Promise<Caller> {
    try {
      const [creds] = await this.dbusCall("GetConnectionCredentials", "s", [name]);
      return { name, uid: Number(creds.UnixUserID?.value ?? -1), pid: Number(creds.ProcessID?.value ?? -1) };
    } catch {
      // Already gone: the call is answered into the void and cleanup runs.
      return { name, uid: -1, pid: -1 };
    }
  }

  private async onNameGone(name: string) {
    if (!name.startsWith(":")) return;
    const c = this.clients.get(name);
    if (!c) return;
    this.gone.add(name);
    if (this.gone.size > 4096) this.gone.delete(this.gone.values().next().value!);
    this.clients.delete(name);
    for (const s of [...c.subscriptions.values()]) s.finish();
    for (const h of this.hosted.values()) await this.runCleanup(h, name);
    this.log.debug({ client: name }, "client gone, its state released");
  }

  private async runCleanup(h: Hosted, name: string) {
    try {
      await h.instance.clientGone?.(name);
    } catch (e) {
      this.log.error({ err: e, service: h.spec.busName, client: name }, "client cleanup failed");
    }
  }

  forget(s: SubscriptionImpl) {
    this.clients.get(s.caller.name)?.subscriptions.delete(s.serial);
  }

  emitSubscriptionSignal(s: SubscriptionImpl, member: "Push" | "Ended", message?: Json) {
    const body: unknown[] = member === "Push" ? [s.serial, JSON.stringify(message)] : [s.serial];
    this.send(
      new Message({
        type: SIGNAL,
        path: s.path,
        interface: SUBSCRIPTION_INTERFACE,
        member,
        destination: s.caller.name,
        signature: member === "Push" ? "us" : "u",
        body,
      }),
    );
  }

  // ---- dispatch --------------------------------------------------------------

  private onMethodCall(msg: Message): boolean {
    if (msg.type !== METHOD_CALL) return false;
    const path = msg.path!;
    const h = this.hosted.get(path);
    if (msg.interface === "org.freedesktop.DBus.Introspectable" && msg.member === "Introspect") {
      const xml = h ? introspectXml(h.spec) : childNodesXml(path, [...this.hosted.keys()]);
      if (xml === null) return false;
      this.reply(msg, "s", [xml]);
      return true;
    }
    if (!h) return false;
    if (msg.interface === SUBSCRIPTION_INTERFACE && msg.member === "Cancel" && msg.signature === "u") {
      const s = this.clients.get(msg.sender!)?.subscriptions.get(msg.body[0]);
      if (s && s.path === path) s.finish();
      this.reply(msg, "b", [!!s]);
      return true;
    }
    if (msg.interface && msg.interface !== h.spec.busName) return false;
    const method = h.members.get(msg.member!);
    if (!method) return false;
    if (msg.signature !== "s") {
      this.replyError(msg, "org.freedesktop.DBus.Error.InvalidArgs", `${msg.member} takes one string (the JSON payload), got '${msg.signature ?? ""}'`);
      return true;
    }
    this.dispatch(h, method, msg).catch((e) => {
      this.log.error({ err: e, method }, "dispatch failed");
      this.replyError(msg, `${ERROR_PREFIX}.Failed`, String(e?.message ?? e));
    });
    return true;
  }

  private async dispatch(h: Hosted, method: string, msg: Message) {
    const spec = h.spec.api[method]!;
    const c = this.client(msg.sender!);
    const caller = await c.caller;
    const log = this.log.child({ service: h.spec.name, method, caller: caller.name });
    let response: Json | FdReply;
    let subscription: SubscriptionImpl | undefined;
    const text: string = msg.body[0];
    let payload: unknown;
    try {
      payload = text.trim() === "" ? {} : JSON.parse(text);
    } catch (e) {
      payload = undefined;
      response = { returnValue: false, ...h.spec.badRequest(method, { kind: "json", message: (e as Error).message }) };
    }
    if (payload !== undefined) {
      if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
        response = { returnValue: false, ...h.spec.badRequest(method, { kind: "json", message: "payload must be a JSON object" }) };
      } else {
        const parsed = spec.request.safeParse(payload);
        if (!parsed.success) {
          const issue = parsed.error.issues[0]!;
          const missing = issue.code === "invalid_type" && valueAt(payload, issue.path) === undefined ? String(issue.path.at(-1)) : undefined;
          response = {
            returnValue: false,
            ...h.spec.badRequest(method, { kind: "schema", message: z.prettifyError(parsed.error), missing, path: issue.path as any }),
          };
        } else {
          if (spec.subscribable && (payload as Json).subscribe === true) {
            subscription = new SubscriptionImpl(this, `${caller.name}/${msg.serial}`, caller, method, msg.serial!, h.path);
            c.subscriptions.set(msg.serial!, subscription);
          }
          try {
            response = await h.instance.handlers[method]!(parsed.data, { caller, method, subscription });
          } catch (e) {
            if (e instanceof ServiceError) response = e.response();
            else {
              log.error({ err: e }, "handler failed");
              response = { returnValue: false, ...h.spec.internalError(method, e) };
            }
          }
        }
      }
    }
    const json = response! instanceof FdReply ? response!.response : response!;
    if (this.checkResponses) {
      const r = spec.response.safeParse(json);
      if (!r.success) {
        log.error({ response: json, problem: z.prettifyError(r.error) }, "response does not match its schema");
        subscription?.finish();
        this.replyError(msg, `${ERROR_PREFIX}.ResponseSchema`, `${method} response does not match its schema: ${z.prettifyError(r.error)}`);
        return;
      }
    }
    const keep = subscription && subscription.active && json.subscribed === true;
    if (subscription && !keep) subscription.finish();
    if (response! instanceof FdReply) {
      try {
        this.reply(msg, "sh", [JSON.stringify(json), response!.fd]);
      } catch (e) {
        this.replyError(msg, `${ERROR_PREFIX}.FdPassing`, String((e as Error).message));
      } finally {
        if (response!.closeAfterSend) libc.close(response!.fd);
      }
    } else {
      // Also the failure of an fd method: it answers `s` alone (docs/bus.md).
      this.reply(msg, "s", [JSON.stringify(json)]);
    }
    if (keep) subscription!.open();
    log.debug({ returnValue: json.returnValue }, "answered");
    // The caller vanished while we worked: whatever the handler just took is released.
    if (this.gone.has(caller.name)) {
      subscription?.finish();
      await this.runCleanup(h, caller.name);
    }
  }

  /** Sends, unless the connection is gone (then the process is on its way out). */
  private send(m: Message) {
    try {
      this.bus.send(m);
    } catch (e) {
      this.log.debug({ err: e }, "not sent");
    }
  }

  private reply(msg: Message, signature: string, body: unknown[]) {
    if (msg.flags & NO_REPLY_EXPECTED) return;
    this.send(new Message({ type: METHOD_RETURN, replySerial: msg.serial ?? undefined, destination: msg.sender, signature, body } as any));
  }

  private replyError(msg: Message, name: string, text: string) {
    if (msg.flags & NO_REPLY_EXPECTED) return;
    this.send(Message.newError(msg as any, name, text));
  }
}
