// Calling services: the CLI, the nub library, tests and services that talk to
// other services (or to system daemons such as logind) use this one client.
import dbus from "dbus-next";
import { connectBus, Message, type MessageBus } from "./connection";
import { busNameOf, memberName, objectPath, SUBSCRIPTION_INTERFACE } from "./wire";
import type { Json } from "../core/errors";

const { SIGNAL } = dbus.MessageType;
const DBUS = { destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus" };

export interface CallOptions {
  /** Reply timeout in milliseconds (default 25 s, as libdbus). */
  timeoutMs?: number;
}

export interface ClientSubscription {
  /** The first response (its `subscribed` is true when the call stayed open). */
  first: Json;
  /** Call serial: the subscription's key on the wire (docs/bus.md). */
  serial: number;
  /** Resolves when the service ends it, cancels it, or leaves the bus. */
  ended: Promise<void>;
  cancel(): Promise<void>;
}

export class BusError extends Error {
  constructor(readonly name: string, message: string) {
    super(message);
  }
}

export class BusClient {
  private pushHandlers = new Map<number, { path: string; onMessage: (m: Json) => void; onEnd: () => void; owner?: string }>();

  /** Resolves when the connection has ended (closed here, or the bus went away). */
  readonly closed: Promise<void>;

  private constructor(readonly bus: MessageBus) {
    let closed!: () => void;
    this.closed = new Promise((r) => (closed = r));
    // The bus went away: every subscription has ended.
    (bus as unknown as NodeJS.EventEmitter).on("disconnected", () => {
      for (const h of [...this.pushHandlers.values()]) h.onEnd();
      closed();
    });
    bus.on("message", (msg: Message) => {
      if (msg.type !== SIGNAL) return;
      if (msg.interface === SUBSCRIPTION_INTERFACE) {
        const h = this.pushHandlers.get(msg.body[0]);
        if (!h || h.path !== msg.path) return;
        if (msg.member === "Push") h.onMessage(JSON.parse(msg.body[1]));
        else if (msg.member === "Ended") h.onEnd();
      } else if (msg.sender === "org.freedesktop.DBus" && msg.member === "NameOwnerChanged" && msg.body[2] === "") {
        for (const h of [...this.pushHandlers.values()]) if (h.owner === msg.body[1]) h.onEnd();
      }
    });
  }

  static async connect(address: string, opts: { negotiateUnixFd?: boolean; timeoutMs?: number } = {}): Promise<BusClient> {
    return new BusClient(await connectBus(address, opts));
  }

  /** A client sharing an existing connection (services calling other peers). */
  static wrap(bus: MessageBus): BusClient {
    return new BusClient(bus);
  }

  get uniqueName(): string {
    return (this.bus as unknown as { name: string }).name;
  }

  /** A plain D-Bus call (for system peers that are not devservices). */
  async callRaw(
    m: { destination: string; path: string; interface: string; member: string; signature?: string; body?: unknown[] },
    opts: CallOptions = {},
  ): Promise<Message> {
    const msg = new Message(m);
    msg.serial = this.bus.newSerial();
    return this.callRawPrepared(msg, opts);
  }

  private message(service: string, method: string, payload: Json | string) {
    const busName = busNameOf(service);
    return {
      destination: busName,
      path: objectPath(busName),
      interface: busName,
      member: memberName(method),
      signature: "s",
      body: [typeof payload === "string" ? payload : JSON.stringify(payload)],
    };
  }

  /** Calls a service method with a JSON payload; returns the JSON response. */
  async call(service: string, method: string, payload: Json | string = {}, opts: CallOptions = {}): Promise<Json> {
    return (await this.callWithFd(service, method, payload, opts)).response;
  }

  /** As call(); also returns the fd a passesFd method attached (owned by the caller). */
  async callWithFd(service: string, method: string, payload: Json | string = {}, opts: CallOptions = {}): Promise<{ response: Json; fd?: number }> {
    const reply = await this.callRaw(this.message(service, method, payload), opts);
    return { response: JSON.parse(reply.body[0]), fd: reply.signature === "sh" ? reply.body[1] : undefined };
  }

  /**
   * A call with `subscribe: true`: onMessage gets every later message. When the first
   * response is not `subscribed: true`, nothing stays open and `ended` is resolved.
   */
  async subscribe(
    service: string,
    method: string,
    payload: Json,
    onMessage: (m: Json) => void,
    opts: CallOptions = {},
  ): Promise<ClientSubscription> {
    const busName = busNameOf(service);
    const path = objectPath(busName);
    const m = this.message(service, method, { ...payload, subscribe: true });
    const msg = new Message(m);
    const serial = this.bus.newSerial();
    msg.serial = serial;
    let endResolve!: () => void;
    const ended = new Promise<void>((r) => (endResolve = r));
    const handler = {
      path,
      onMessage,
      owner: undefined as string | undefined,
      onEnd: () => {
        this.pushHandlers.delete(serial);
        endResolve();
      },
    };
    this.pushHandlers.set(serial, handler);
    let reply: Message;
    try {
      reply = await this.callRawPrepared(msg, opts);
    } catch (e) {
      handler.onEnd();
      throw e;
    }
    const first = JSON.parse(reply.body[0]);
    if (first.subscribed !== true) handler.onEnd();
    else {
      handler.owner = reply.sender;
      await this.callRaw({
        ...DBUS,
        member: "AddMatch",
        signature: "s",
        body: [`type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',arg0='${reply.sender}'`],
      }).catch(() => {});
    }
    return {
      first,
      serial,
      ended,
      cancel: async () => {
        if (!this.pushHandlers.has(serial)) return;
        handler.onEnd();
        await this.callRaw({ destination: busName, path, interface: SUBSCRIPTION_INTERFACE, member: "Cancel", signature: "u", body: [serial] }).catch(() => {});
      },
    };
  }

  private async callRawPrepared(msg: Message, opts: CallOptions): Promise<Message> {
    const ms = opts.timeoutMs ?? 25000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      return await Promise.race([
        this.bus.call(msg) as Promise<Message>,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            delete (this.bus as any)._methodReturnHandlers[msg.serial!];
            reject(new BusError("org.freedesktop.DBus.Error.NoReply", `no reply from ${msg.destination} within ${ms} ms`));
          }, ms);
        }),
      ]);
    } catch (e: any) {
      if (e instanceof BusError) throw e;
      throw new BusError(e?.type ?? "org.freedesktop.DBus.Error.Failed", e?.text ?? e?.message ?? String(e));
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    this.bus.disconnect();
  }
}
