// The D-Bus wire format (the D-Bus specification, "Message Protocol"): headers and
// the bodies devservices exchanges on every call, written and read here directly.
// Bodies made only of basic types (s o g y b n q i u x t d h) take this path; a
// body with containers or variants (a{sv}, ...) goes through generic.ts.
import { encodeBodyGeneric, decodeBodyGeneric } from "./generic";

export const METHOD_CALL = 1, METHOD_RETURN = 2, ERROR = 3, SIGNAL = 4;
export const NO_REPLY_EXPECTED = 0x1, NO_AUTO_START = 0x2;

/** Largest message the platform reads or writes (the specification's maximum). */
export const MAX_MESSAGE = 128 * 1024 * 1024;

export interface Message {
  type: number;
  flags: number;
  serial: number;
  path?: string;
  interface?: string;
  member?: string;
  errorName?: string;
  replySerial?: number;
  destination?: string;
  sender?: string;
  /** Body signature ("" for none). */
  signature: string;
  body: any[];
  /** File descriptors carried by the message (h values index into these on the wire). */
  fds: number[];
  /** Set when the message was larger than its connection reads: its length; the body was dropped. */
  oversized?: number;
}

export type Outgoing = Omit<Message, "serial" | "fds" | "flags" | "signature" | "body"> & { flags?: number; fds?: number[]; signature?: string; body?: any[] };

const FIELD = { path: 1, interface: 2, member: 3, errorName: 4, replySerial: 5, destination: 6, sender: 7, signature: 8, unixFds: 9 } as const;
const BASIC = /^[sogybnqiuxtdh]*$/;

// ---- writing ------------------------------------------------------------------

class Writer {
  buf = Buffer.allocUnsafe(4096);
  off = 0;
  reset() {
    this.off = 0;
  }
  ensure(n: number) {
    if (this.off + n <= this.buf.length) return;
    const b = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.off + n + 1024));
    this.buf.copy(b, 0, 0, this.off);
    this.buf = b;
  }
  align(a: number) {
    const pad = (a - (this.off % a)) % a;
    if (!pad) return;
    this.ensure(pad);
    this.buf.fill(0, this.off, this.off + pad);
    this.off += pad;
  }
  u8(v: number) {
    this.ensure(1);
    this.buf[this.off++] = v;
  }
  u32(v: number) {
    this.align(4);
    this.ensure(4);
    this.buf.writeUInt32LE(v >>> 0, this.off);
    this.off += 4;
  }
  i32(v: number) {
    this.align(4);
    this.ensure(4);
    this.buf.writeInt32LE(v | 0, this.off);
    this.off += 4;
  }
  str(s: string) {
    this.align(4);
    this.ensure(4 + 3 * s.length + 1);
    const n = this.buf.write(s, this.off + 4, "utf8");
    this.buf.writeUInt32LE(n, this.off);
    this.buf[this.off + 4 + n] = 0;
    this.off += 4 + n + 1;
  }
  sig(s: string) {
    this.ensure(s.length + 2);
    this.buf[this.off] = s.length;
    this.buf.write(s, this.off + 1, "latin1");
    this.buf[this.off + 1 + s.length] = 0;
    this.off += s.length + 2;
  }
  basic(t: string, v: any, fds: number[]) {
    switch (t) {
      case "s":
      case "o":
        return this.str(String(v));
      case "g":
        return this.sig(String(v));
      case "y":
        return this.u8(Number(v));
      case "b":
        return this.u32(v ? 1 : 0);
      case "n":
      case "q":
        this.align(2);
        this.ensure(2);
        if (t === "n") this.buf.writeInt16LE(Number(v), this.off);
        else this.buf.writeUInt16LE(Number(v), this.off);
        this.off += 2;
        return;
      case "i":
        return this.i32(Number(v));
      case "u":
        return this.u32(Number(v));
      case "h": {
        let i = fds.indexOf(Number(v));
        if (i < 0) i = fds.push(Number(v)) - 1;
        return this.u32(i);
      }
      case "x":
      case "t":
      case "d":
        this.align(8);
        this.ensure(8);
        if (t === "d") this.buf.writeDoubleLE(Number(v), this.off);
        else if (t === "x") this.buf.writeBigInt64LE(BigInt(v), this.off);
        else this.buf.writeBigUInt64LE(BigInt(v), this.off);
        this.off += 8;
        return;
    }
    throw new Error(`not a basic D-Bus type: ${t}`);
  }
}

