// The D-Bus wire format (the D-Bus specification, "Message Protocol"): headers and
// bodies, written and read here directly: basic types, arrays, dictionaries and
// variants (what the daemon's replies and every service call use). A body with a
// struct goes through generic.ts (dbus-next), loaded only when one is first met: it
// costs the process 11 MB of memory (docs/decisions.md, "The bus stack").

/** A variant value (`v`): its signature and value. */
export class Variant<T = unknown> {
  constructor(readonly signature: string, readonly value: T) {}
}

let genericModule: typeof import("./generic") | undefined;
function generic(): typeof import("./generic") {
  return (genericModule ??= require("./generic") as typeof import("./generic"));
}

interface TypeNode {
  t: string;
  child?: TypeNode[];
}
const sigCache = new Map<string, TypeNode[]>();

/** A signature as a tree (`a{sv}` -> [{t:"a", child:[{t:"{", child:[s, v]}]}]). */
export function parseSignature(sig: string): TypeNode[] {
  let tree = sigCache.get(sig);
  if (tree) return tree;
  let i = 0;
  const one = (): TypeNode => {
    const c = sig[i++];
    if (c === undefined) throw new Error(`incomplete D-Bus signature '${sig}'`);
    if (c === "a") return { t: "a", child: [one()] };
    if (c === "(" || c === "{") {
      const close = c === "(" ? ")" : "}";
      const child: TypeNode[] = [];
      while (sig[i] !== close) {
        if (i >= sig.length) throw new Error(`unbalanced D-Bus signature '${sig}'`);
        child.push(one());
      }
      i++;
      return { t: c, child };
    }
    if (!"sogybnqiuxtdhv".includes(c)) throw new Error(`not a D-Bus type '${c}' in '${sig}'`);
    return { t: c };
  };
  tree = [];
  while (i < sig.length) tree.push(one());
  if (sigCache.size < 256) sigCache.set(sig, tree);
  return tree;
}

const ALIGN: Record<string, number> = { y: 1, g: 1, v: 1, n: 2, q: 2, b: 4, i: 4, u: 4, h: 4, s: 4, o: 4, a: 4, x: 8, t: 8, d: 8, "(": 8, "{": 8 };
const hasStruct = (sig: string) => sig.includes("(");

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

/** Strings up to this long are written by Writer.str's own loop while they are ASCII. */
const SHORT_STRING = 128;

interface Writer {
  value(node: TypeNode, v: any, fds: number[]): void;
}
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
    let pad = (a - (this.off % a)) % a;
    if (!pad) return;
    this.ensure(pad);
    while (pad--) this.buf[this.off++] = 0;
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
    const b = this.buf;
    const at = this.off + 4;
    // A short string is copied here while it is ASCII (names, most payloads): a call
    // into the runtime costs more than the loop; the rest is encoded by the runtime.
    let n = 0;
    if (s.length <= SHORT_STRING) {
      for (; n < s.length; n++) {
        const c = s.charCodeAt(n);
        if (c > 0x7f) break;
        b[at + n] = c;
      }
    }
    if (n < s.length) n = b.write(s, at, "utf8");
    b.writeUInt32LE(n, this.off);
    b[at + n] = 0;
    this.off = at + n + 1;
  }
  sig(s: string) {
    this.ensure(s.length + 2);
    const b = this.buf;
    b[this.off] = s.length;
    // Each character as its byte, as a latin1 write would (a signature is ASCII).
    for (let i = 0; i < s.length; i++) b[this.off + 1 + i] = s.charCodeAt(i);
    b[this.off + 1 + s.length] = 0;
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

Writer.prototype.value = function (this: Writer, node: TypeNode, v: any, fds: number[]): void {
  switch (node.t) {
    case "a": {
      const el = node.child![0]!;
      this.align(4);
      const lenAt = this.off;
      this.u32(0);
      this.align(ALIGN[el.t]!);
      const start = this.off;
      if (el.t === "y" && v instanceof Uint8Array) {
        this.ensure(v.length);
        this.buf.set(v, this.off);
        this.off += v.length;
      } else if (el.t === "{") {
        for (const [k, val] of v instanceof Map ? v : Object.entries(v)) {
          this.align(8);
          this.value(el.child![0]!, k, fds);
          this.value(el.child![1]!, val, fds);
        }
      } else for (const item of v as unknown[]) this.value(el, item, fds);
      this.buf.writeUInt32LE(this.off - start, lenAt);
      return;
    }
    case "v": {
      const variant = v as Variant;
      if (!(variant instanceof Variant) && !(variant && typeof variant === "object" && "signature" in variant)) throw new Error("expected a Variant for D-Bus type 'v'");
      this.sig(variant.signature);
      const [inner] = parseSignature(variant.signature);
      return this.value(inner!, variant.value, fds);
    }
    case "(":
    case "{":
      throw new Error("structs are written by generic.ts");
    default:
      return this.basic(node.t, v, fds);
  }
};

function variantsWithStructs(values: unknown[]): boolean {
  const visit = (v: unknown, depth: number): boolean => {
    if (depth > 32 || v === null || typeof v !== "object") return false;
    if (v instanceof Variant || ("signature" in v && "value" in v && typeof (v as Variant).signature === "string")) {
      return hasStruct((v as Variant).signature) || visit((v as Variant).value, depth + 1);
    }
    if (v instanceof Uint8Array) return false;
    return Object.values(v).some((x) => visit(x, depth + 1));
  };
  return values.some((v) => visit(v, 0));
}

/** The scratch writers of encode: the header's and the body's. */
const w = new Writer();
const wb = new Writer();

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
  // Body first, into its scratch writer, so its length and fd count are known; then
  // the header into the other, and both copied once into the message.
  wb.reset();
  const body0 = m.body ?? [];
  // A body with structs is made by generic.ts as a Buffer of its own.
  let structBody: Buffer | undefined;
  if (BASIC.test(sig)) {
    if (body0.length !== sig.length) throw new Error(`signature '${sig}' wants ${sig.length} values, got ${body0.length}`);
    for (let i = 0; i < sig.length; i++) wb.basic(sig[i]!, body0[i], fds);
  } else if (!hasStruct(sig) && !variantsWithStructs(body0)) {
    const tree = parseSignature(sig);
    if (body0.length !== tree.length) throw new Error(`signature '${sig}' wants ${tree.length} values, got ${body0.length}`);
    tree.forEach((node, i) => wb.value(node, body0[i], fds));
  } else {
    structBody = generic().encodeBodyGeneric(sig, body0, fds);
  }
  const body = structBody ?? wb.buf;
  const bodyLen = structBody ? structBody.length : wb.off;
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
  body.copy(data, w.off, 0, bodyLen);
  return { data, fds };
}

