// The host name (unistd.h, sys/utsname.h): gethostname(2) and sethostname(2), and a
// watch that reports changes of the kernel's host name on the event source.
//
// libc.ts is the process's main libc binding; these two calls are bound here, in the
// one module that uses them (dlopen of the same libc.so.6 shares its handle).
//
// Changes: /proc/sys/kernel/hostname supports poll(): the kernel marks every open
// file of it with POLLPRI|POLLERR once after each change of a host name (sethostname
// or a write to the file, in any UTS namespace, since the event counter is the
// table's), and the next poll clears the mark. The watch therefore listens for
// EPOLLPRI only and the caller re-reads the name, which may be unchanged (another
// namespace's change).
import { dlopen, FFIType, ptr } from "bun:ffi";
import { SysError, check, closeFd, errno, openFile, O_CLOEXEC, O_NONBLOCK, O_RDONLY } from "./libc.ts";
import { watch, type Watch } from "./loop.ts";

const { i32, u64, ptr: P } = FFIType;
const uts = dlopen("libc.so.6", {
  gethostname: { args: [P, u64], returns: i32 },
  sethostname: { args: [P, u64], returns: i32 },
}).symbols;

/** HOST_NAME_MAX (limits.h): the longest host name the kernel takes, in bytes. */
export const HOST_NAME_MAX = 64;
export const HOSTNAME_PROC = "/proc/sys/kernel/hostname";

/** gethostname(2). */
export function getHostname(): string {
  const buf = Buffer.alloc(HOST_NAME_MAX + 1);
  check("gethostname", () => uts.gethostname(ptr(buf), buf.length));
  const nul = buf.indexOf(0);
  return buf.subarray(0, nul < 0 ? buf.length : nul).toString("utf8");
}

/** sethostname(2): EPERM without CAP_SYS_ADMIN in the UTS namespace's user namespace, EINVAL when too long. */
export function setHostname(name: string): void {
  const b = Buffer.from(name, "utf8");
  const arg = Buffer.concat([b, Buffer.alloc(1)]); // the length excludes the NUL; the buffer keeps one for ptr()
  if (uts.sethostname(ptr(arg), b.length) !== 0) throw new SysError("sethostname", errno());
}

/**
 * Calls onChange on the event source after the kernel's host name may have changed
 * (read it again to know). close() stops watching. Throws SysError when the proc
 * file cannot be opened or watched.
 */
export function watchHostname(onChange: () => void, path = HOSTNAME_PROC): { close(): void } {
  const fd = openFile(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  let w: Watch;
  try {
    w = watch(fd, { priority: onChange }, { readable: false, ref: false });
  } catch (e) {
    closeFd(fd);
    throw e;
  }
  return {
    close() {
      if (w.closed) return;
      w.close();
      closeFd(fd);
    },
  };
}
