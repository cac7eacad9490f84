// The C references of the benches are sd-bus programs: gcc and libsystemd's headers,
// installed with apt-get when missing (a fresh machine).
import { $ } from "bun";

/** Installs gcc, libsystemd-dev and pkg-config unless sd-bus's header is there; `who` names the bench in the message. */
export async function ensureSdBus(who: string): Promise<void> {
  if (await Bun.file("/usr/include/systemd/sd-bus.h").exists()) return;
  console.error(`${who}: installing gcc and libsystemd-dev (sd-bus, for the C reference)`);
  await $`apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libsystemd-dev pkg-config`.quiet();
}
