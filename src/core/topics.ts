// The subscription catalog, in the manner of luna-service2's LSSubscriptionAdd /
// LSSubscriptionReply: a service adds a subscription under a key and publishes to
// the key; the platform owns fan-out and removal (a subscription leaves its keys
// when it ends: cancel, disconnect, or the service ending it).
//
// A key added as shared (`add(key, sub, { shared: true })`) is the service's word
// that one message published to it is what any caller allowed to call the
// subscribing method may receive: the platform may then deliver it as one broadcast
// that the bus daemon fans out (src/bus/server.ts, docs/decisions/fanout.md) instead
// of one addressed push per subscriber. A message made per subscriber (a function)
// always goes addressed.
import type { Json } from "./errors";
import type { Subscription } from "./service";

export interface TopicOptions {
  /** Every message published to the key as one object is for any caller the subscribing method admits. */
  shared?: boolean;
}

interface Entry {
  subs: Set<Subscription>;
  shared: boolean;
  /** The key's name on the bus while it has subscribers (never the key itself). */
  id: string;
}

/**
 * Delivers one message to subscribers of a shared key where it can (one broadcast);
 * returns those it did not reach, which get an addressed push each.
 */
export type FanOut = (key: string, id: string, subs: Subscription[], message: Json) => Subscription[];

export class TopicCatalog {
  private byKey = new Map<string, Entry>();
  private byId = new Map<string, string>();
  private keysOf = new Map<Subscription, Set<string>>();
  private nextId = 1;
  /** Set by the bus server: the broadcast path for shared keys. */
  fanout?: FanOut;
  /** Set by the bus server: a live subscription left a key (not by ending). */
  onLeave?: (key: string, id: string, sub: Subscription) => void;

  /** Adds a subscription under a key; it is removed when it ends. */
  add(key: string, sub: Subscription, opts: TopicOptions = {}): void {
    if (!sub.active) return;
    let e = this.byKey.get(key);
    if (!e) {
      e = { subs: new Set(), shared: opts.shared === true, id: `t${this.nextId++}` };
      this.byKey.set(key, e);
      this.byId.set(e.id, key);
    } else if (!opts.shared) e.shared = false; // one add that does not say shared makes the key addressed-only
    if (e.subs.has(sub)) return;
    e.subs.add(sub);
    let keys = this.keysOf.get(sub);
    if (!keys) {
      this.keysOf.set(sub, (keys = new Set()));
      sub.onEnd(() => {
        for (const k of [...(this.keysOf.get(sub) ?? [])]) this.remove(k, sub);
        this.keysOf.delete(sub);
      });
    }
    keys.add(key);
  }

  remove(key: string, sub: Subscription): void {
    const e = this.byKey.get(key);
    if (!e || !e.subs.delete(sub)) return;
    const keys = this.keysOf.get(sub);
    keys?.delete(key);
    if (sub.active) {
      if (keys && !keys.size) this.keysOf.delete(sub);
      if (e.shared) this.onLeave?.(key, e.id, sub);
    }
    if (!e.subs.size) {
      this.byKey.delete(key);
      this.byId.delete(e.id);
    }
  }

  /** Pushes a message (or one made per subscriber) to every subscriber of key; returns how many. */
  publish(key: string, message: Json | ((sub: Subscription) => Json | undefined)): number {
    const e = this.byKey.get(key);
    if (!e) return 0;
    const subs = [...e.subs];
    if (typeof message !== "function" && e.shared && this.fanout) {
      for (const sub of this.fanout(key, e.id, subs, message)) sub.push(message);
      return subs.length;
    }
    let n = 0;
    for (const sub of subs) {
      const m = typeof message === "function" ? message(sub) : message;
      if (m === undefined) continue;
      sub.push(m);
      n++;
    }
    return n;
  }

  /** Ends every subscription of key, each with an optional last message. */
  end(key: string, last?: Json): void {
    for (const sub of [...(this.byKey.get(key)?.subs ?? [])]) sub.end(last);
  }

  subscribers(key: string): Subscription[] {
    return [...(this.byKey.get(key)?.subs ?? [])];
  }

  /** The shared keys a subscription is in, with their bus ids. */
  sharedOf(sub: Subscription): { key: string; id: string }[] {
    const out: { key: string; id: string }[] = [];
    for (const key of this.keysOf.get(sub) ?? []) {
      const e = this.byKey.get(key);
      if (e?.shared) out.push({ key, id: e.id });
    }
    return out;
  }

  /** The key a bus id names, while it has subscribers. */
  keyOf(id: string): string | undefined {
    return this.byId.get(id);
  }

  /** Whether sub is under key and the key is (still) shared. */
  isShared(key: string, sub: Subscription): boolean {
    const e = this.byKey.get(key);
    return !!e && e.shared && e.subs.has(sub);
  }

  keys(prefix = ""): string[] {
    return [...this.byKey.keys()].filter((k) => k.startsWith(prefix));
  }

  /** Catalog entries (key, subscription) under a prefix: what a leak test reads. */
  count(prefix = ""): number {
    let n = 0;
    for (const [k, e] of this.byKey) if (k.startsWith(prefix)) n += e.subs.size;
    return n;
  }

  /** A view whose keys are prefixed with `scope/` (one per service). */
  scope(scope: string): Topics {
    const p = `${scope}/`;
    return {
      add: (key, sub, opts) => this.add(p + key, sub, opts),
      remove: (key, sub) => this.remove(p + key, sub),
      publish: (key, m) => this.publish(p + key, m),
      end: (key, last) => this.end(p + key, last),
      subscribers: (key) => this.subscribers(p + key),
      keys: () => this.keys(p).map((k) => k.slice(p.length)),
      count: (key) => this.count(p + (key ?? "")),
    };
  }
}

/** What a service sees: the catalog with its own key space. */
export interface Topics {
  add(key: string, sub: Subscription, opts?: TopicOptions): void;
  remove(key: string, sub: Subscription): void;
  publish(key: string, message: Json | ((sub: Subscription) => Json | undefined)): number;
  end(key: string, last?: Json): void;
  subscribers(key: string): Subscription[];
  keys(): string[];
  /** Entries under the key prefix (all of the service's when omitted). */
  count(keyPrefix?: string): number;
}
