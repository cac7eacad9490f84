// The bounds on handler processes (docs/services/intent.md, "Handler processes"):
// how many the service runs at once for one uid, and in all. A place is taken,
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

/** The refusal as the `reason` of "Failed to start intent". */
export function refusalReason(r: Refusal): string {
  return r.bound === "perUid"
    ? `uid ${r.uid} already runs ${r.running} handler processes, the most one uid may run at once (maxHandlerProcessesPerUid ${r.limit})`
    : `${r.running} handler processes are running, the most the service runs at once (maxHandlerProcesses ${r.limit})`;
}
