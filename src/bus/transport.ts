// The byte stream under a D-Bus connection: an AF_UNIX socket from src/ffi/socket.ts,
// written with sendmsg on this thread and read with recvmsg on a worker thread.
// It offers the small stream surface dbus-next's handshake and parser use
// (read(n), write(), 'readable'), plus the fds that arrived with the bytes.
import { EventEmitter } from "node:events";
import { connectUnix, sendAll, shutdownSocket } from "../ffi/socket";
import { libc, makePipe } from "../ffi/libc";

type Chunk = { buf: Buffer; fds: number[] };

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

/**
 * The reader worker's entry point. The compiled binary carries it as a second entry
 * point inside its own filesystem (scripts/build.ts), where a relative specifier finds
 * it; from source it sits beside this file.
 */
function readerWorkerUrl(): string {
  if (Bun.main.startsWith("/$bunfs/") || Bun.main.startsWith("B:/~BUN/")) return "./bus/reader-worker.ts"; // relative to the entry points' common root, src/
  return new URL("./reader-worker.ts", import.meta.url).href;
}

export class SocketStream extends EventEmitter {
  readonly fd: number;
  supportsUnixFd: boolean;
  writable = true;
  private chunks: Chunk[] = [];
  private buffered = 0;
  private pendingFds: number[] = [];
  private worker: Worker;
  private ended = false;

  constructor(address: string, negotiateUnixFd: boolean) {
    super();
    const { path, abstract } = parseAddress(address);
    this.fd = connectUnix(path, abstract);
    this.supportsUnixFd = negotiateUnixFd;
    const [rd, wr] = makePipe();
    this.worker = new Worker(readerWorkerUrl());
    this.worker.postMessage({ fd: this.fd, pipe: wr });
    void this.pump(rd);
    queueMicrotask(() => this.emit("connect"));
  }

  /** Reads the worker's frames from the pipe: [u32 length][u32 nfds][i32 fds][bytes]. */
  private async pump(rd: number) {
    let pending = Buffer.alloc(0);
    try {
      for await (const piece of Bun.file(rd).stream()) {
        pending = pending.length ? Buffer.concat([pending, piece]) : Buffer.from(piece);
        for (;;) {
          if (pending.length < 8) break;
          const len = pending.readUInt32LE(0);
          const nfds = pending.readUInt32LE(4);
          const head = 8 + 4 * nfds;
          if (pending.length < head + len) break;
          const fds: number[] = [];
          for (let i = 0; i < nfds; i++) fds.push(pending.readInt32LE(8 + 4 * i));
          const buf = Buffer.from(pending.subarray(head, head + len));
          pending = pending.subarray(head + len);
          this.chunks.push({ buf, fds });
          this.buffered += buf.length;
        }
        if (this.buffered) this.emit("readable");
      }
      this.finish();
    } catch (e) {
      this.finish(e as Error);
    } finally {
      libc.close(rd);
    }
  }

  private finish(err?: Error) {
    if (this.ended) return;
    this.ended = true;
    this.writable = false;
    this.worker.terminate();
    for (const c of this.chunks) for (const fd of c.fds) libc.close(fd);
    for (const fd of this.pendingFds) libc.close(fd);
    libc.close(this.fd);
    if (err) this.emit("error", err);
    this.emit("end");
    this.emit("close");
  }

  /**
   * Returns exactly n bytes or null. fds travel with the chunk they arrived in;
   * the kernel ends a read at the segment that carries them, so they belong to the
   * message whose bytes run through the end of that chunk.
   */
  read(n: number): Buffer | { data: Buffer; fds: number[] } | null {
    if (n > this.buffered) return null;
    const out = Buffer.allocUnsafe(n);
    let off = 0;
    while (off < n) {
      const c = this.chunks[0]!;
      const take = Math.min(n - off, c.buf.length);
      c.buf.copy(out, off, 0, take);
      off += take;
      if (take === c.buf.length) {
        this.chunks.shift();
        this.pendingFds.push(...c.fds);
      } else {
        c.buf = c.buf.subarray(take);
      }
    }
    this.buffered -= n;
    if (n > 16 && this.pendingFds.length) {
      const fds = this.pendingFds;
      this.pendingFds = [];
      return { data: out, fds };
    }
    return out;
  }

  get readableLength() {
    return this.buffered;
  }

  write(data: string | Buffer | { data: Buffer; fds: number[] }): boolean {
    if (!this.writable) throw new Error("D-Bus connection is closed");
    if (typeof data === "string") sendAll(this.fd, Buffer.from(data, "ascii"));
    else if (Buffer.isBuffer(data)) sendAll(this.fd, data);
    else sendAll(this.fd, data.data, data.fds);
    return true;
  }

  end() {
    if (this.ended) return;
    this.writable = false;
    // Wakes the reader's blocking recvmsg with end-of-stream; it then finishes.
    shutdownSocket(this.fd);
  }

  setNoDelay() {}
}
