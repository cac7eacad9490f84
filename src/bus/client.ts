// Calling services: the CLI, the nub library, tests and services that talk to
// other services (or to system daemons such as logind) use this one client. It is
// also the `Peers` that core hands to services (src/core/service.ts).
import { connectBus, Connection, BusError, DBUS, METHOD_CALL, SIGNAL, type Message } from "./connection";
import { busNameOf, memberName, objectPath, SUBSCRIPTION_INTERFACE, TOPIC_INTERFACE } from "./wire";
import type { Json } from "../core/errors";
import type { Peers } from "../core/service";
import { parseJson } from "./json";

export { BusError, resolveBusAddress } from "./connection";

export interface CallOptions {
  /** Reply timeout in milliseconds (default 25 s, as libdbus). */
  timeoutMs?: number;
  /** The reply may carry fds (e.g. logind's Inhibit): see BusClient.connect's receiveFds. */
  receiveFds?: boolean;
}

export interface SubscribeOptions extends CallOptions {
  /**
   * The payload goes as it is: no `"subscribe":true` is added, and the call stays open
   * only when the first response says `subscribed:true` (luna-send's -i and -n: methods
   * that always subscribe, such as power2 registerStateTransition).
   */
  asWritten?: boolean;
  /** Gets the first response before onMessage gets any push (pushes can arrive right behind it). */
  onFirst?: (first: Json, fd: number | undefined) => void;
  /**
   * Take the subscription's shared topics as the service's broadcasts (a match rule
   * per topic, then Attach; docs/decisions/fanout.md) rather than one addressed push
   * each. Default true; false keeps every message addressed.
   */
  shared?: boolean;
}

export interface ClientSubscription {
  /** The first response (its `subscribed` is true when the call stayed open). */
  first: Json;
  /** A file descriptor the first response carried (signature `sh`). */
  fd?: number;
  /** Call serial: the subscription's key on the wire (docs/bus.md). */
  serial: number;
  /** Resolves when the service ends it, cancels it, or leaves the bus. */
  ended: Promise<void>;
  cancel(): Promise<void>;
}

export interface RawCall {
  destination: string;
  path: string;
  interface: string;
  member: string;
  signature?: string;
  body?: unknown[];
}

interface PushHandler {
  path: string;
  /** The unique name that answered the subscribing call (known once its reply is). */
  service?: string;
  /** The subscribing method's member: the member of its topics' broadcasts. */
  member?: string;
  /** Signals of the serial received before the reply. */
  early?: Message[];
  onMessage: (m: Json) => void;
  onEnd: () => void;
  /** Topic ids attached (their broadcasts are this subscription's), with the match rule's release. */
  topics?: Map<string, () => Promise<void>>;
}

const topicRoute = (sender: string | undefined, path: string | undefined, member: string | undefined, id: string) => `${sender} ${path} ${member} ${id}`;

const nameOwnerRule = (name: string) =>
  `type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='${name}'`;

export class BusClient implements Peers {
  /**
   * Open subscriptions by call serial. `service` is the unique name that answered the
   * call: only its Push and Ended signals count (any peer can send a unicast signal).
   * Until the reply is known, `early` holds the signals of that serial that came first
   * (a Push can arrive right behind the reply, before the caller's await resumes).
   */
  private pushHandlers = new Map<number, PushHandler>();
  /** Attached subscriptions by topic route (sender, path, member, topic id). */
  private topicHandlers = new Map<string, Set<PushHandler>>();
  private peerWatchers = new Map<string, Set<() => void>>();

  /** Resolves when the connection has ended (closed here, or the bus went away). */
  readonly closed: Promise<void>;

  private fdConn?: Promise<Connection>;

  private constructor(readonly conn: Connection, private readonly address?: string) {
    this.closed = conn.closed;
    // The bus went away: every subscription has ended.
    conn.onClose(() => {
      for (const h of [...this.pushHandlers.values()]) h.onEnd();
    });
    conn.onSignal((msg) => {
      if (msg.interface === TOPIC_INTERFACE) {
        if (msg.signature !== "ss") return;
        // Only the service's own broadcasts route (the route names its unique name).
        const set = this.topicHandlers.get(topicRoute(msg.sender, msg.path, msg.member, msg.body[0]));
        if (set) for (const h of [...set]) h.onMessage(parseJson(msg.body[1]));
      } else if (msg.interface === SUBSCRIPTION_INTERFACE) {
        const h = this.pushHandlers.get(msg.body[0]);
        if (!h || h.path !== msg.path) return;
        if (h.early) h.early.push(msg);
        else if (msg.member === "Left" && msg.signature === "us") {
          if (msg.sender === h.service) this.detach(h, msg.body[1]);
        } else BusClient.take(h, msg);
      } else if (msg.sender === "org.freedesktop.DBus" && msg.member === "NameOwnerChanged" && msg.body[2] === "") {
        for (const fn of [...(this.peerWatchers.get(msg.body[0]) ?? [])]) fn();
      }
    });
  }

