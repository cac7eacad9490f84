// Chooses the power backend once, at start (docs/services/power.md, `backend`):
// the virtual board gets the virtual one; a real board gets logind when logind owns
// its name on the logind bus, else the reboot(2) system call.
import { BusClient } from "../../../bus/client";
import { resolveBusAddress } from "../../../bus/client";
import type { Logger } from "../../../core/log";
import type { Peers } from "../../../core/service";
import { LogindBackend, logindPresent } from "./logind";
import { SyscallBackend } from "./syscall";
import { VirtualBackend } from "./virtual";
import type { PowerBackend } from "./types";

export type BackendChoice = "auto" | "logind" | "syscall" | "virtual";

export interface BackendOptions {
  choice: BackendChoice;
  boardBackend: "linux" | "virtual";
  /** The service's calls to peers on its own bus (ctx.peers). */
  client: Peers;
  busAddress: string;
  /** Where logind is looked for: an address, `system`, or unset for the service's own bus. */
  logindBus?: string;
  log: Logger;
}

export async function openBackend(o: BackendOptions): Promise<PowerBackend> {
  const choice = o.choice === "auto" && o.boardBackend === "virtual" ? "virtual" : o.choice;
  if (choice === "virtual") return new VirtualBackend(o.log);
  if (choice === "syscall") return new SyscallBackend();
  let client: Peers = o.client;
  let own: BusClient | undefined;
  const address = o.logindBus === undefined ? o.busAddress : resolveBusAddress(o.logindBus);
  if (address !== o.busAddress) {
    try {
      client = own = await BusClient.connect(address, { negotiateUnixFd: true });
    } catch (e) {
      if (choice === "logind") throw new Error(`cannot reach the logind bus ${address}: ${(e as Error).message}`);
      o.log.warn({ bus: address, err: e }, "logind bus unreachable; using the reboot system call");
      return new SyscallBackend();
    }
  }
  const present = await logindPresent(client).catch((e) => {
    o.log.warn({ err: e }, "cannot ask the bus for logind");
    return false;
  });
  if (present || choice === "logind") {
    if (!present) o.log.warn({ bus: address }, "logind is not on the bus yet; its calls will fail until it is");
    return new LogindBackend(client, o.log, own ? () => own.close() : undefined);
  }
  own?.close();
  return new SyscallBackend();
}

export type { PowerBackend };
