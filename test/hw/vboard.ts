// Shared by the guest tests: they run only inside the virtual-board guest
// (scripts/vboard test), where scripts/vboard.d/init sets DEVSERVICES_VBOARD=1.
import { describe } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";

export const inGuest = process.env.DEVSERVICES_VBOARD === "1";

/** describe() that runs only in the guest. */
export const guest = describe.skipIf(!inGuest);

export function readText(path: string): string {
  return readFileSync(path, "utf8").trim();
}

/** The /dev node of the first device in a sysfs class whose `name` attribute matches. */
export function classDevice(cls: string, match: (name: string) => boolean): string | undefined {
  for (const dev of readdirSync(`/sys/class/${cls}`)) {
    try {
      if (match(readText(`/sys/class/${cls}/${dev}/name`))) return `/dev/${dev}`;
    } catch {}
  }
  return undefined;
}