  /** A subscription signal, taken when the service's connection sent it. */
  private static take(h: PushHandler, msg: Message) {
    if (msg.sender === undefined || msg.sender !== h.service) return;
    if (msg.member === "Push" && msg.signature === "us") h.onMessage(parseJson(msg.body[1]));
    else if (msg.member === "Ended") h.onEnd();
  }

  /** The subscription no longer takes the topic's broadcasts (it ended, or left the topic). */
  private detach(h: PushHandler, id: string) {
    const release = h.topics?.get(id);
    if (!release) return;
    h.topics!.delete(id);
    const route = topicRoute(h.service, h.path, h.member, id);
    const set = this.topicHandlers.get(route);
    if (set?.delete(h) && !set.size) this.topicHandlers.delete(route);
    release().catch(() => {});
  }

  /**
   * Moves a subscription's shared topics to broadcasts: asks the service which it may
   * attach (Shared), adds a match rule for each, then attaches those (Attach). The
   * subscription takes a topic's broadcasts from the Attach reply on: what the service
   * sent before it came addressed. Any failure (an older service, a refused match
   * rule) leaves the topic addressed.
   */
  private async attachShared(h: PushHandler, serial: number, busName: string) {
    const base = { destination: busName, path: h.path, interface: SUBSCRIPTION_INTERFACE };
    let pairs: [string, string][];
    try {
      pairs = (await this.callRaw({ ...base, member: "Shared", signature: "u", body: [serial] })).body[0];
    } catch {
      return;
    }
    if (!pairs.length || !this.pushHandlers.has(serial)) return;
    h.member = pairs[0]![0];
    const rules = new Map<string, () => Promise<void>>();
    for (const [member, id] of pairs) {
      if (member !== h.member) continue;
      const rule = `type='signal',sender='${h.service}',path='${h.path}',interface='${TOPIC_INTERFACE}',member='${member}',arg0='${id}'`;
      const release = await this.conn.addMatch(rule).catch(() => undefined);
      if (release) rules.set(id, release);
    }
    const releaseAll = (except: Set<string>) => {
      for (const [id, r] of rules) if (!except.has(id)) r().catch(() => {});
    };
    if (!rules.size || !this.pushHandlers.has(serial)) return releaseAll(new Set());
    let attached = new Set<string>();
    try {
      await this.conn.call(
        { type: METHOD_CALL, ...base, member: "Attach", signature: "uas", body: [serial, [...rules.keys()]] },
        25000,
        undefined,
        // As the reply is read: broadcasts behind it are this subscription's.
        (reply) => {
          if (!this.pushHandlers.has(serial)) return;
          attached = new Set(reply.body[0] as string[]);
          h.topics ??= new Map();
          for (const id of attached) {
            h.topics.set(id, rules.get(id)!);
            const route = topicRoute(h.service, h.path, h.member, id);
            let set = this.topicHandlers.get(route);
            if (!set) this.topicHandlers.set(route, (set = new Set()));
            set.add(h);
          }
        },
      );
    } catch {
      attached = new Set();
    }
    releaseAll(this.pushHandlers.has(serial) ? attached : new Set());
  }

  /**
   * With `receiveFds: false` the connection is read by Bun's own socket (no thread
   * hop; docs/decisions.md): calls whose replies carry fds (`callWithFd`, or
   * `receiveFds: true` in the call options) then go over a second connection, opened
   * when first needed.
   */
  static async connect(address: string, opts: { negotiateUnixFd?: boolean; timeoutMs?: number; receiveFds?: boolean } = {}): Promise<BusClient> {
    return new BusClient(await connectBus(address, opts), address);
  }

  /** The connection a reply with fds must come over. */
  private fdCapable(): Promise<Connection> {
    if (this.conn.receivesFds || !this.address) return Promise.resolve(this.conn);
    if (!this.fdConn) {
      this.fdConn = connectBus(this.address, { receiveFds: true });
      this.fdConn.then((c) => this.conn.onClose(() => c.close())).catch(() => (this.fdConn = undefined));
    }
    return this.fdConn;
  }

  /** A client sharing an existing connection (services calling other peers). */
  static wrap(conn: Connection): BusClient {
    return new BusClient(conn);
  }

  get uniqueName(): string {
    return this.conn.uniqueName;
  }

  /** A plain D-Bus call (for system peers that are not devservices). */
  async callRaw(m: RawCall, opts: CallOptions = {}): Promise<Message> {
    const conn = opts.receiveFds ? await this.fdCapable() : this.conn;
    return conn.call({ type: METHOD_CALL, signature: "", body: [], ...m }, opts.timeoutMs ?? 25000);
  }

  private message(service: string, method: string, payload: Json | string): RawCall {
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
    return { response: parseJson(reply.body[0]), fd: reply.signature === "sh" ? reply.body[1] : undefined };
  }

