// bench/bus floor: the reference for the footprint figures. It loads and uses what
// devservices stands on and none of its own code: the Bun runtime, zod (a schema
// built and a payload parsed), pino (a log line to stdout), bun:sqlite (a database in
// WAL mode, as the file cache and the media indexer keep), bun:ffi (libc opened with
// a few symbols) and a unix socket connected to the bus. Built with the product's
// flags (scripts/compile-flags.ts); prints "ready" once all of that is done,
// then idles. Usage: floor BUS_SOCKET_PATH DATABASE_PATH
import { z } from "zod";
import pino from "pino";
import { Database } from "bun:sqlite";
import { dlopen, FFIType } from "bun:ffi";

const [socketPath, dbPath] = process.argv.slice(2);
if (!socketPath || !dbPath) {
  console.error("usage: floor BUS_SOCKET_PATH DATABASE_PATH");
  process.exit(2);
}
const Payload = z.looseObject({ subscribe: z.boolean().optional(), name: z.string(), ids: z.array(z.number()).optional() });
Payload.parse({ name: "x", ids: [1, 2] });
const log = pino({ base: null });
log.info({ socket: socketPath }, "floor starting");
const db = new Database(dbPath, { create: true, strict: true });
db.exec("PRAGMA journal_mode = WAL");
db.exec("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v INTEGER)");
db.query("INSERT OR REPLACE INTO t (k, v) VALUES (?, ?)").run("x", 1);
const { i32, u64, ptr } = FFIType;
const libc = dlopen("libc.so.6", {
  getpid: { args: [], returns: i32 },
  write: { args: [i32, ptr, u64], returns: i32 },
  close: { args: [i32], returns: i32 },
});
libc.symbols.getpid();
// (No top-level await: a --bytecode build is CommonJS, as the product's is.)
void Bun.connect({ unix: socketPath, socket: { data() {} } }).then(() => {
  // The JIT keeps the start-up policy, as devservices' does until its services have
  // served JIT_SETTLE_CALLS calls (src/core/engine.ts); the floor serves none.
  console.log("ready");
  setInterval(() => {}, 1 << 30);
  // And collects once quiet, as serve does (src/core/engine.ts, QUIET_COLLECT_MS).
  setTimeout(() => Bun.gc(true), 20_000);
});
