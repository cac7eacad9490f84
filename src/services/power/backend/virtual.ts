// The virtual board: the actions are recorded and logged, the host is left alone.
import type { Logger } from "../../../core/log";
import type { PowerBackend } from "./types";

export class VirtualBackend implements PowerBackend {
  readonly kind = "virtual";
  /** Actions taken, oldest first (powerOff, reboot, inhibit, uninhibit). */
  readonly history: string[] = [];
  constructor(private log: Logger) {}

  async powerOff() {
    this.history.push("powerOff");
    this.log.info("virtual board powers off");
  }

  async reboot() {
    this.history.push("reboot");
    this.log.info("virtual board reboots");
  }

  async inhibit(why: string): Promise<() => void> {
    this.history.push("inhibit");
    this.log.debug({ why }, "virtual inhibitor taken");
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      this.history.push("uninhibit");
    };
  }

  close() {}
}