  /** Like call(), for a method that answers with an fd (owned by the caller from then on). */
  async callForFd(service: string, method: string, payload: Json | string = {}, opts: CallOptions = {}): Promise<{ response: Json; fd?: number }> {
    return this.callWithFd(service, method, payload, { ...opts, receiveFds: true });
  }

  /**
   * A call with `subscribe: true`: onMessage gets every later message. When the first
   * response is not `subscribed: true`, nothing stays open and `ended` is resolved.
   */
  async subscribe(service: string, method: string, payload: Json, onMessage: (m: Json) => void, opts: SubscribeOptions = {}): Promise<ClientSubscription> {
    const busName = busNameOf(service);
    const path = objectPath(busName);
    const serial = this.conn.newSerial();
    let endResolve!: () => void;
    const ended = new Promise<void>((r) => (endResolve = r));
    let unwatch: (() => void) | undefined;
    const handler: PushHandler = {
      path,
      early: [],
      onMessage,
      onEnd: () => {
        if (!this.pushHandlers.has(serial)) return;
        this.pushHandlers.delete(serial);
        for (const id of [...(handler.topics?.keys() ?? [])]) this.detach(handler, id);
        unwatch?.();
        endResolve();
      },
    };
    this.pushHandlers.set(serial, handler);
    let reply: Message;
    try {
      const sent = opts.asWritten ? payload : { ...payload, subscribe: true };
      reply = await this.conn.call({ type: METHOD_CALL, ...this.message(service, method, sent) }, opts.timeoutMs ?? 25000, serial);
    } catch (e) {
      handler.onEnd();
      throw e;
    }
    const first = parseJson(reply.body[0]);
    const fd = reply.signature === "sh" ? (reply.body[1] as number) : undefined;
    // The service is the connection that answered: signals of this serial from any other are dropped.
    handler.service = reply.sender;
    opts.onFirst?.(first, fd);
    const early = handler.early ?? [];
    handler.early = undefined;
    if (first.subscribed !== true || !reply.sender) handler.onEnd();
    else {
      for (const m of early) BusClient.take(handler, m);
      // The service leaving the bus ends the subscription (one match rule per peer).
      const stop = await this.watchPeer(reply.sender, handler.onEnd).catch(() => undefined);
      if (this.pushHandlers.has(serial)) unwatch = stop;
      else stop?.();
      if (opts.shared !== false && this.pushHandlers.has(serial)) await this.attachShared(handler, serial, busName);
    }
    return {
      first,
      fd,
      serial,
      ended,
      cancel: async () => {
        if (!this.pushHandlers.has(serial)) return;
        handler.onEnd();
        await this.callRaw({ destination: busName, path, interface: SUBSCRIPTION_INTERFACE, member: "Cancel", signature: "u", body: [serial] }).catch(() => {});
      },
    };
  }

  async hasOwner(name: string): Promise<boolean> {
    const r = await this.callRaw({ ...DBUS, member: "NameHasOwner", signature: "s", body: [name] });
    return r.body[0] === true;
  }

  /** Runs fn when the peer leaves the bus. One match rule per peer, removed with its last watcher. */
  async watchPeer(name: string, fn: () => void): Promise<() => void> {
    let set = this.peerWatchers.get(name);
    if (!set) this.peerWatchers.set(name, (set = new Set()));
    set.add(fn);
    let release: (() => Promise<void>) | undefined;
    try {
      release = await this.conn.addMatch(nameOwnerRule(name));
    } catch (e) {
      set.delete(fn);
      if (!set.size) this.peerWatchers.delete(name);
      throw e;
    }
    return () => {
      const s = this.peerWatchers.get(name);
      if (s?.delete(fn) && !s.size) this.peerWatchers.delete(name);
      release!().catch(() => {});
    };
  }

  async onSignal(
    match: { sender?: string; path?: string; interface?: string; member?: string },
    fn: (signal: { sender?: string; path?: string; member?: string; body: any[] }) => void,
  ): Promise<() => void> {
    const parts = ["type='signal'"];
    for (const [k, v] of Object.entries(match)) if (v !== undefined) parts.push(`${k}='${v}'`);
    const release = await this.conn.addMatch(parts.join(","));
    const off = this.conn.onSignal((m) => {
      if (m.type !== SIGNAL) return;
      if (match.path && m.path !== match.path) return;
      if (match.interface && m.interface !== match.interface) return;
      if (match.member && m.member !== match.member) return;
      // A well-known sender name arrives as the owner's unique name: match on the rest.
      if (match.sender && match.sender.startsWith(":") && m.sender !== match.sender) return;
      fn(m);
    });
    return () => {
      off();
      release().catch(() => {});
    };
  }

  close(): void {
    this.conn.close();
    void this.fdConn?.then((c) => c.close()).catch(() => {});
  }
}
