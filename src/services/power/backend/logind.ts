// systemd-logind (org.freedesktop.login1.Manager): PowerOff/Reboot, and an Inhibit
// lock held while wake locks exist. The inhibitor is the fd logind returns; it is
// released by closing it.
import { libc } from "../../../ffi/libc";
import type { Logger } from "../../../core/log";
import type { Peers } from "../../../core/service";
import type { PowerBackend } from "./types";

export const LOGIND_NAME = "org.freedesktop.login1";
const MANAGER = { destination: LOGIND_NAME, path: "/org/freedesktop/login1", interface: "org.freedesktop.login1.Manager" };
/**
 * What a wake lock keeps from happening: the device stays on. One inhibitor per kind:
 * logind authorizes a combined "shutdown:sleep:idle" as if it were the lid switch's
 * (org.freedesktop.login1.inhibit-handle-lid-switch), not as the three inhibit-block-*
 * actions the layer's polkit rule grants, and refuses it (seen in the booted image).
 */
export const INHIBIT_WHAT = ["shutdown", "sleep", "idle"] as const;
const WHO = "devservices power2";

/** True when logind owns its name on the bus the client is connected to. */
export async function logindPresent(client: Peers): Promise<boolean> {
  const reply = await client.callRaw(
    { destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "NameHasOwner", signature: "s", body: [LOGIND_NAME] },
    { timeoutMs: 5000 },
  );
  return reply.body[0] === true;
}

export class LogindBackend implements PowerBackend {
  readonly kind = "logind";
  constructor(
    private client: Peers,
    private log: Logger,
    private onClose?: () => void,
  ) {}

  async powerOff() {
    // interactive=false: the service is the authority here, no polkit prompt.
    await this.client.callRaw({ ...MANAGER, member: "PowerOff", signature: "b", body: [false] });
  }

  async reboot() {
    await this.client.callRaw({ ...MANAGER, member: "Reboot", signature: "b", body: [false] });
  }

  async inhibit(why: string): Promise<() => void> {
    const fds: number[] = [];
    try {
      for (const what of INHIBIT_WHAT) {
        const reply = await this.client.callRaw({ ...MANAGER, member: "Inhibit", signature: "ssss", body: [what, WHO, why, "block"] }, { receiveFds: true });
        const fd = reply.body[0];
        if (reply.signature !== "h" || typeof fd !== "number" || fd < 0) throw new Error(`logind Inhibit ${what} answered '${reply.signature}' without a file descriptor`);
        fds.push(fd);
      }
    } catch (e) {
      for (const fd of fds) libc.close(fd);
      throw e;
    }
    this.log.info({ fds, what: INHIBIT_WHAT.join(":") }, "logind inhibitors taken");
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      for (const fd of fds) libc.close(fd);
      this.log.info({ fds }, "logind inhibitors released");
    };
  }

  close() {
    this.onClose?.();
  }
}