const w = new Writer();

function field(code: number, t: string, v: string | number) {
  w.align(8);
  w.u8(code);
  w.sig(t);
  w.basic(t, v, []);
}

/** Encodes a message: the bytes and the fds that travel with them. */
export function encode(m: Outgoing, serial: number): { data: Buffer; fds: number[] } {
  const fds = [...(m.fds ?? [])];
  const sig = m.signature ?? "";
  let body: Buffer | undefined;
  let bodyLen: number;
  // Body first, into the scratch writer, so its length and fd count are known.
  w.reset();
  if (BASIC.test(sig)) {
    const body0 = m.body ?? [];
    if (body0.length !== sig.length) throw new Error(`signature '${sig}' wants ${sig.length} values, got ${body0.length}`);
    for (let i = 0; i < sig.length; i++) w.basic(sig[i]!, body0[i], fds);
    body = Buffer.from(w.buf.subarray(0, w.off));
  } else {
    body = encodeBodyGeneric(sig, m.body ?? [], fds);
  }
  bodyLen = body.length;
  w.reset();
  w.u8(0x6c); // 'l'
  w.u8(m.type);
  w.u8(m.flags ?? 0);
  w.u8(1);
  w.u32(bodyLen);
  w.u32(serial);
  const lenAt = w.off;
  w.u32(0);
  const start = w.off;
  if (m.path !== undefined) field(FIELD.path, "o", m.path);
  if (m.interface !== undefined) field(FIELD.interface, "s", m.interface);
  if (m.member !== undefined) field(FIELD.member, "s", m.member);
  if (m.errorName !== undefined) field(FIELD.errorName, "s", m.errorName);
  if (m.replySerial !== undefined) field(FIELD.replySerial, "u", m.replySerial);
  if (m.destination !== undefined) field(FIELD.destination, "s", m.destination);
  if (m.sender !== undefined) field(FIELD.sender, "s", m.sender);
  if (sig) field(FIELD.signature, "g", sig);
  if (fds.length) field(FIELD.unixFds, "u", fds.length);
  w.buf.writeUInt32LE(w.off - start, lenAt);
  w.align(8);
  const total = w.off + bodyLen;
  if (total > MAX_MESSAGE) throw new Error(`message of ${total} bytes is over the D-Bus limit`);
  const data = Buffer.allocUnsafe(total);
  w.buf.copy(data, 0, 0, w.off);
  body.copy(data, w.off);
  return { data, fds };
}

// ---- reading ------------------------------------------------------------------

