// One chaos agent of bench/chaos/run.ts: a hostile (or, for `reason-setter`, a busy
// root) client that loops until SIGTERM, its own deadline (CHAOS_MAX_SECONDS) or its
// bound on actions, then prints one line
//   SUMMARY {"mode", "uid", "actions", "refused", "errors", "notes"}
// A refusal is an answer with returnValue false (the expected outcome of most of
// these); an error is a call the bus failed (timeout, disconnect), a write that
// failed, or a round that did not finish in time.
//   agent.ts replies | subscriptions | reason-setter | intents | media | filecache DISK | malformed | peripheral
import { spawn, type Subprocess } from "bun";
import { statfsSync, writeFileSync, writeSync } from "node:fs";
import { join, resolve } from "node:path";
import { connectBus, METHOD_CALL, type Connection } from "../../src/bus/connection";
import { BusClient } from "../../src/bus/client";
import { busNameOf, memberName, objectPath } from "../../src/bus/wire";

const ROOT = resolve(import.meta.dir, "../..");
const BUS = process.env.DEVSERVICES_BUS!;
const [mode, ...args] = process.argv.slice(2);
const deadline = Date.now() + Number(process.env.CHAOS_MAX_SECONDS ?? 600) * 1000;

type Json = Record<string, unknown>;
const tally = { actions: 0, refused: 0, errors: 0, notes: {} as Record<string, number | string> };
const note = (k: string, by = 1) => (tally.notes[k] = Number(tally.notes[k] ?? 0) + by);
const firstError = (e: unknown) => {
  tally.errors++;
  tally.notes.firstError ??= String((e as Error)?.message ?? e).slice(0, 160);
};
const children: Subprocess[] = [];
let stopping = false;
let finished = false;
const running = (maxActions: number) => !stopping && Date.now() < deadline && tally.actions < maxActions;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function finish(): never {
  if (!finished) {
    finished = true;
    for (const c of children) c.kill("SIGKILL");
    if (inFlight) tally.notes.unansweredAtStop = inFlight;
    // Synchronous: the line must be out before the process exits.
    writeSync(1, `SUMMARY ${JSON.stringify({ mode, uid: process.getuid?.(), ...tally })}\n`);
  }
  process.exit(0);
}
process.on("SIGTERM", () => {
  stopping = true;
  finish();
});

/** Counts an answer: a refusal when returnValue is false. */
function answer(r: unknown): Json {
  tally.actions++;
  const j = (r ?? {}) as Json;
  if (j.returnValue === false) tally.refused++;
  return j;
}

/** Per method: refusals, and the first refusal's text (the peripheral agent reports them). */
const byMethod = new Map<string, { refused: number; first: string }>();

/** Calls; an answer is counted, a bus failure is an error (returns undefined). */
let inFlight = 0;
async function call(c: BusClient, service: string, method: string, payload: unknown, timeoutMs = 10000): Promise<Json | undefined> {
  inFlight++;
  try {
    const r = answer(await c.call(service, method, payload as never, { timeoutMs }));
    if (r.returnValue === false) {
      const m = byMethod.get(method) ?? { refused: 0, first: `${r.errorCode ?? ""} ${r.errorText ?? ""}`.trim().slice(0, 90) };
      m.refused++;
      byMethod.set(method, m);
    }
    return r;
  } catch (e) {
    tally.actions++;
    firstError(e);
    return undefined;
  } finally {
    inFlight--;
  }
}

/** A method call message on a raw connection (the pipeliner's way: no reply awaited). */
const message = (service: string, method: string, payload: string) => {
  const destination = busNameOf(service);
  return { destination, path: objectPath(destination), interface: destination, member: memberName(method), signature: "s", body: [payload] };
};
const setReading = (conn: Connection, on: boolean) => (conn as unknown as { w: { want(i: { readable: boolean }): void } }).w.want({ readable: on });
async function drained(conn: Connection, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (conn.queuedBytes > 0 && !conn.isClosed && Date.now() < end) await sleep(5);
  return conn.queuedBytes === 0;
}

