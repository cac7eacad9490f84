// The D-Bus wire format (the D-Bus specification, "Message Protocol"): headers and
// bodies, written and read here directly: basic types, arrays, dictionaries and
// variants (what the daemon's replies and every service call use). A body with a
// struct goes through generic.ts (dbus-next), loaded only when one is first met: it
// costs the process 11 MB of memory (docs/decisions.md, "The bus stack").

import { withoutFTL } from "../core/engine";

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

// Header field codes (the specification's HEADER_FIELD_*). Constants, not an object's
// properties: the build writes their values in place, where each property read would
// be a step of every message in the first calls after start.
const F_PATH = 1, F_INTERFACE = 2, F_MEMBER = 3, F_ERROR_NAME = 4, F_REPLY_SERIAL = 5, F_DESTINATION = 6, F_SENDER = 7, F_SIGNATURE = 8, F_UNIX_FDS = 9;
const BASIC = /^[sogybnqiuxtdh]*$/;

// ---- writing ------------------------------------------------------------------

interface Writer {
  value(node: TypeNode, v: any, fds: number[]): void;
}
class Writer {
  buf = Buffer.allocUnsafe(4096);
  /** buf.length, kept: a typed array's length is a slow property in the interpreter. */
  cap = 4096;
  off = 0;
  reset() {
    this.off = 0;
  }
  ensure(n: number) {
    if (this.off + n <= this.cap) return;
    const b = Buffer.allocUnsafe(Math.max(this.cap * 2, this.off + n + 1024));
    this.buf.copy(b, 0, 0, this.off);
    this.buf = b;
    this.cap = b.length;
  }
  align(a: number) {
    let pad = -this.off & (a - 1);
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
    // Aligned to 4 here (zeros), not by align(): this and the header's fields are
    // what every message writes, and each call is a step in the first calls after start.
    let off = this.off;
    const pad = -off & 3;
    this.ensure(pad + 4 + 3 * s.length + 1);
    const b = this.buf;
    for (let i = 0; i < pad; i++) b[off++] = 0;
    this.off = off;
    const at = off + 4;
    // The runtime encodes: in the first calls after start, a loop over the characters
    // runs in the interpreter at some 30 ns a character, the runtime's call costs
    // about 60 ns for a whole short string (and no more once compiled).
    const n = b.write(s, at, "utf8");
    b.writeUInt32LE(n, off);
    b[at + n] = 0;
    this.off = at + n + 1;
  }
  sig(s: string) {
    this.ensure(s.length + 2);
    const b = this.buf;
    b[this.off] = s.length;
    // A signature is ASCII: each character is its byte. Most are one letter.
    if (s.length === 1) b[this.off + 1] = s.charCodeAt(0);
    else b.write(s, this.off + 1, "latin1");
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

/** The variant type of header fields 1-9 (path, interface, member, error name, reply serial, destination, sender, signature, fd count). */
const FIELD_TYPES = "osssussgu";

/** Encodes a message: the bytes and the fds that travel with them. */
export function encode(m: Outgoing, serial: number): { data: Buffer; fds: number[] } {
  const fds = m.fds ? m.fds.slice() : [];
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
  // The fixed header: 'l' (little-endian), type, flags, version 1, body length,
  // serial, and the fields' length (written once they are). The scratch writer is
  // never smaller than its first 4096 bytes.
  w.reset();
  const h = w.buf;
  h[0] = 0x6c;
  h[1] = m.type;
  h[2] = m.flags ?? 0;
  h[3] = 1;
  h.writeUInt32LE(bodyLen >>> 0, 4);
  h.writeUInt32LE(serial >>> 0, 8);
  // The fields, each aligned to 8 (zeros): its code, its variant's one-letter
  // signature, its value (a string or object path, a signature, or a `u`, aligned
  // already at 8k + 4). Written in place in one loop, not a call each: in the first
  // calls after start the code runs in the interpreter, where each call is a cost and
  // counts toward the tier-up whose compile stalls a call (docs/performance.md, the
  // cold path); strings are encoded by the runtime, some 25 times faster there than
  // a loop over their characters.
  let b = h;
  let off = 16;
  // Field i + 1's value (codes 1-9 in order), undefined when the message has none.
  const values = [m.path, m.interface, m.member, m.errorName, m.replySerial, m.destination, m.sender, sig || undefined, fds.length || undefined];
  for (let i = 0; i < 9; i++) {
    const v = values[i];
    if (v === undefined) continue;
    const t = FIELD_TYPES.charCodeAt(i);
    const str = t === 0x75 /* u */ ? "" : String(v);
    // Room for the padding, code and signature, a length, 3 bytes a character, a nul.
    if (off + 16 + 3 * str.length > w.cap) {
      w.off = off;
      w.ensure(16 + 3 * str.length);
      b = w.buf;
    }
    while (off & 7) b[off++] = 0;
    b[off] = i + 1;
    b[off + 1] = 1;
    b[off + 2] = t;
    b[off + 3] = 0;
    off += 4;
    if (t === 0x75 /* u */) {
      b.writeUInt32LE(Number(v) >>> 0, off);
      off += 4;
    } else if (t === 0x67 /* g */) {
      b[off] = str.length;
      b.write(str, off + 1, "latin1");
      b[off + 1 + str.length] = 0;
      off += str.length + 2;
    } else {
      const n = b.write(str, off + 4, "utf8");
      b.writeUInt32LE(n, off);
      b[off + 4 + n] = 0;
      off += 4 + n + 1;
    }
  }
  b.writeUInt32LE(off - 16, 12);
  w.off = off;
  w.align(8);
  const total = w.off + bodyLen;
  if (total > MAX_MESSAGE) throw new Error(`message of ${total} bytes is over the D-Bus limit`);
  const data = Buffer.allocUnsafe(total);
  w.buf.copy(data, 0, 0, w.off);
  body.copy(data, w.off, 0, bodyLen);
  return { data, fds };
}

// ---- reading ------------------------------------------------------------------

/**
 * The header strings decoded last, one per slot, and their bytes (decode):
 * eight slots for each field code (code & 15), so a message's own fields (its path,
 * interface, member, destination, sender) never take each other's slot.
 */
const HEADER_SLOTS = 128;
const headerStrings: (string | undefined)[] = new Array(HEADER_SLOTS).fill(undefined);
const headerBytes: (Buffer | undefined)[] = new Array(HEADER_SLOTS).fill(undefined);
const headerLengths = new Int32Array(HEADER_SLOTS).fill(-1);
const truncated = () => new Error("D-Bus message truncated");

class Reader {
  pos = 0;
  /**
   * buf.length, read once: a typed array's length is a slow property in the
   * interpreter the first calls after start run in (about 0.2 us a read).
   */
  readonly len: number;
  constructor(readonly buf: Buffer, readonly le: boolean) {
    this.len = buf.length;
  }
  align(a: number) {
    this.pos = (this.pos + a - 1) & -a;
  }
  need(n: number) {
    if (this.pos + n > this.len) throw truncated();
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
  /** A string: its length (aligned to 4), its bytes and a nul. */
  str() {
    const b = this.buf;
    const at = (this.pos + 3) & -4;
    if (at + 4 > this.len) throw truncated();
    const n = this.le ? b.readUInt32LE(at) : b.readUInt32BE(at);
    const p = at + 4;
    if (p + n + 1 > this.len) throw truncated();
    this.pos = p + n + 1;
    return b.toString("utf8", p, p + n);
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
 * Length of the message at off in buf (size: buf's length, when the caller has it), or
 * 0 when fewer than 16 bytes are there to tell. Throws on a header no peer may send.
 */
export function messageLength(buf: Buffer, off = 0, size = buf.length): number {
  if (size - off < 16) return 0;
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
  // The fixed header (byte order, type, flags, version, body length, serial, fields'
  // length) and each field's code and one-letter signature are read here byte by
  // byte, as encode writes them.
  const le = buf[0] === 0x6c;
  const len = buf.length;
  if (len < 16) throw truncated();
  const type = buf[1]!;
  const flags = buf[2]!;
  const serial = le ? buf.readUInt32LE(8) : buf.readUInt32BE(8);
  const fieldsLen = le ? buf.readUInt32LE(12) : buf.readUInt32BE(12);
  const end = 16 + fieldsLen;
  const r = new Reader(buf, le);
  r.pos = 16;
  const m: Message = { type, flags, serial, signature: "", body: [], fds: [] };
  let nfds = 0;
  while (r.pos < end) {
    const p = (r.pos + 7) & -8;
    r.pos = p;
    if (p >= end) break;
    if (p + 2 > len) throw truncated();
    const code = buf[p]!;
    // The variant's signature: one letter (its byte, tc) for every field the
    // specification knows; anything else is read as a signature.
    let tc = 0;
    let t = "";
    if (buf[p + 1] === 1) {
      if (p + 4 > len) throw truncated();
      tc = buf[p + 2]!;
      r.pos = p + 4;
    } else {
      r.pos = p + 1;
      t = r.sig();
    }
    let v: any;
    if (tc === 0x73 /* s */ || tc === 0x6f /* o */) {
      // A string, read here and not by a call (as encode writes it, above). The same
      // few names (path, interface, member, the peers) come in message after message,
      // so the one decoded last in the string's slot is handed back when its bytes are
      // these, instead of a new string decoded and kept (docs/performance.md, warm
      // calls); the runtime compares them.
      const at = (r.pos + 3) & -4;
      if (at + 4 > len) throw truncated();
      const n = le ? buf.readUInt32LE(at) : buf.readUInt32BE(at);
      const q = at + 4;
      if (q + n + 1 > len) throw truncated();
      r.pos = q + n + 1;
      if (n === 0) v = "";
      else {
        const slot = ((code & 15) << 3) | ((n + buf[q + n - 1]!) & 7);
        if (headerLengths[slot] === n && buf.compare(headerBytes[slot]!, 0, n, q, q + n) === 0) v = headerStrings[slot]!;
        else {
          v = buf.toString("utf8", q, q + n);
          // The same bytes always decode to the same string (invalid UTF-8 included).
          headerStrings[slot] = v;
          headerBytes[slot] = Buffer.from(buf.subarray(q, q + n));
          headerLengths[slot] = n;
        }
      }
    } else v = r.basic(tc ? String.fromCharCode(tc) : t, []);
    switch (code) {
      case F_PATH: m.path = v; break;
      case F_INTERFACE: m.interface = v; break;
      case F_MEMBER: m.member = v; break;
      case F_ERROR_NAME: m.errorName = v; break;
      case F_REPLY_SERIAL: m.replySerial = v; break;
      case F_DESTINATION: m.destination = v; break;
      case F_SENDER: m.sender = v; break;
      case F_SIGNATURE: m.signature = v; break;
      case F_UNIX_FDS: nfds = v; break;
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

// The per-call path stops at the DFG tier (core/engine.ts, withoutFTL).
withoutFTL(encode, decode, messageLength, Reader.prototype, Writer.prototype);