class Reader {
  pos = 0;
  constructor(readonly buf: Buffer, readonly le: boolean) {}
  align(a: number) {
    this.pos = Math.ceil(this.pos / a) * a;
  }
  need(n: number) {
    if (this.pos + n > this.buf.length) throw new Error("D-Bus message truncated");
  }
  u8() {
    this.need(1);
    return this.buf[this.pos++]!;
  }
  u32() {
    this.align(4);
    this.need(4);
    const v = this.le ? this.buf.readUInt32LE(this.pos) : this.buf.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  str() {
    const n = this.u32();
    this.need(n + 1);
    const s = this.buf.toString("utf8", this.pos, this.pos + n);
    this.pos += n + 1;
    return s;
  }
  sig() {
    const n = this.u8();
    this.need(n + 1);
    const s = this.buf.toString("latin1", this.pos, this.pos + n);
    this.pos += n + 1;
    return s;
  }
  basic(t: string, fds: number[]): any {
    const b = this.buf;
    switch (t) {
      case "s":
      case "o":
        return this.str();
      case "g":
        return this.sig();
      case "y":
        return this.u8();
      case "b":
        return this.u32() !== 0;
      case "n":
      case "q": {
        this.align(2);
        this.need(2);
        const v = t === "n" ? (this.le ? b.readInt16LE(this.pos) : b.readInt16BE(this.pos)) : this.le ? b.readUInt16LE(this.pos) : b.readUInt16BE(this.pos);
        this.pos += 2;
        return v;
      }
      case "i":
        return this.u32() | 0;
      case "u":
        return this.u32();
      case "h": {
        const i = this.u32();
        if (i >= fds.length) throw new Error("D-Bus message refers to a file descriptor it did not carry");
        return fds[i];
      }
      case "x":
      case "t":
      case "d": {
        this.align(8);
        this.need(8);
        const p = this.pos;
        this.pos += 8;
        if (t === "d") return this.le ? b.readDoubleLE(p) : b.readDoubleBE(p);
        const big = t === "x" ? (this.le ? b.readBigInt64LE(p) : b.readBigInt64BE(p)) : this.le ? b.readBigUInt64LE(p) : b.readBigUInt64BE(p);
        return Number.isSafeInteger(Number(big)) ? Number(big) : big;
      }
    }
    throw new Error(`not a basic D-Bus type: ${t}`);
  }
}

/**
 * Length of the message at the start of buf, or 0 when fewer than 16 bytes are
 * there to tell. Throws on a header no peer may send.
 */
export function messageLength(buf: Buffer, off = 0): number {
  if (buf.length - off < 16) return 0;
  const le = buf[off] === 0x6c;
  if (!le && buf[off] !== 0x42) throw new Error("D-Bus message with an unknown byte order");
  const bodyLen = le ? buf.readUInt32LE(off + 4) : buf.readUInt32BE(off + 4);
  const fieldsLen = le ? buf.readUInt32LE(off + 12) : buf.readUInt32BE(off + 12);
  const total = 16 + Math.ceil(fieldsLen / 8) * 8 + bodyLen;
  if (total > MAX_MESSAGE) throw new Error(`D-Bus message of ${total} bytes is over the limit`);
  return total;
}

/** The header of a message (the body is not read): for messages too large to keep. */
export function decodeHeader(buf: Buffer): Message {
  // fds: the count is kept as placeholders so that the caller can drop that many.
  return decode(buf, (n) => new Array(n).fill(-1), true);
}

/** Decodes a whole message; takeFds hands over the fds its UNIX_FDS field counts. */
export function decode(buf: Buffer, takeFds: (n: number) => number[], headerOnly = false): Message {
  const le = buf[0] === 0x6c;
  const r = new Reader(buf, le);
  r.pos = 1;
  const type = r.u8();
  const flags = r.u8();
  r.u8(); // protocol version
  r.pos = 8;
  const serial = r.u32();
  const fieldsLen = r.u32();
  const end = 16 + fieldsLen;
  const m: Message = { type, flags, serial, signature: "", body: [], fds: [] };
  let nfds = 0;
  while (r.pos < end) {
    r.align(8);
    if (r.pos >= end) break;
    const code = r.u8();
    const t = r.sig();
    const v = r.basic(t, []);
    switch (code) {
      case FIELD.path: m.path = v; break;
      case FIELD.interface: m.interface = v; break;
      case FIELD.member: m.member = v; break;
      case FIELD.errorName: m.errorName = v; break;
      case FIELD.replySerial: m.replySerial = v; break;
      case FIELD.destination: m.destination = v; break;
      case FIELD.sender: m.sender = v; break;
      case FIELD.signature: m.signature = v; break;
      case FIELD.unixFds: nfds = v; break;
    }
  }
  m.fds = nfds ? takeFds(nfds) : [];
  const bodyStart = Math.ceil(end / 8) * 8;
  const sig = m.signature;
  if (!sig || headerOnly) return m;
  if (BASIC.test(sig)) {
    r.pos = bodyStart;
    const body = new Array(sig.length);
    for (let i = 0; i < sig.length; i++) body[i] = r.basic(sig[i]!, m.fds);
    m.body = body;
  } else {
    m.body = decodeBodyGeneric(buf.subarray(bodyStart), sig, le, m.fds);
  }
  return m;
}
