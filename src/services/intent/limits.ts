// The bounds on handler processes (docs/services/intent.md, "Handler processes"):
// how many the service runs at once for one uid, and in all, and how fast one uid
// may start them (LaunchRate). A place is taken,
// synchronously, before a launch starts (so calls that arrive together cannot all
// pass the check) and given back when the process is gone: exited, reaped, and its
// output pipes closed. Counted per uid, not per connection: a caller opens as many
// connections as it likes, but not more uids.

/** Why a place was not given. */
export type Refusal = { bound: "perUid"; uid: number; running: number; limit: number } | { bound: "total"; running: number; limit: number };

/** One handler process's place; release() gives it back (once; later calls do nothing). */
export interface Place {
  readonly uid: number;
  release(): void;
}

export class HandlerProcessLimits {
  private perUid = new Map<number, number>();
  private total = 0;

  constructor(private readonly limits: { perUid: number; total: number }) {}

  /** A place for a process started for uid, or why there is none. */
  take(uid: number): Place | Refusal {
    const mine = this.perUid.get(uid) ?? 0;
    if (mine >= this.limits.perUid) return { bound: "perUid", uid, running: mine, limit: this.limits.perUid };
    if (this.total >= this.limits.total) return { bound: "total", running: this.total, limit: this.limits.total };
    this.perUid.set(uid, mine + 1);
    this.total++;
    let held = true;
    return {
      uid,
      release: () => {
        if (!held) return;
        held = false;
        this.total--;
        const left = (this.perUid.get(uid) ?? 1) - 1;
        if (left > 0) this.perUid.set(uid, left);
        else this.perUid.delete(uid);
      },
    };
  }

  /** Places held now: in all, and by uid (only uids that hold some). */
  counts(): { total: number; perUid: Record<number, number> } {
    return { total: this.total, perUid: Object.fromEntries(this.perUid) };
  }
}

export const isRefusal = (r: Place | Refusal): r is Refusal => "bound" in r;

/** A launch refused by the launch rate of its uid; waitMs: until the next is allowed. */
export interface RateRefusal {
  bound: "rate";
  uid: number;
  perSecond: number;
  burst: number;
  waitMs: number;
}

/**
 * How fast the callers of one uid may start handler processes: a token bucket per
 * uid holding at most `burst` launches, refilled at `perSecond`. A uid whose bucket
 * is full again is forgotten, so the map holds only the uids that launched in the
 * last burst / perSecond seconds.
 */
export class LaunchRate {
  private buckets = new Map<number, { tokens: number; at: number }>();
  private sweepAt = 64;

  constructor(
    private readonly limits: { perSecond: number; burst: number },
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Takes one launch from uid's budget: undefined when it may launch, else why not. */
  take(uid: number): RateRefusal | undefined {
    const t = this.now();
    const tokens = this.tokens(uid, t);
    if (tokens < 1) {
      const waitMs = Math.ceil(((1 - tokens) * 1000) / this.limits.perSecond);
      return { bound: "rate", uid, perSecond: this.limits.perSecond, burst: this.limits.burst, waitMs };
    }
    this.buckets.set(uid, { tokens: tokens - 1, at: t });
    if (this.buckets.size > this.sweepAt) this.sweep(t);
    return undefined;
  }

  /** Launches uid may start now (fractions: part of the next one refilled). */
  private tokens(uid: number, t: number): number {
    const b = this.buckets.get(uid);
    if (!b) return this.limits.burst;
    return Math.min(this.limits.burst, b.tokens + ((t - b.at) * this.limits.perSecond) / 1000);
  }

  private sweep(t: number) {
    for (const uid of [...this.buckets.keys()]) if (this.tokens(uid, t) >= this.limits.burst) this.buckets.delete(uid);
    this.sweepAt = Math.max(64, 2 * this.buckets.size);
  }

  /** Uids with launches counted against them now (tests, diagnostics). */
  get size(): number {
    return this.buckets.size;
  }
}

/** The refusal as the `reason` of "Failed to start intent". */
export function refusalReason(r: Refusal | RateRefusal): string {
  switch (r.bound) {
    case "perUid":
      return `uid ${r.uid} already runs ${r.running} handler processes, the most one uid may run at once (maxHandlerProcessesPerUid ${r.limit})`;
    case "total":
      return `${r.running} handler processes are running, the most the service runs at once (maxHandlerProcesses ${r.limit})`;
    case "rate":
      return `uid ${r.uid} starts handler processes faster than ${r.perSecond} a second after a burst of ${r.burst}, the most one uid may start (maxLaunchesPerUidPerSecond ${r.perSecond}, launchBurstPerUid ${r.burst}); the next may start in ${r.waitMs} ms`;
  }
}
