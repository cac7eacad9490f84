// Chooses the backend once, at start: the board's (`linux` or `virtual`), unless the
// service's `backend` option forces one.
import type { Logger } from "../../../core/log";
import { requireDevices, type PeripheralSectionT } from "../recipe";
import { linuxBackend } from "./linux";
import { virtualBackend } from "./virtual";
import type { Backend } from "./types";

export function openBackend(kind: "linux" | "virtual", section: PeripheralSectionT, o: { consumer: string; log: Logger; origin: string }): Backend {
  if (kind === "virtual") return virtualBackend(section, o);
  requireDevices(section, o.origin);
  return linuxBackend(section, o);
}

export type { Backend };
