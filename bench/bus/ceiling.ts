// bench/bus ceiling: the fastest a Bun process can answer the bench's `ping`, the
// reference that tells the runtime's share of a call from devservices' own. It speaks
// just enough D-Bus by hand (EXTERNAL auth, Hello, RequestName) on Bun's own socket, and
// answers each `ping` by copying the caller's string into a method return: no codec, no
// JSON, no schema, no dispatch, no access check, no log. What it does per call is what
// the C service's sd-bus does (read the header, reply with the same string), so its
// ratio to C is the best any service on this runtime can reach on this machine; it is
// not a service (it answers nothing else and checks nothing). Compiled with the
// product's flags (scripts/compile-flags.ts), and it relaxes the JIT after the same
// number of calls as serve (src/core/engine.ts, JIT_SETTLE_CALLS).
// Usage: ceiling BUS_SOCKET_PATH BUS_NAME; prints "ready" once the name is owned.
import { JIT_SETTLE_CALLS } from "../../src/core/engine";

const [socketPath, busName] = process.argv.slice(2);
if (!socketPath || !busName) {
  console.error("usage: ceiling BUS_SOCKET_PATH BUS_NAME");
  process.exit(2);
}

const enc = new TextEncoder();
let serial = 0;
let calls = 0;

/** A little-endian message: fixed header, the fields (code, signature letter, value), body. */
function message(type: number, fields: [number, string, string | number | Uint8Array][], body: (Uint8Array | number)[]): Buffer {
  const parts: number[] = [];
  const pad = (a: number) => {
    while ((parts.length + 16) % a) parts.push(0);
  };
  const u32 = (v: number) => parts.push(v & 255, (v >>> 8) & 255, (v >>> 16) & 255, (v >>> 24) & 255);
  for (const [code, t, v] of fields) {
    pad(8);
    parts.push(code, 1, t.charCodeAt(0), 0);
    if (t === "u") u32(v as number);
    else if (t === "g") parts.push((v as string).length, ...enc.encode(v as string), 0);
    else {
      const b = typeof v === "string" ? enc.encode(v) : (v as Uint8Array);
      u32(b.length);
      parts.push(...b, 0);
    }
  }
  const fieldsLen = parts.length;
  pad(8);
  const bodyBytes: number[] = [];
  const word = (v: number) => bodyBytes.push(v & 255, (v >>> 8) & 255, (v >>> 16) & 255, (v >>> 24) & 255);
  for (const b of body) {
    while (bodyBytes.length % 4) bodyBytes.push(0);
    if (typeof b === "number") word(b);
    else {
      word(b.length);
      bodyBytes.push(...b, 0);
    }
  }
  const out = Buffer.alloc(16 + parts.length + bodyBytes.length);
  out[0] = 0x6c;
  out[1] = type;
  out[3] = 1;
  out.writeUInt32LE(bodyBytes.length, 4);
  out.writeUInt32LE(++serial, 8);
  out.writeUInt32LE(fieldsLen, 12);
  out.set(parts, 16);
  out.set(bodyBytes, 16 + parts.length);
  return out;
}

const DBUS: [number, string, string][] = [
  [1, "o", "/org/freedesktop/DBus"],
  [2, "s", "org.freedesktop.DBus"],
  [6, "s", "org.freedesktop.DBus"],
];

let authed = false;
let pending: Buffer = Buffer.alloc(0);
let out: Buffer[] = [];
let flushQueued = false;

function send(sock: { write(b: Uint8Array): number }, b: Buffer) {
  out.push(b);
  if (flushQueued) return;
  flushQueued = true;
  // One write per tick, as devservices' connection does.
  queueMicrotask(() => {
    flushQueued = false;
    const data = out.length === 1 ? out[0]! : Buffer.concat(out);
    out = [];
    sock.write(data);
  });
}

