// Structured logs: pino JSON lines on stdout (the journal keeps them under systemd).
import pino from "pino";

export type Logger = pino.Logger;

let root: Logger = pino({ level: process.env.DEVSERVICES_LOG_LEVEL ?? "info", base: { pid: process.pid } });

export function configureLogging(level: string, destination?: number | string): Logger {
  root = pino(
    { level, base: { pid: process.pid } },
    destination === undefined ? undefined : pino.destination({ dest: destination, sync: true }),
  );
  return root;
}

export function logger(component?: string): Logger {
  return component ? root.child({ component }) : root;
}
