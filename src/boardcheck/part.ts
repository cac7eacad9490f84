// What `devservices board check` reports: one part of a board recipe per line,
// judged against what the running kernel shows, with what was found and what a
// BSP engineer changes when it differs.

/** ok: as the recipe says; missing: not there; mismatch: there, but not as the recipe or the units need; unchecked: could not be judged here. */
export type Status = "ok" | "missing" | "mismatch" | "unchecked";

export interface Part {
  /** gpio, i2c, i2c-address, spi, uart, video, display, plane, network, power, mount, access */
  kind: string;
  /** The recipe's name for it (a pin ID, a bus name, a device path...). */
  name: string;
  status: Status;
  /** A required part that is missing or mismatched makes the check fail. */
  required: boolean;
  /** What the system shows. */
  found: string;
  /** What to change when the status is not ok. */
  fix?: string;
  /** The device node this part was found at (its group and mode are judged too). */
  node?: string;
}

/** The part, found at a device node. */
export const at = (p: Part, node: string): Part => ({ ...p, node });

export const ok = (kind: string, name: string, found: string): Part => ({ kind, name, status: "ok", required: true, found });
export const missing = (kind: string, name: string, found: string, fix: string): Part => ({ kind, name, status: "missing", required: true, found, fix });
export const mismatch = (kind: string, name: string, found: string, fix: string): Part => ({ kind, name, status: "mismatch", required: true, found, fix });
export const unchecked = (kind: string, name: string, found: string, fix?: string): Part => ({ kind, name, status: "unchecked", required: false, found, fix });

/** A finding: what is not as it should be (unchecked parts are not findings). */
export const isFinding = (p: Part) => p.status === "missing" || p.status === "mismatch";

/** The check fails when a required part is a finding. */
export const fails = (parts: Part[]) => parts.some((p) => p.required && isFinding(p));

/** One line: `STATUS   KIND NAME: found; fix: ...` (an optional part's finding is `missing?`). */
export function line(p: Part): string {
  const tag = isFinding(p) && !p.required ? `${p.status}?` : p.status;
  return `${tag.padEnd(10)}${p.kind} ${p.name}: ${p.found}${p.fix && p.status !== "ok" ? `; fix: ${p.fix}` : ""}`;
}

export function summary(parts: Part[]) {
  const count = (s: Status) => parts.filter((p) => p.status === s).length;
  return { ok: count("ok"), missing: count("missing"), mismatch: count("mismatch"), unchecked: count("unchecked") };
}

/** A list for a message: the first `max` items, then how many more. */
export function listed(items: string[], max = 16): string {
  if (items.length === 0) return "none";
  return items.length <= max ? items.join(", ") : `${items.slice(0, max).join(", ")}, ... (${items.length - max} more)`;
}

const ERRNO: Record<number, string> = {
  1: "EPERM", 2: "ENOENT", 5: "EIO", 6: "ENXIO", 11: "EAGAIN", 13: "EACCES", 16: "EBUSY", 19: "ENODEV", 20: "ENOTDIR",
  22: "EINVAL", 25: "ENOTTY", 95: "EOPNOTSUPP", 110: "ETIMEDOUT", 121: "EREMOTEIO",
};

/** The short form of an error: `EACCES` for an errno, else its message. */
export function why(e: unknown): string {
  const err = e as { errno?: number; code?: string; message?: string };
  if (typeof err.errno === "number" && ERRNO[err.errno]) return ERRNO[err.errno]!;
  if (typeof err.code === "string") return err.code;
  return err.message ?? String(e);
}

export const errnoOf = (e: unknown) => (e as { errno?: number }).errno;

/** Resolves what `p` resolves, or rejects after `ms` with a message naming `what`. */
export function bounded<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`${what}: no answer within ${ms} ms`), { code: "ETIMEDOUT" })), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