// 1. Ten ~600 KB pings pipelined on one connection that never reads a reply; a new
// connection each round, the one before closed (as killing test/fixtures/pipeliner.ts
// does): the replies pile up for a reader that is gone.
async function replies() {
  const body = JSON.stringify({ Message: "x".repeat(600_000) });
  const check = await BusClient.connect(BUS);
  let prev: Connection | undefined;
  let round = 0;
  while (running(100_000)) {
    // Every 10th round, one ping whose answer is read: the pings are served (not refused).
    if (round++ % 10 === 0) {
      const r = await call(check, "testautomation", "ping", { Message: "x".repeat(600_000) }, 20000);
      if (r && r.Message !== "x".repeat(600_000)) tally.notes.checkAnswer ??= JSON.stringify(r).slice(0, 120);
    }
    let conn: Connection;
    try {
      conn = await connectBus(BUS, { negotiateUnixFd: false });
    } catch (e) {
      firstError(e);
      await sleep(500);
      continue;
    }
    for (let i = 0; i < 10 && !conn.isClosed; i++) {
      while (conn.queuedBytes > 0 && !conn.isClosed) await sleep(1);
      conn.send({ type: METHOD_CALL, ...message("testautomation", "ping", body) });
      tally.actions++;
    }
    setReading(conn, false);
    if (!(await drained(conn, 20000))) {
      tally.errors++;
      note("roundsNotWrittenIn20s");
    }
    note("connections");
    prev?.close();
    prev = conn;
    await sleep(1000);
  }
}

// 2. Four connections of 5,000 getPowerOnReason subscriptions each, pipelined and not
// read while root changes the reason every second (the pushes queue up); after 5 s
// the answers are read (to count the refusals), the connections closed, and again.
async function subscriptions() {
  const PER = 5000;
  while (running(2_000_000)) {
    let conns: Connection[];
    try {
      conns = await Promise.all([0, 1, 2, 3].map(() => connectBus(BUS, { negotiateUnixFd: false })));
    } catch (e) {
      firstError(e);
      await sleep(500);
      continue;
    }
    let closing = false;
    let settled = 0;
    let pushes = 0;
    for (const conn of conns) conn.onSignal(() => pushes++);
    await Promise.all(
      conns.map(async (conn) => {
        for (let i = 0; i < PER && !conn.isClosed; i++) {
          while (conn.queuedBytes > 0 && !conn.isClosed) await sleep(1);
          tally.actions++;
          conn.call({ type: METHOD_CALL, ...message("power2", "getPowerOnReason", '{"subscribe":true}') }, 0).then(
            (m) => {
              if (closing) return;
              settled++;
              const r = JSON.parse(String(m.body[0])) as Json;
              if (r.returnValue === false) {
                tally.refused++;
                tally.notes.refusal ??= String(r.errorText ?? "").slice(0, 120);
              } else if (r.subscribed === true) note("subscribed");
            },
            (e) => {
              if (closing) return;
              settled++;
              firstError(e);
            },
          );
        }
        setReading(conn, false);
        await drained(conn, 20000);
      }),
    );
    // Hold: the answers and pushes wait, unread.
    const hold = Date.now() + 5000;
    while (Date.now() < hold && !stopping) await sleep(100);
    for (const conn of conns) setReading(conn, true);
    const end = Date.now() + 5000;
    while (settled < PER * conns.length && Date.now() < end && !stopping) await sleep(20);
    closing = true;
    const unanswered = PER * conns.length - settled;
    if (unanswered) {
      tally.errors += unanswered;
      note("unansweredWithin5sOfReading", unanswered);
    }
    note("pushesRead", pushes);
    for (const conn of conns) conn.close();
    note("rounds");
  }
}

// 2b. Root changes the power-on reason every second (a push to every subscriber).
async function reasonSetter() {
  const c = await BusClient.connect(BUS);
  let n = 0;
  while (running(100_000)) {
    const t0 = Date.now();
    await call(c, "power2", "setPowerOnReason", { reason: `chaos-${++n}` });
    await sleep(Math.max(0, 1000 - (Date.now() - t0)));
  }
}

// 3. Several connections of one uid ask for intent handler launches, each as fast as
// its answers come: a `view` of an https address, which the installed viewer takes.
async function intents() {
  const clients = await Promise.all([0, 1, 2, 3].map(() => BusClient.connect(BUS)));
  let n = 0;
  await Promise.all(
    clients.map(async (c) => {
      while (running(5_000_000)) {
        const r = await call(c, "intent", "start", { intent: { action: "view", uri: `https://example.com/chaos/${++n}` } }, 20000);
        if (!r) await sleep(100);
        else if (r.returnValue === true) note("started");
        else {
          const reason = String(r.reason ?? r.errorText ?? "");
          if (/maxHandlerProcessesPerUid/.test(reason)) note("refusedPerUid");
          else if (/maxHandlerProcesses\b/.test(reason)) note("refusedTotal");
          else {
            note("refusedOther");
            tally.notes.otherRefusal ??= JSON.stringify(r).slice(0, 160);
          }
        }
      }
    }),
  );
}

