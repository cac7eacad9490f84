// CallerFiles (core/service.ts) over the as-caller thread (ffi/as-caller.ts): the
// path rules, then the kernel's decision with the caller's rights.
import { normalize, isAbsolute, sep } from "node:path";
import { PathRefused, type Caller, type CallerFiles, type OpenFlags } from "./core/service";
import { identityOf } from "./core/access";
import { CONFIG_DIR } from "./core/config";
import { SysError } from "./ffi/libc";
import * as fsx from "./ffi/as-caller";
import * as E from "./ffi/errno";

const REASONS: Record<number, PathRefused["reason"]> = {
  [E.EPERM]: "denied",
  [E.ENOENT]: "missing",
  [E.ENXIO]: "special", // a FIFO, socket or device where a file was expected
  [E.EACCES]: "denied",
  [E.EEXIST]: "exists",
  [E.ENOTDIR]: "notdir",
  [E.EISDIR]: "isdir",
  [E.ENOSPC]: "nospace",
  [E.EROFS]: "denied",
  [E.ELOOP]: "symlink", // RESOLVE_NO_SYMLINKS
  [E.EDQUOT]: "nospace",
};

/** `own`: directories no client may name (the state directory, the configuration), and the executable. */
export function callerFiles(own: string[]): CallerFiles {
  const roots = [...own, CONFIG_DIR].map((d) => normalize(d).replace(/\/+$/, ""));
  const exe = process.execPath;

  const check = (path: string): string => {
    if (typeof path !== "string" || path.includes("\0")) throw new PathRefused(String(path), "other", undefined, "the path contains a NUL byte");
    if (!isAbsolute(path)) throw new PathRefused(path, "relative", undefined, `${path} is not an absolute path`);
    if (path.split("/").some((c) => c === "." || c === "..")) throw new PathRefused(path, "traversal", undefined, `${path} has a . or .. component`);
    const p = normalize(path);
    if (p === exe || roots.some((r) => p === r || p.startsWith(r + sep)))
      throw new PathRefused(path, "own", undefined, `${path} belongs to devservices itself`);
    return p.length > 1 ? p.replace(/\/+$/, "") : p;
  };

  const refused = (path: string, e: unknown): PathRefused => {
    if (e instanceof PathRefused) return e;
    const errno = e instanceof SysError ? e.errno : undefined;
    return new PathRefused(path, (errno && REASONS[errno]) || "other", errno, (e as Error).message);
  };

  const flagsOf = (f: OpenFlags): number => {
    let n = f.write ? (f.read ? fsx.O_RDWR : fsx.O_WRONLY) : fsx.O_RDONLY;
    if (f.create === "new") n |= fsx.O_CREAT | fsx.O_EXCL;
    if (f.create === "new-or-existing") n |= fsx.O_CREAT;
    if (f.truncate) n |= fsx.O_TRUNC;
    if (f.append) n |= fsx.O_APPEND;
    if (f.directory) n |= fsx.O_DIRECTORY;
    return n | fsx.O_NOCTTY | fsx.O_NOFOLLOW;
  };

  /** Runs one request with the caller's rights on a checked path; failures become PathRefused. */
  const asCaller = async <T>(caller: Caller, path: string, op: (who: fsx.Identity, p: string) => Promise<T>): Promise<T> => {
    const p = check(path);
    try {
      return await op(identityOf(caller), p);
    } catch (e) {
      throw refused(path, e);
    }
  };

  return {
    check,
    open: (caller, path, flags, mode = 0o644) => asCaller(caller, path, (who, p) => fsx.openAs(who, p, flagsOf(flags), mode)),
    unlink: (caller, path) => asCaller(caller, path, (who, p) => fsx.unlinkAs(who, p)),
    rmdir: (caller, path) => asCaller(caller, path, (who, p) => fsx.unlinkAs(who, p, true)),
    mkdir: (caller, path, mode = 0o755) => asCaller(caller, path, (who, p) => fsx.mkdirAs(who, p, mode)),
    may: (caller, path, what) =>
      asCaller(caller, path, (who, p) =>
        fsx.accessAs(who, p, (what.includes("r") ? fsx.R_OK : 0) | (what.includes("w") ? fsx.W_OK : 0) | (what.includes("x") ? fsx.X_OK : 0)),
      ),
  };
}