/** The header fields the ceiling reads: the sender, the member, the reply serial; and where the body starts. */
function fields(msg: Buffer): { sender?: Uint8Array; member: string; replySerial?: number; body: number } {
  const end = 16 + msg.readUInt32LE(12);
  const out: { sender?: Uint8Array; member: string; replySerial?: number; body: number } = { member: "", body: (end + 7) & ~7 };
  let pos = 16;
  while (pos < end) {
    pos = (pos + 7) & ~7;
    const code = msg[pos]!;
    const t = msg[pos + 2]!;
    pos += 4;
    if (t === 0x67) pos += msg[pos]! + 2;
    else if (t === 0x75) {
      if (code === 5) out.replySerial = msg.readUInt32LE(pos);
      pos += 4;
    } else {
      const n = msg.readUInt32LE(pos);
      if (code === 7) out.sender = msg.subarray(pos + 4, pos + 4 + n);
      else if (code === 3) out.member = msg.toString("latin1", pos + 4, pos + 4 + n);
      pos += 4 + n + 1;
    }
  }
  return out;
}

/** The reply to a `ping`: the caller's string copied back (reply serial, destination, signature). */
function answer(sock: { write(b: Uint8Array): number }, msg: Buffer) {
  const { sender, member, body: bodyAt } = fields(msg);
  if (member !== "ping" || !sender) return;
  const n = msg.readUInt32LE(bodyAt);
  const s = msg.subarray(bodyAt + 4, bodyAt + 4 + n);
  // Written in place: reply serial (u), destination (s), signature (g) "s", then the string.
  const destEnd = 16 + 8 + 8 + sender.length + 1;
  const sigAt = (destEnd + 7) & ~7;
  const fieldsEnd = sigAt + 7;
  const body = (fieldsEnd + 7) & ~7;
  const out = Buffer.alloc(body + 4 + n + 1);
  out[0] = 0x6c;
  out[1] = 2;
  out[2] = 1; // no reply expected
  out[3] = 1;
  out.writeUInt32LE(4 + n + 1, 4);
  out.writeUInt32LE(++serial, 8);
  out.writeUInt32LE(fieldsEnd - 16, 12);
  out[16] = 5;
  out[17] = 1;
  out[18] = 0x75;
  out.writeUInt32LE(msg.readUInt32LE(8), 20);
  out[24] = 6;
  out[25] = 1;
  out[26] = 0x73;
  out.writeUInt32LE(sender.length, 28);
  out.set(sender, 32);
  out[sigAt] = 8;
  out[sigAt + 1] = 1;
  out[sigAt + 2] = 0x67;
  out[sigAt + 4] = 1;
  out[sigAt + 5] = 0x73;
  out.writeUInt32LE(n, body);
  out.set(s, body + 4);
  send(sock, out);
  if (++calls === JIT_SETTLE_CALLS) Bun.unsafe.setJITPolicy(1);
}

void Bun.connect({
  unix: socketPath,
  socket: {
    open(sock) {
      sock.write(`\0AUTH EXTERNAL ${Buffer.from(String(process.getuid!())).toString("hex")}\r\n`);
    },
    data(sock, chunk: Buffer) {
      if (!authed) {
        if (!chunk.toString("latin1").startsWith("OK ")) throw new Error(`auth refused: ${chunk}`);
        authed = true;
        sock.write("BEGIN\r\n");
        sock.write(message(1, [...DBUS, [3, "s", "Hello"]], []));
        sock.write(message(1, [...DBUS, [3, "s", "RequestName"], [8, "g", "su"]], [enc.encode(busName), 0]));
        return;
      }
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      while (pending.length >= 16) {
        const total = 16 + ((pending.readUInt32LE(12) + 7) & ~7) + pending.readUInt32LE(4);
        if (pending.length < total) break;
        const msg = pending.subarray(0, total);
        pending = pending.subarray(total);
        if (msg[1] === 1) answer(sock, msg);
        else if (msg[1] === 2 && calls === 0) {
          // RequestName's reply (our serial 2): ready once the name is ours (1, DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER).
          const f = fields(msg);
          if (f.replySerial !== 2) continue;
          if (msg.readUInt32LE(f.body) !== 1) throw new Error(`${busName} is not ours (RequestName answered ${msg.readUInt32LE(f.body)})`);
          console.log("ready");
        }
      }
    },
    close() {
      process.exit(0);
    },
  },
});
