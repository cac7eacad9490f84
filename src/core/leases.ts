// Per-client ownership: the one registry of what each caller holds (a pin, a bus
// device, a UART, a camera handle, a wake lock, an open cache write). A service
// takes a lease for an owner (a caller's unique bus name) by key, exclusive or
// shared; the platform releases every lease of an owner when its connection goes
// away, and a lease bound to a subscription ends with it (cancel or disconnect).

/**
 * The owner of what outlives a connection by the spec's design (a video output
 * context registered by one one-shot call and used by the next, a cache type): the
 * uid. Such leases are never released when a connection goes away.
 */
export const uidOwner = (uid: number) => `uid:${uid}`;

/** Who acts: a caller's unique bus name and uid (core/service.ts Caller). */
export interface Actor {
  name: string;
  uid: number;
}

/**
 * Whether actor may renew, change or release lease: the connection that holds it, the
 * uid that holds it (uidOwner), or root. The one ownership check: services do not
 * compare owners by hand.
 */
export function mayAct(actor: Actor, lease: { owner: string }): boolean {
  return actor.uid === 0 || lease.owner === actor.name || lease.owner === uidOwner(actor.uid);
}

/** Something that ends and says so: a subscription (see service.ts). */
export interface Endable {
  readonly active: boolean;
  onEnd(fn: () => void): void;
}

export interface LeaseOptions<D = unknown> {
  /** Only one holder of the key at a time (default). Shared leases coexist. */
  exclusive?: boolean;
  /** Runs once when the lease ends for any reason: give the resource back here. */
  release?: (why: ReleaseReason) => void;
  /** Ends the lease when this (a subscription) ends. */
  boundTo?: Endable;
  /** What the service keeps with the lease (an open fd, a handle). */
  data?: D;
}

export type ReleaseReason = "released" | "owner-gone" | "subscription-ended" | "service-stopped";

export interface Lease<D = unknown> {
  readonly key: string;
  readonly owner: string;
  readonly exclusive: boolean;
  readonly active: boolean;
  readonly data: D;
  release(): void;
}

/** Why take() refused: the key is held in a way that excludes the request. */
export class LeaseConflict extends Error {
  constructor(readonly key: string, readonly holders: string[]) {
    super(`${key} is held by ${holders.join(", ")}`);
  }
}

class LeaseImpl<D> implements Lease<D> {
  active = true;
  constructor(
    private registry: LeaseRegistry,
    readonly key: string,
    readonly owner: string,
    readonly exclusive: boolean,
    readonly data: D,
    private onRelease?: (why: ReleaseReason) => void,
  ) {}
  release(): void {
    this.end("released");
  }
  end(why: ReleaseReason): void {
    if (!this.active) return;
    this.active = false;
    this.registry.drop(this);
    try {
      this.onRelease?.(why);
    } catch (e) {
      this.registry.onError(e, this);
    }
  }
}

export class LeaseRegistry {
  private byKey = new Map<string, Set<LeaseImpl<any>>>();
  private byOwner = new Map<string, Set<LeaseImpl<any>>>();
  /** Reports a release hook that threw (the lease is gone all the same). */
  onError: (e: unknown, lease: Lease) => void = (e) => console.error("lease release failed:", e);

  /** Takes a lease; throws LeaseConflict when another holder excludes it. */
  take<D = undefined>(owner: string, key: string, opts: LeaseOptions<D> = {}): Lease<D> {
    const exclusive = opts.exclusive ?? true;
    const held = this.byKey.get(key);
    if (held?.size) {
      const others = [...held];
      if (exclusive || others.some((l) => l.exclusive)) throw new LeaseConflict(key, [...new Set(others.map((l) => l.owner))]);
    }
    const lease = new LeaseImpl<D>(this, key, owner, exclusive, opts.data as D, opts.release);
    add(this.byKey, key, lease);
    add(this.byOwner, owner, lease);
    if (opts.boundTo) {
      if (!opts.boundTo.active) lease.end("subscription-ended");
      else opts.boundTo.onEnd(() => lease.end("subscription-ended"));
    }
    return lease;
  }

