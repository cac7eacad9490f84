// The sd_notify(3) protocol without libsystemd: one datagram of newline-separated
// KEY=VALUE assignments to the AF_UNIX socket named by $NOTIFY_SOCKET ("/path" or
// "@abstract"), sent with sendmsg through bun:ffi. systemd sets NOTIFY_SOCKET for
// Type=notify units and WATCHDOG_USEC (and WATCHDOG_PID) when WatchdogSec= is set.
import { libc, check, closeFd } from "./libc";
import { AF_UNIX, SOCK_CLOEXEC, MSG_NOSIGNAL, MsgHdr, sockaddrUn } from "./socket";

export const SOCK_DGRAM = 2;

/** The socket address of a NOTIFY_SOCKET value, or null when it is unset or not an AF_UNIX name. */
export function notifyAddress(value: string | undefined): Buffer | null {
  if (!value || !(value.startsWith("/") || value.startsWith("@"))) return null;
  const abstract = value.startsWith("@");
  const { buf, len } = sockaddrUn(abstract ? value.slice(1) : value, abstract);
  // An abstract name is exactly len bytes long: trailing NULs would be part of it.
  return buf.subarray(0, len);
}

/**
 * Sends one notification (e.g. "READY=1\nSTATUS=serving") to the socket at `socket`
 * (default $NOTIFY_SOCKET). Returns false when there is no socket to tell (not
 * started by systemd); throws SysError when the send fails.
 */
export function sdNotify(state: string, socket = process.env.NOTIFY_SOCKET): boolean {
  const address = notifyAddress(socket);
  if (!address) return false;
  const fd = check("socket", () => libc.socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  try {
    const msg = new MsgHdr([Buffer.from(state, "utf8")], null, address);
    check("sendmsg(NOTIFY_SOCKET)", () => libc.sendmsg(fd, msg.ptr, MSG_NOSIGNAL));
  } finally {
    closeFd(fd);
  }
  return true;
}

/**
 * The watchdog interval systemd expects (WATCHDOG_USEC, in microseconds), or null
 * when the watchdog is off or meant for another process (WATCHDOG_PID), as
 * sd_watchdog_enabled(3) decides.
 */
export function watchdogUsec(env: Record<string, string | undefined> = process.env, pid = process.pid): number | null {
  const usec = Number(env.WATCHDOG_USEC);
  if (!env.WATCHDOG_USEC || !Number.isSafeInteger(usec) || usec <= 0) return null;
  if (env.WATCHDOG_PID && Number(env.WATCHDOG_PID) !== pid) return null;
  return usec;
}

/** A status line: one line, no control characters (the protocol is newline-separated). */
function statusLine(s: string): string {
  return s.replace(/[\x00-\x1f\x7f]+/g, " ").slice(0, 200);
}

/**
 * What `devservices serve` tells systemd: READY=1 once its names are owned, WATCHDOG=1
 * every half WATCHDOG_USEC while the main loop runs, STOPPING=1 when it stops.
 * Every method is a no-op when the process was not started with NOTIFY_SOCKET.
 */
export class SystemdNotifier {
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly onError: (what: string, e: unknown) => void = () => {},
    private readonly socket = process.env.NOTIFY_SOCKET,
    private readonly env: Record<string, string | undefined> = process.env,
  ) {}

  get enabled(): boolean {
    return notifyAddress(this.socket) !== null;
  }

  /** Sends state; a failure is reported to onError, never thrown. */
  notify(state: string): boolean {
    try {
      return sdNotify(state, this.socket);
    } catch (e) {
      this.onError(state.split("\n")[0]!, e);
      return false;
    }
  }

  /** READY=1 with a STATUS= line, then the watchdog pings when WATCHDOG_USEC asks for them. */
  ready(status: string): void {
    if (!this.enabled) return;
    this.notify(`READY=1\nSTATUS=${statusLine(status)}`);
    const usec = watchdogUsec(this.env);
    if (usec !== null && !this.timer) {
      // A timer on the main loop: if the loop stalls, the pings stop and systemd acts.
      this.timer = setInterval(() => this.notify("WATCHDOG=1"), Math.max(1, Math.floor(usec / 2000)));
      this.timer.unref();
    }
  }

  /** STOPPING=1 (with a STATUS= line); the watchdog stops. */
  stopping(status = "stopping"): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.enabled) this.notify(`STOPPING=1\nSTATUS=${statusLine(status)}`);
  }
}
