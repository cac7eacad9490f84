// The subscription catalog, in the manner of luna-service2's LSSubscriptionAdd /
// LSSubscriptionReply: a service adds a subscription under a key and publishes to
// the key; the platform owns fan-out and removal (a subscription leaves its keys
// when it ends: cancel, disconnect, or the service ending it).
import type { Json } from "./errors";
import type { Subscription } from "./service";

export class TopicCatalog {
  private byKey = new Map<string, Set<Subscription>>();

  /** Adds a subscription under a key; it is removed when it ends. */
  add(key: string, sub: Subscription): void {
    if (!sub.active) return;
    let set = this.byKey.get(key);
    if (!set) this.byKey.set(key, (set = new Set()));
    if (set.has(sub)) return;
    set.add(sub);
    sub.onEnd(() => this.remove(key, sub));
  }

  remove(key: string, sub: Subscription): void {
    const set = this.byKey.get(key);
    if (!set) return;
    set.delete(sub);
    if (!set.size) this.byKey.delete(key);
  }

  /** Pushes a message (or one made per subscriber) to every subscriber of key; returns how many. */
  publish(key: string, message: Json | ((sub: Subscription) => Json | undefined)): number {
    const set = this.byKey.get(key);
    if (!set) return 0;
    let n = 0;
    for (const sub of [...set]) {
      const m = typeof message === "function" ? message(sub) : message;
      if (m === undefined) continue;
      sub.push(m);
      n++;
    }
    return n;
  }

  /** Ends every subscription of key, each with an optional last message. */
  end(key: string, last?: Json): void {
    for (const sub of [...(this.byKey.get(key) ?? [])]) sub.end(last);
  }

  subscribers(key: string): Subscription[] {
    return [...(this.byKey.get(key) ?? [])];
  }

  keys(prefix = ""): string[] {
    return [...this.byKey.keys()].filter((k) => k.startsWith(prefix));
  }

  /** Catalog entries (key, subscription) under a prefix: what a leak test reads. */
  count(prefix = ""): number {
    let n = 0;
    for (const [k, set] of this.byKey) if (k.startsWith(prefix)) n += set.size;
    return n;
  }

  /** A view whose keys are prefixed with `scope/` (one per service). */
  scope(scope: string): Topics {
    const p = `${scope}/`;
    return {
      add: (key, sub) => this.add(p + key, sub),
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
  add(key: string, sub: Subscription): void;
  remove(key: string, sub: Subscription): void;
  publish(key: string, message: Json | ((sub: Subscription) => Json | undefined)): number;
  end(key: string, last?: Json): void;
  subscribers(key: string): Subscription[];
  keys(): string[];
  /** Entries under the key prefix (all of the service's when omitted). */
  count(keyPrefix?: string): number;
}