// 4. Scans of a big tree (/usr and parts of it), asked for as fast as the answers come.
async function media() {
  const c = await BusClient.connect(BUS);
  const paths = ["/usr", "/usr/share", "/usr/lib", "/usr/include", "/usr/bin"];
  let i = 0;
  while (running(2_000_000)) {
    // (Answered when the scan is done: the timeout is the agent's whole run.)
    const r = await call(c, "mediaindexer", "requestMediaScan", { path: paths[i++ % paths.length] }, Math.max(1000, deadline - Date.now()));
    if (!r) await sleep(100);
    else if (r.returnValue === false) tally.notes.refusal ??= String(r.errorText ?? "").slice(0, 120);
    if (i % 20 === 0) {
      const d = await call(c, "mediaindexer", "getDeviceList", {}, 20000);
      const devices = ((d?.pluginList ?? []) as { deviceList?: { state?: string }[] }[]).flatMap((p) => p.deviceList ?? []);
      tally.notes.devices = devices.length;
      tally.notes.scanningAtLastLook = devices.filter((x) => x.state === "scanning").length;
    }
  }
}

// 5. The file cache on a small disk: objects inserted and written (every other one
// with twice the bytes it declared) until an insert is refused or a write fails for
// lack of room, then every object expired, and again. GetCacheStatus is compared with
// the disk's own free space (statfs) after each fill.
async function filecache() {
  const disk = args[0]!;
  const c = await BusClient.connect(BUS);
  const SIZE = 256 * 1024;
  const data = Buffer.alloc(2 * SIZE, 0x61);
  const type = "chaos";
  const d = await call(c, "filecache", "DefineType", { typeName: type, loWatermark: 0, hiWatermark: 64 << 20, size: SIZE, cost: 1, lifetime: 0 });
  if (d?.returnValue === false) tally.notes.defineType = String(d.errorText ?? "").slice(0, 120);
  let n = 0;
  while (running(2_000_000)) {
    const objects: string[] = [];
    for (let k = 0; k < 64 && running(2_000_000); k++) {
      const r = await call(c, "filecache", "InsertCacheObject", { typeName: type, fileName: `f${++n}.bin`, size: SIZE });
      if (!r) break;
      if (r.returnValue === false) {
        tally.notes.refusal ??= String(r.errorText ?? "").slice(0, 140);
        note("insertsRefused");
        break;
      }
      const path = String(r.pathName);
      objects.push(path);
      try {
        writeFileSync(path, k % 2 ? data : data.subarray(0, SIZE));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOSPC") note("writesENOSPC");
        else firstError(e);
        break;
      }
    }
    const s = await call(c, "filecache", "GetCacheStatus", {});
    if (s && typeof s.availSpace === "number") {
      const fs = statfsSync(disk);
      const free = fs.bavail * fs.bsize;
      note("statusChecks");
      // More room claimed than the disk has (a block of slack for the metadata's writes).
      if (s.availSpace > free + 4096) {
        note("statusClaimedMoreThanDiskFree");
        tally.notes.worstClaim ??= `availSpace ${s.availSpace} with ${free} bytes free`;
      }
    }
    for (const p of objects) {
      const r = await call(c, "filecache", "ExpireCacheObject", { pathName: p });
      if (r?.returnValue === false) tally.notes.expireRefusal ??= String(r.errorText ?? "").slice(0, 120);
    }
    note("rounds");
  }
}

