// One D-Bus connection: an AF_UNIX socket (src/ffi/socket.ts) watched by the
// platform's event source (src/ffi/loop.ts), the SASL EXTERNAL handshake, framing,
// the serial -> pending call table, and a non-blocking write queue (a peer that
// stalls fills our queue, never the main thread). Messages are encoded and decoded
// by codec.ts.
import { connectUnix, trySend, shutdownSocket, Receiver } from "../ffi/socket";
import { watch, setNonBlocking, type Watch } from "../ffi/loop";
import { libc } from "../ffi/libc";
import { withoutFTL } from "../core/engine";
import { decode, decodeHeader, encode, messageLength, MAX_MESSAGE, METHOD_CALL, METHOD_RETURN, ERROR, SIGNAL, NO_REPLY_EXPECTED, type Message, type Outgoing } from "./codec";

export type { Message, Outgoing } from "./codec";
export { METHOD_CALL, METHOD_RETURN, ERROR, SIGNAL, NO_REPLY_EXPECTED } from "./codec";

export const SYSTEM_BUS_ADDRESS = "unix:path=/run/dbus/system_bus_socket";
export const DBUS = { destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus" };

/** Resolves "system", "session" or an address to a D-Bus address string. */
export function resolveBusAddress(spec: string | undefined): string {
  const s = spec ?? process.env.DEVSERVICES_BUS ?? "system";
  if (s === "system") return process.env.DBUS_SYSTEM_BUS_ADDRESS ?? SYSTEM_BUS_ADDRESS;
  if (s === "session") {
    const a = process.env.DBUS_SESSION_BUS_ADDRESS;
    if (!a) throw new Error("DBUS_SESSION_BUS_ADDRESS is not set");
    return a;
  }
  return s;
}

export function parseAddress(address: string): { path: string; abstract: boolean } {
  for (const entry of address.split(";")) {
    const [family, rest = ""] = entry.split(/:(.*)/s);
    if (family !== "unix") continue;
    const params = Object.fromEntries(
      rest.split(",").map((kv) => {
        const i = kv.indexOf("=");
        return [kv.slice(0, i), decodeURIComponent(kv.slice(i + 1))];
      }),
    );
    if (params.path) return { path: params.path, abstract: false };
    if (params.abstract) return { path: params.abstract, abstract: true };
  }
  throw new Error(`unsupported D-Bus address (only unix:path= and unix:abstract= are supported): ${address}`);
}

/** A D-Bus error reply, or a call that could not complete (NoReply, Disconnected). */
export class BusError extends Error {
  constructor(readonly name: string, message: string) {
    super(message);
  }
}

interface Pending {
  resolve: (m: Message) => void;
  reject: (e: Error) => void;
  timer?: ReturnType<typeof setTimeout>;
}

/** Most bytes one readable callback takes before letting other fds have their turn. */
const READ_BUDGET = 1 << 20;
/** Queued bytes in one tick past which they are written at once, not at the end of the tick. */
const EARLY_FLUSH = 16 << 10;
/** Messages queued behind one another are joined into writes of up to this many bytes. */
const COALESCE = 1 << 18;
const EMPTY = Buffer.alloc(0);
const RECV_SIZE = 65536;

export class Connection {
  uniqueName = "";
  /** True once the daemon agreed to fd passing on this connection. */
  unixFd = false;
  isClosed = false;
  /** Method calls addressed to us. */
  onCall: (m: Message) => void = () => {};
  private signalListeners = new Set<(m: Message) => void>();
  private closeListeners: (() => void)[] = [];
  readonly closed: Promise<void>;
  private resolveClosed!: () => void;

  private readonly fd: number;
  /** Poll transport: the event source's watch and recvmsg (fds arrive with the bytes). */
  private w?: Watch;
  private rx?: Receiver;
  /** Native transport: Bun's own socket reads the fd (no fds can be received). */
  private native?: { write(d: Uint8Array): number; flush(): void; terminate(): void };
  /** Whether this connection can receive fds (poll transport). */
  readonly receivesFds: boolean;
  private inbuf: Buffer = EMPTY;
  /** Received bytes not parsed yet, and how many the next message needs in all. */
  private chunks: Buffer[] = [];
  private buffered = 0;
  private need = 0;
  /** An oversized message being dropped: what is left of it, and its header. */
  private skipping?: { left: number; message: Message };
  /** Largest message read whole; a larger one is delivered as its header with `oversized`. */
  private maxIncoming = MAX_MESSAGE;
  private fdq: number[] = [];
  /** Messages to send, each with its length (a Buffer's length is a slow property in the interpreter). */
  private out: { data: Buffer; size: number; fds: number[]; owned: boolean }[] = [];
  /** Bytes queued since the last flush began. */
  private outBytes = 0;
  private outOff = 0;
  private flushQueued = false;
  private serial = 0;
  private pending = new Map<number, Pending>();
  /** The daemon's answers to the handshake's lines, read until the last one expected. */
  private auth?: { lines: string[]; expect: number; done: () => void };
  private authenticated = false;

  private constructor(address: string, receivesFds: boolean) {
    this.closed = new Promise((r) => (this.resolveClosed = r));
    const { path, abstract } = parseAddress(address);
    this.fd = connectUnix(path, abstract);
    setNonBlocking(this.fd);
    this.receivesFds = receivesFds;
    if (receivesFds) {
      this.rx = new Receiver(this.fd, RECV_SIZE);
      this.w = watch(this.fd, { readable: () => this.onReadable(), writable: () => this.flush() });
    }
  }

  private async attachNative(): Promise<void> {
    const sock: any = await Bun.connect({
      fd: this.fd,
      socket: {
        // Bun hands each read over as a Buffer (the socket's default binaryType): used as
        // it is, since reading its .buffer would make the runtime materialise an
        // ArrayBuffer for every read (docs/performance.md, warm calls).
        data: (_s: unknown, chunk: Buffer) => this.onData(chunk, []),
        drain: () => this.flush(),
        close: () => this.close(),
        end: () => this.close(),
        error: () => this.close(),
      },
    } as any);
    this.native = sock;
  }

  /**
   * Connects, authenticates and says Hello; resolves once the unique name is known.
   * `receiveFds: false` lets Bun's own event loop read the socket (the fastest path;
   * fds can still be sent): the connection that hosts services uses it, since no
   * method takes an fd. Clients, which receive fds (getFd, getPollingFd), read with
   * recvmsg on the platform's event source.
   */
  static async open(
    address: string,
    opts: { negotiateUnixFd?: boolean; timeoutMs?: number; receiveFds?: boolean; maxIncoming?: number } = {},
  ): Promise<Connection> {
    const c = new Connection(address, opts.receiveFds ?? true);
    if (opts.maxIncoming) c.maxIncoming = opts.maxIncoming;
    if (!c.receivesFds) await c.attachNative();
    const ms = opts.timeoutMs ?? 10000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        c.handshake(opts.negotiateUnixFd ?? true),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer from the bus at ${address} within ${ms} ms`)), ms);
        }),
      ]);
    } catch (e) {
      c.close();
      throw e;
    } finally {
      clearTimeout(timer);
    }
    return c;
  }

  /**
   * The whole exchange goes out in one write, as sd-bus sends it: AUTH EXTERNAL, then
   * NEGOTIATE_UNIX_FD, BEGIN and Hello without waiting for the answers (one round trip
   * to the daemon instead of three). The daemon's lines are read as they come; the
   * bytes after the last one are messages. A refused AUTH ends the connection: what
   * was sent after it is never taken as authenticated (the daemon answers ERROR to it).
   */
  private async handshake(negotiateUnixFd: boolean): Promise<void> {
    const uid = Buffer.from(String(libc.getuid())).toString("hex");
    const lines: string[] = [];
    const answered = new Promise<void>((done) => (this.auth = { lines, expect: negotiateUnixFd ? 2 : 1, done }));
    this.writeRaw(Buffer.from(`\0AUTH EXTERNAL ${uid}\r\n${negotiateUnixFd ? "NEGOTIATE_UNIX_FD\r\n" : ""}BEGIN\r\n`, "latin1"));
    const hello = this.call({ ...DBUS, type: METHOD_CALL, member: "Hello", signature: "", body: [] });
    // A refusal closes the connection, which fails the Hello too: the refusal is what is told.
    hello.catch(() => {});
    await Promise.race([answered, this.closed]);
    if (lines.length && !lines[0]!.startsWith("OK ")) throw new Error(`the bus refused authentication: ${lines[0]}`);
    // Closed before every answer came (after OK, too).
    if (!this.authenticated) throw new Error("the bus closed the connection during authentication");
    if (negotiateUnixFd) this.unixFd = lines[1]!.startsWith("AGREE_UNIX_FD");
    const [name] = (await hello).body;
    this.uniqueName = name;
  }

  newSerial(): number {
    this.serial = (this.serial + 1) >>> 0 || 1;
    return this.serial;
  }

  /**
   * Queues a message; returns its serial. Throws when the connection is closed.
   * With ownFds the connection closes the message's fds once they are sent.
   */
  send(m: Outgoing, serial = this.newSerial(), ownFds = false): number {
    if (this.isClosed) throw new BusError("org.freedesktop.DBus.Error.Disconnected", "the bus connection is closed");
    const { data, fds } = encode(m, serial);
    if (fds.length && !this.unixFd) {
      // The daemon drops a connection that sends fds it did not agree to carry.
      throw new Error("file descriptor passing was not negotiated on this connection");
    }
    this.writeRaw(data, fds, ownFds);
    return serial;
  }

  /** Sends a method call and resolves with its reply; a D-Bus error rejects (BusError). */
  call(m: Outgoing, timeoutMs = 25000, serial = this.newSerial(), onReply?: (reply: Message) => void): Promise<Message> {
    return new Promise((resolve, reject) => {
      // onReply runs as the reply is read, before any message behind it is delivered.
      const p: Pending = { resolve: onReply
          ? (r) => {
              try {
                onReply(r);
              } finally {
                resolve(r);
              }
            }
          : resolve,
        reject,
      };
      if (timeoutMs > 0 && Number.isFinite(timeoutMs)) {
        p.timer = setTimeout(() => {
          this.pending.delete(serial);
          reject(new BusError("org.freedesktop.DBus.Error.NoReply", `no reply from ${m.destination} within ${timeoutMs} ms`));
        }, timeoutMs);
      }
      this.pending.set(serial, p);
      try {
        this.send({ ...m, type: METHOD_CALL }, serial);
      } catch (e) {
        this.pending.delete(serial);
        clearTimeout(p.timer);
        reject(e instanceof BusError ? e : new BusError("org.freedesktop.DBus.Error.Failed", String((e as Error).message)));
      }
    });
  }

  private matches = new Map<string, { refs: number; added: Promise<void> }>();

  /**
   * Adds a match rule, reference-counted: the daemon sees one AddMatch per distinct
   * rule and one RemoveMatch when its last user releases it. A refused AddMatch
   * throws (the system bus limits the rules of a connection).
   */
  async addMatch(rule: string): Promise<() => Promise<void>> {
    let m = this.matches.get(rule);
    if (m) m.refs++;
    else {
      const added = this.call({ ...DBUS, type: METHOD_CALL, member: "AddMatch", signature: "s", body: [rule] }).then(() => {});
      m = { refs: 1, added };
      this.matches.set(rule, m);
      added.catch(() => this.matches.get(rule) === m && this.matches.delete(rule));
    }
    await m.added;
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      const cur = this.matches.get(rule);
      if (!cur || --cur.refs > 0) return;
      this.matches.delete(rule);
      if (!this.isClosed) await this.call({ ...DBUS, type: METHOD_CALL, member: "RemoveMatch", signature: "s", body: [rule] });
    };
  }

  /** Distinct match rules this connection has added (tests check none leak). */
  get matchRules(): number {
    return this.matches.size;
  }

  onSignal(fn: (m: Message) => void): () => void {
    this.signalListeners.add(fn);
    return () => this.signalListeners.delete(fn);
  }

  onClose(fn: () => void): void {
    if (this.isClosed) fn();
    else this.closeListeners.push(fn);
  }

  /** Bytes queued and not yet taken by the socket. */
  get queuedBytes(): number {
    let n = -this.outOff;
    for (const e of this.out) n += e.data.length;
    return n;
  }

  /** Calls waiting for their reply (tests check nothing leaks). */
  get pendingCalls(): number {
    return this.pending.size;
  }

  // ---- writing ------------------------------------------------------------------

  private writeRaw(data: Buffer, fds: number[] = [], ownFds = false): void {
    const size = data.length;
    this.out.push({ data, size, fds, owned: ownFds });
    this.outBytes += size;
    if (this.outBytes >= EARLY_FLUSH && this.outOff === 0) {
      // A long run of messages in one tick (a change pushed to many subscribers):
      // what is made so far goes out now, so the daemon routes it while we make the rest.
      this.flush();
      return;
    }
    if (!this.flushQueued) {
      this.flushQueued = true;
      // One write per tick: replies and signals made in the same tick go out together.
      queueMicrotask(this.queuedFlush);
    }
  }

  private readonly queuedFlush = () => {
    this.flushQueued = false;
    this.flush();
  };

  private flush(): void {
    this.outBytes = 0;
    while (this.out.length && !this.isClosed) {
      const head = this.out[0]!;
      if (this.outOff === 0 && !head.fds.length && head.size < COALESCE && this.out.length > 1 && !this.out[1]!.fds.length) {
        // Coalesce the messages without fds that follow into one buffer, one sendmsg.
        // The head is under COALESCE and the next has no fds, so at least two merge:
        // the queue gets shorter on every pass (a head already that large is sent as
        // it is).
        let k = 1;
        let size = head.size;
        while (k < this.out.length && !this.out[k]!.fds.length && size < COALESCE) size += this.out[k++]!.size;
        const data = Buffer.concat(this.out.slice(0, k).map((e) => e.data), size);
        this.out.splice(0, k, { data, size, fds: [], owned: false });
      }
      const entry = this.out[0]!;
      const chunk = this.outOff ? entry.data.subarray(this.outOff) : entry.data;
      const want = entry.size - this.outOff;
      let n: number;
      try {
        n = this.transmit(chunk, this.outOff ? [] : entry.fds);
      } catch {
        this.close();
        return;
      }
      if (n === 0) {
        // The socket is full: the event source (or Bun's drain) calls again once it
        // is writable. Never retried here.
        this.w?.want({ writable: true });
        return;
      }
      if (this.outOff === 0 && entry.owned) {
        // The kernel holds its own references to the fds now.
        for (const fd of entry.fds) libc.close(fd);
        entry.owned = false;
      }
      if (n < want) {
        this.outOff += n;
        this.w?.want({ writable: true });
        return;
      }
      this.out.shift();
      this.outOff = 0;
    }
    this.w?.want({ writable: false });
  }

  /** One non-blocking write: bytes taken, 0 when the socket is full. */
  private transmit(chunk: Buffer, fds: number[]): number {
    if (!this.native) return trySend(this.fd, chunk, fds);
    if (fds.length) {
      // Bun's socket keeps nothing of ours (our queue is empty before this entry);
      // its cork buffer is flushed so the fds' message keeps its place in the stream.
      this.native.flush();
      return trySend(this.fd, chunk, fds);
    }
    const n = this.native.write(chunk);
    if (n < 0) throw new Error("the bus connection is closed");
    return n;
  }

  // ---- reading ------------------------------------------------------------------

  private onReadable(): void {
    let budget = READ_BUDGET;
    while (budget > 0 && !this.isClosed) {
      let got: { data: Buffer; fds: number[] } | null;
      try {
        got = this.rx!.tryRecv();
      } catch (e) {
        if (process.env.DEBUG_BUS) console.error("recv failed", this.uniqueName, e);
        this.close();
        return;
      }
      if (!got) break;
      if (got.data.length === 0) {
        if (process.env.DEBUG_BUS) console.error("EOF on", this.uniqueName);
        this.close();
        return;
      }
      budget -= got.data.length;
      this.onData(got.data, got.fds);
      // A short read drained the socket: no second recvmsg just to hear EAGAIN
      // (the watch is level-triggered and reports whatever arrives later).
      if (got.data.length < RECV_SIZE) break;
    }
  }

  private onData(data: Buffer, fds: number[]): void {
    if (fds.length) this.fdq.push(...fds);
    if (this.skipping) {
      // The rest of an oversized message: dropped as it arrives, never buffered.
      const take = Math.min(this.skipping.left, data.length);
      this.skipping.left -= take;
      data = data.subarray(take);
      if (this.skipping.left > 0) return;
      const m = this.skipping.message;
      this.skipping = undefined;
      this.deliver(m);
      if (!data.length || this.isClosed) return;
    }
    this.chunks.push(data);
    this.buffered += data.length;
    // A large message arrives in many reads: join the pieces once it is whole.
    if (this.buffered < this.need) return;
    this.inbuf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
    this.chunks.length = 0;
    this.buffered = 0;
    if (!this.authenticated) this.readAuthLines();
    else this.parse();
  }

  private readAuthLines(): void {
    let buf = this.inbuf;
    this.inbuf = EMPTY;
    for (;;) {
      const i = buf.indexOf("\r\n");
      if (i < 0) return this.keep(Buffer.from(buf));
      const line = buf.toString("latin1", 0, i);
      buf = buf.subarray(i + 2);
      const auth = this.auth;
      if (!auth) return this.close();
      auth.lines.push(line);
      if (!line.startsWith("OK ") && auth.lines.length === 1) {
        // Refused: nothing after this is read.
        auth.done();
        return this.close();
      }
      if (auth.lines.length === auth.expect) {
        this.authenticated = true;
        this.auth = undefined;
        auth.done();
        this.inbuf = buf;
        return this.parse();
      }
    }
  }

  private keep(rest: Buffer): void {
    this.chunks = rest.length ? [rest] : [];
    this.buffered = rest.length;
  }

  private parse(): void {
    let off = 0;
    const buf = this.inbuf;
    // Read once: a Buffer's length is a slow property in the interpreter the first
    // calls after start run in.
    const size = buf.length;
    this.inbuf = EMPTY;
    this.need = 0;
    try {
      for (;;) {
        const len = messageLength(buf, off, size);
        if (!len) break;
        if (len > this.maxIncoming) {
          // Read the header, drop the body as it comes, and tell the receiver.
          const headLen = Math.min(len, 16 + Math.ceil(buf.readUInt32LE(off + 12) / 8) * 8);
          if (size - off < headLen) {
            this.need = headLen; // counted from the start of what is kept
            break;
          }
          const m = decodeHeader(buf.subarray(off, off + headLen));
          m.oversized = len;
          for (const fd of this.takeFds(m.fds.length)) libc.close(fd);
          m.fds = [];
          const have = Math.min(len, size - off);
          off += have;
          if (have < len) {
            this.skipping = { left: len - have, message: m };
            break;
          }
          this.deliver(m);
          if (this.isClosed) return;
          continue;
        }
        if (size - off < len) {
          this.need = len;
          break;
        }
        // Most reads hold one whole message: it is decoded as it came, with no view made.
        const m = decode(off === 0 && len === size ? buf : buf.subarray(off, off + len), this.take);
        off += len;
        this.deliver(m);
        if (this.isClosed) return;
      }
    } catch (e) {
      // A message we cannot frame: the stream is lost.
      console.error("bus: unreadable message, closing the connection:", e);
      this.close();
      return;
    }
    // What is left of a message is kept for the next read (nothing is, most reads).
    if (off < size) this.keep(Buffer.from(buf.subarray(off)));
  }

  /** takeFds for decode, made once. */
  private readonly take = (n: number) => this.takeFds(n);

  private takeFds(n: number): number[] {
    if (this.fdq.length < n) {
      // Only a connection read by recvmsg receives fds; a message whose fds were
      // dropped still parses, and its 'h' values fail (the server refuses any body but 's').
      const got = this.fdq.splice(0);
      return got;
    }
    return this.fdq.splice(0, n);
  }

  private deliver(m: Message): void {
    if (m.type === METHOD_RETURN || m.type === ERROR) {
      const p = this.pending.get(m.replySerial!);
      if (!p) {
        for (const fd of m.fds) libc.close(fd);
        return;
      }
      this.pending.delete(m.replySerial!);
      clearTimeout(p.timer);
      if (m.type === ERROR) p.reject(new BusError(m.errorName ?? "org.freedesktop.DBus.Error.Failed", String(m.body[0] ?? m.errorName)));
      else p.resolve(m);
    } else if (m.type === METHOD_CALL) {
      this.onCall(m);
    } else if (m.type === SIGNAL) {
      for (const fn of [...this.signalListeners]) {
        try {
          fn(m);
        } catch (e) {
          console.error("bus: a signal listener failed:", e);
        }
      }
    }
  }

  /** Closes the connection: pending calls fail at once, close listeners run. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    if (this.native) this.native.terminate(); // closes the fd
    else {
      this.w?.close();
      shutdownSocket(this.fd);
      libc.close(this.fd);
    }
    for (const fd of this.fdq.splice(0)) libc.close(fd);
    for (const e of this.out.splice(0)) if (e.owned) for (const fd of e.fds) libc.close(fd);
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new BusError("org.freedesktop.DBus.Error.Disconnected", "the bus connection is closed"));
    }
    this.pending.clear();
    for (const fn of this.closeListeners.splice(0)) {
      try {
        fn();
      } catch (e) {
        console.error("bus: a close listener failed:", e);
      }
    }
    this.resolveClosed();
  }
}

/** Opens a bus connection (authenticated, Hello answered). */
export function connectBus(
  address: string,
  opts: { negotiateUnixFd?: boolean; timeoutMs?: number; receiveFds?: boolean; maxIncoming?: number } = {},
): Promise<Connection> {
  return Connection.open(address, opts);
}

export { NO_REPLY_EXPECTED as NO_REPLY };

// The per-call path stops at the DFG tier (core/engine.ts, withoutFTL).
withoutFTL(Connection.prototype);
