// Shared set-up of the peripheral manager tests: the service on a private bus, on
// the virtual board (its recipe section) or on a `linux` board whose UARTs are
// pseudo-terminals the test holds the other end of. The test's own clients are root
// (who may act on any client's handle); another application is app(): a process of
// uid 65534 with the protocols' groups.
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openBusToAll, spawnScript, testEnv, type Env } from "../helpers/harness";
import { testAccounts } from "../layer/accounts";
import * as termios from "../../src/ffi/termios";
import { readAvailable } from "../../src/ffi/libc";
import type { BusClient } from "../../src/bus/client";
import type { Json } from "../../src/core/errors";

export const PM = "com.vendor.service.peripheralmanager";

export const err = (code: number, text: string) => ({ returnValue: false, errorCode: code, errorText: text });
export const E = {
  invalid: err(1, "Invalid parameters"),
  unknownPin: err(2, "Unknown pin"),
  unknownI2c: err(3, "Unknown I2C bus"),
  unknownSpi: err(4, "Unknown SPI bus"),
  unknownUart: err(5, "Unknown UART interface"),
  openedByOther: err(6, "Already opened by another application"),
  notOpened: err(7, "Not opened by this application"),
  denied: err(8, "Permission denied"),
  notOutput: err(10, "Pin is not an output"),
  tooFast: err(11, "Frequency above the bus maximum"),
  noDevice: err(13, "No device answered"),
  ioError: err(14, "I/O error"),
  unavailable: err(15, "Device unavailable"),
  unknownDevice: err(17, "Unknown I2C device"),
};
export const OK = { returnValue: true };

export interface PmEnv {
  env: Env;
  /** A new client connection, with a call helper. */
  client(): Promise<{ c: BusClient; call: (method: string, payload?: Json | string) => Promise<Json> }>;
  /**
   * Another application: a process of uid 65534 with the groups of these protocols
   * (devservices-gpio...), not root as the test's own clients are. Makes the calls in
   * order on one connection and exits; resolves with the answers.
   */
  app(protocols: Protocol[], calls: [string, Json][]): Promise<Json[]>;
  stop(): Promise<void>;
}

export type Protocol = "gpio" | "i2c" | "spi" | "uart";
export const NOBODY = 65534;

/** The gids of the protocols' groups (created when missing, as the layer's tests do). */
export function protocolGids(protocols: Protocol[]): number[] {
  if (process.getuid?.() !== 0) throw new Error("calls as another uid need root (setpriv)");
  const { gids } = testAccounts();
  return protocols.map((p) => gids[`devservices-${p}`]);
}

export async function pmEnv(board?: Json): Promise<PmEnv> {
  const env = await testEnv();
  await env.start(["peripheralmanager"], board as any);
  let home: string | undefined;
  return {
    env,
    async client() {
      const c = await env.client();
      return { c, call: (method, payload = {}) => c.call(PM, method, payload) };
    },
    async app(protocols, calls) {
      const gids = protocolGids(protocols);
      if (!home) {
        home = mkdtempSync(join(tmpdir(), "devservices-pm-app-"));
        chownSync(home, NOBODY, NOBODY);
        openBusToAll(env.bus.address);
      }
      const proc = spawnScript("test/fixtures/peripheralmanager-prober.ts", [JSON.stringify(calls)], { DEVSERVICES_BUS: env.bus.address, HOME: home }, [
        "setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, gids.length ? `--groups=${gids.join(",")}` : "--clear-groups",
      ]);
      const line = await proc.waitFor((l) => l.startsWith("RESULTS "), 20000);
      await proc.proc.exited;
      return JSON.parse(line.slice(8));
    },
    async stop() {
      await env.stop();
      if (home) rmSync(home, { recursive: true, force: true });
    },
  };
}

/** A pty pair standing in for a serial line: the service opens `path`, the test drives `master`. */
export function serialLine() {
  const pty = termios.openPty();
  // The test's own slave fd is closed: the service's open is the tty's only user
  // (the master would read EIO with no slave open, so the service must open it first).
  termios.close(pty.slave);
  return {
    master: pty.master,
    path: pty.path,
    /** What the service wrote, collected until `n` bytes came (or 2 s). */
    async received(n: number, timeoutMs = 2000): Promise<Buffer> {
      const parts: Buffer[] = [];
      let got = 0;
      const end = Date.now() + timeoutMs;
      while (got < n && Date.now() < end) {
        let b: Buffer | null = null;
        try {
          b = readAvailable(pty.master, 4096);
        } catch {}
        if (b && b.length) {
          parts.push(Buffer.from(b));
          got += b.length;
        } else await Bun.sleep(5);
      }
      return Buffer.concat(parts);
    },
    close: () => termios.close(pty.master),
  };
}