  /** The leases on a key (empty when free). */
  holders<D = unknown>(key: string): Lease<D>[] {
    return [...(this.byKey.get(key) ?? [])];
  }

  /** The owner's lease on key, if it holds one. */
  heldBy<D = unknown>(owner: string, key: string): Lease<D> | undefined {
    for (const l of this.byKey.get(key) ?? []) if (l.owner === owner) return l;
    return undefined;
  }

  /** Every lease an owner holds. */
  ownedBy(owner: string): Lease[] {
    return [...(this.byOwner.get(owner) ?? [])];
  }

  /**
   * The lease on key that actor may act on (its own first), or why not: "free" when
   * nobody holds the key, "others" when only others do.
   */
  forActor<D = unknown>(actor: Actor, key: string): Lease<D> | "free" | "others" {
    const held = [...(this.byKey.get(key) ?? [])];
    if (!held.length) return "free";
    return (held.find((l) => l.owner === actor.name || l.owner === uidOwner(actor.uid)) ?? held.find((l) => mayAct(actor, l)) ?? "others") as Lease<D> | "others";
  }

  /** Ends every lease of an owner (its connection went away). */
  releaseOwner(owner: string, why: ReleaseReason = "owner-gone"): number {
    const all = [...(this.byOwner.get(owner) ?? [])];
    for (const l of all) l.end(why);
    return all.length;
  }

  /** Ends every lease whose key starts with prefix (a service stops). */
  releasePrefix(prefix: string, why: ReleaseReason = "service-stopped"): void {
    for (const [key, set] of [...this.byKey]) if (key.startsWith(prefix)) for (const l of [...set]) l.end(why);
  }

  /** Live leases (tests check that nothing leaks). */
  count(prefix = ""): number {
    let n = 0;
    for (const [key, set] of this.byKey) if (key.startsWith(prefix)) n += set.size;
    return n;
  }

  /** A view whose keys are prefixed with `scope/` (one per service). */
  scope(scope: string): Leases {
    const p = `${scope}/`;
    const reg = this;
    return {
      take: (owner, key, opts) => reg.take(owner, p + key, opts),
      holders: (key) => reg.holders(p + key),
      heldBy: (owner, key) => reg.heldBy(owner, p + key),
      forActor: (actor, key) => reg.forActor(actor, p + key),
      ownedBy: (owner) => reg.ownedBy(owner).filter((l) => l.key.startsWith(p)),
      count: () => reg.count(p),
    };
  }

  drop(l: LeaseImpl<any>): void {
    remove(this.byKey, l.key, l);
    remove(this.byOwner, l.owner, l);
  }
}

/** What a service sees: the registry with its own key space. */
export interface Leases {
  /** Takes a lease and returns it (never undefined); throws LeaseConflict when another holder excludes it. */
  take<D = undefined>(owner: string, key: string, opts?: LeaseOptions<D>): Lease<D>;
  holders<D = unknown>(key: string): Lease<D>[];
  heldBy<D = unknown>(owner: string, key: string): Lease<D> | undefined;
  /** The lease on key that actor may act on, "free", or "others" (see mayAct). */
  forActor<D = unknown>(actor: Actor, key: string): Lease<D> | "free" | "others";
  ownedBy(owner: string): Lease[];
  count(): number;
}

function add<K, V>(m: Map<K, Set<V>>, k: K, v: V) {
  let s = m.get(k);
  if (!s) m.set(k, (s = new Set()));
  s.add(v);
}

function remove<K, V>(m: Map<K, Set<V>>, k: K, v: V) {
  const s = m.get(k);
  if (!s) return;
  s.delete(v);
  if (!s.size) m.delete(k);
}