// 6. Nested and huge payloads (test/fixtures/flooder.ts, one process per kind) at a
// few services in turn, rounds of 8 s. Every call is expected to be refused.
async function malformed() {
  const targets: [string, string][] = [
    ["testautomation", "ping"],
    ["filecache", "GetCacheStatus"],
    ["mediaindexer", "getDeviceList"],
    ["peripheralmanager", "i2c/list"],
    ["intent", "query"],
    ["power2", "getPowerOnReason"],
  ];
  const ROUND = 8;
  let i = 0;
  while (running(10_000_000)) {
    const round = (["nested", "huge"] as const).map(async (kind, k) => {
      const [service, method] = targets[(i + k) % targets.length]!;
      const p = spawn([process.execPath, join(ROOT, "test/fixtures/flooder.ts"), service, method, kind, String(ROUND)], {
        env: process.env,
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      });
      children.push(p);
      const timer = setTimeout(() => p.kill("SIGKILL"), (ROUND + 45) * 1000);
      const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
      await p.exited;
      clearTimeout(timer);
      children.splice(children.indexOf(p), 1);
      const done = /^DONE (\d+) (.*)$/m.exec(out);
      if (!done) {
        if (stopping) return;
        tally.actions++;
        firstError(`flooder ${kind} ${service}/${method}: exit ${p.exitCode} ${err.trim().split("\n").pop() ?? ""}`);
        return;
      }
      const calls = Number(done[1]);
      tally.actions += calls;
      note(`${kind}Calls`, calls);
      const first = JSON.parse(done[2]!) as Json;
      if (first?.returnValue === false) tally.refused += calls;
      // (The file cache answers GetCacheStatus and GetCacheTypes whatever the payload: its spec.)
      else tally.notes[`${kind} answered by ${service}/${method}`] ??= JSON.stringify(first).slice(0, 100);
    });
    await Promise.all(round);
    i++;
  }
}

// 7. The peripheral manager with bad inputs: i2c opens of addresses the recipe does
// not list (and of no 7-bit address at all, and of a bus that does not exist), a read
// there; uart opens with absurd baud rates in the config and setBaudrate with absurd
// rates. Every 50 rounds the connection goes away with things left open.
async function peripheral() {
  const listed = new Set([80, 104]);
  const addresses: unknown[] = [...Array.from({ length: 128 }, (_, a) => a).filter((a) => !listed.has(a)), 128, 255, 1024, -1, 2 ** 31, 1.5, "0x51", null];
  const bauds: unknown[] = [0, 1, 7, 50, 4294967295, 4294967296, 1e12, -9600, 3.5, "115200", 2 ** 53];
  let c = await BusClient.connect(BUS);
  let round = 0;
  const PM = "peripheralmanager";
  while (running(10_000_000)) {
    const address = addresses[round % addresses.length];
    const baud = bauds[round % bauds.length];
    const leave = ++round % 50 === 0;
    const o = await call(c, PM, "i2c/open", { name: "I2C0", address });
    if (o?.returnValue === true) {
      note("i2cOpened");
      await call(c, PM, "i2c/read", { name: "I2C0", address, size: 4 });
      if (!leave) await call(c, PM, "i2c/close", { name: "I2C0", address });
    }
    await call(c, PM, "i2c/open", { name: "I2C9", address: 80 });
    const u = await call(c, PM, "uart/open", { interfaceId: "uart0", config: { canonical: false, baudrate: baud } });
    if (u?.returnValue === true) {
      note("uartOpened");
      const s = await call(c, PM, "uart/setBaudrate", { interfaceId: "uart0", baudrate: baud });
      const g = await call(c, PM, "uart/getBaudrate", { interfaceId: "uart0" });
      if (s?.returnValue === true && g?.returnValue === true && typeof baud === "number" && g.baudrate !== baud) {
        note("baudrateNotAsSet");
        tally.notes[`setBaudrate ${baud} answered`] ??= `${s?.returnValue}, then getBaudrate ${g.baudrate}`;
      }
      if (!leave) await call(c, PM, "uart/close", { interfaceId: "uart0" });
    }
    await call(c, PM, "uart/open", { interfaceId: "uart9" });
    for (const [m, v] of byMethod) tally.notes[`${m} refused`] = `${v.refused}x, first: ${v.first}`;
    if (leave) {
      c.close();
      note("leftOpenAndDisconnected");
      c = await BusClient.connect(BUS);
    }
  }
}

const modes: Record<string, () => Promise<void>> = { replies, subscriptions, "reason-setter": reasonSetter, intents, media, filecache, malformed, peripheral };
const run = modes[mode!];
if (!run) {
  console.error(`agent.ts: unknown mode ${mode}; one of ${Object.keys(modes).join(", ")}`);
  process.exit(2);
}
writeSync(1, "STARTED\n");
try {
  await run();
} catch (e) {
  firstError(e);
  tally.notes.fatal = String((e as Error)?.stack ?? e).split("\n").slice(0, 2).join(" ").slice(0, 200);
}
finish();
