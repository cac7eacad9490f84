// No logind on the bus: the reboot(2) system call (linux/reboot.h), after sync(2).
// There is no system inhibitor without logind; the service's own wake-lock gate
// still holds every state change of this service.
import { check, libc } from "../../../ffi/libc";
import type { PowerBackend } from "./types";

export const LINUX_REBOOT_CMD_RESTART = 0x01234567;
export const LINUX_REBOOT_CMD_POWER_OFF = 0x4321fedc;

export class SyscallBackend implements PowerBackend {
  readonly kind = "syscall";

  async powerOff() {
    libc.sync();
    check("reboot(LINUX_REBOOT_CMD_POWER_OFF)", () => libc.reboot(LINUX_REBOOT_CMD_POWER_OFF));
  }

  async reboot() {
    libc.sync();
    check("reboot(LINUX_REBOOT_CMD_RESTART)", () => libc.reboot(LINUX_REBOOT_CMD_RESTART));
  }

  async inhibit(): Promise<() => void> {
    return () => {};
  }

  close() {}
}