// ---- reading ------------------------------------------------------------------

/** The header strings decoded last, one per slot (Reader.headerStr). */
const HEADER_SLOTS = 64;
const headerStrings: (string | undefined)[] = new Array(HEADER_SLOTS).fill(undefined);

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
    // A header field's variant and most bodies have a one-letter signature: the
    // engine keeps every one-character string, so nothing is decoded or made.
    const s = n === 1 ? String.fromCharCode(this.buf[this.pos]!) : this.buf.toString("latin1", this.pos, this.pos + n);
    this.pos += n + 1;
    return s;
  }
  /**
   * A header field's string. The same few names (path, interface, member, the peers)
   * come in message after message, so the one decoded last in the string's slot is
   * handed back when the bytes are its own, instead of a new string decoded (a call
   * into the runtime each: docs/performance.md, warm calls).
   */
  headerStr(code: number) {
    const n = this.u32();
    this.need(n + 1);
    const b = this.buf;
    const p = this.pos;
    this.pos += n + 1;
    if (n === 0) return "";
    const slot = (code * 31 + n * 7 + b[p]! + b[p + n - 1]! * 3 + b[p + (n >> 1)]! * 5) & (HEADER_SLOTS - 1);
    const last = headerStrings[slot];
    if (last !== undefined && last.length === n) {
      let i = 0;
      while (i < n && last.charCodeAt(i) === b[p + i]) i++;
      if (i === n) return last;
    }
    const s = b.toString("utf8", p, p + n);
    // Kept only when each byte is one character (ASCII; an invalid byte becomes U+FFFD,
    // which no byte equals): so a string handed back is always what its bytes decode to.
    if (s.length === n) headerStrings[slot] = s;
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

interface Reader {
  value(node: TypeNode, fds: number[]): any;
}
Reader.prototype.value = function (this: Reader, node: TypeNode, fds: number[]): any {
  switch (node.t) {
    case "a": {
      const len = this.u32();
      const el = node.child![0]!;
      this.align(ALIGN[el.t]!);
      const end = this.pos + len;
      this.need(len);
      if (el.t === "y") {
        const out = Buffer.from(this.buf.subarray(this.pos, end));
        this.pos = end;
        return out;
      }
      if (el.t === "{") {
        const out: Record<string, unknown> = {};
        while (this.pos < end) {
          this.align(8);
          const k = this.value(el.child![0]!, fds);
          out[String(k)] = this.value(el.child![1]!, fds);
        }
        return out;
      }
      const out: unknown[] = [];
      while (this.pos < end) out.push(this.value(el, fds));
      return out;
    }
    case "v": {
      const sig = this.sig();
      const [inner] = parseSignature(sig);
      return new Variant(sig, this.value(inner!, fds));
    }
    case "(":
    case "{":
      // Only inside a variant (a top-level struct body goes to generic.ts).
      this.align(8);
      return node.child!.map((c) => this.value(c, fds));
    default:
      return this.basic(node.t, fds);
  }
};

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
    const v = t === "s" || t === "o" ? r.headerStr(code) : r.basic(t, []);
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
  } else if (!hasStruct(sig)) {
    r.pos = bodyStart;
    m.body = parseSignature(sig).map((node) => r.value(node, m.fds));
  } else {
    m.body = generic().decodeBodyGeneric(buf.subarray(bodyStart), sig, le, m.fds);
  }
  return m;
}
