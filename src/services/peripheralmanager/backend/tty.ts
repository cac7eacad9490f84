// A UART as the service drives it: a tty opened non-blocking, raw or canonical,
// read without waiting (what is there now), written through a queue that resumes on
// writability, and watched for input only while a polling fd wants to hear of it.
import * as termios from "../../../ffi/termios";
import { readAvailable, SysError, writeAvailable } from "../../../ffi/libc";
import { watch, type Watch } from "../../../ffi/loop";

import { EIO, ETIMEDOUT } from "../../../ffi/errno";

export class TtyPort {
  readonly fd: number;
  private input?: Watch;
  private output?: Watch;
  private writes: { data: Uint8Array; done: number; resolve: (n: number) => void; reject: (e: Error) => void; timer: ReturnType<typeof setTimeout> }[] = [];
  private closed = false;

  constructor(path: string, o: { canonical: boolean; baudrate: number }) {
    this.fd = termios.openTty(path);
    try {
      this.configure(o.canonical, o.baudrate);
    } catch (e) {
      termios.close(this.fd);
      throw e;
    }
  }

  /**
   * Raw, or canonical input (whole lines, erase and kill applied, no echo, no
   * signals); output is sent as given in both. Unread input is discarded.
   */
  configure(canonical: boolean, baudrate?: number): void {
    let t = termios.makeRaw(termios.getAttr(this.fd));
    if (canonical) t = termios.makeCanonical(t, { echo: false });
    t = { ...t, oflag: t.oflag & ~termios.OPOST, cflag: t.cflag | termios.CLOCAL | termios.CREAD };
    if (baudrate !== undefined) t = termios.setSpeed(t, baudrate);
    termios.setAttr(this.fd, t, true);
  }

  get baudrate(): number {
    return termios.outputSpeed(termios.getAttr(this.fd));
  }

  set baudrate(rate: number) {
    termios.setAttr(this.fd, termios.setSpeed(termios.getAttr(this.fd), rate));
  }

  /** What has arrived, up to max bytes; never waits. A hang-up (EIO, end of file) is an error. */
  read(max: number): Buffer {
    const parts: Buffer[] = [];
    let got = 0;
    const buf = Buffer.alloc(Math.min(max, 4096));
    while (got < max) {
      const b = readAvailable(this.fd, Math.min(buf.length, max - got), buf);
      if (b === null) break;
      if (b.length === 0) {
        if (got) break;
        throw new SysError("read: hang-up", EIO);
      }
      parts.push(Buffer.from(b));
      got += b.length;
    }
    this.input?.want({ readable: true });
    return Buffer.concat(parts);
  }

  /** Resolves with the byte count once the tty has taken all of data; rejects after timeoutMs. */
  write(data: Uint8Array, timeoutMs: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const w = {
        data, done: 0, resolve, reject,
        timer: setTimeout(() => {
          const i = this.writes.indexOf(w);
          if (i >= 0) this.writes.splice(i, 1);
          reject(new SysError(`write: ${w.done} of ${data.length} bytes taken`, ETIMEDOUT));
        }, timeoutMs),
      };
      this.writes.push(w);
      this.flush();
    });
  }

  private flush(): void {
    while (this.writes.length) {
      const w = this.writes[0]!;
      try {
        w.done += w.data.length ? writeAvailable(this.fd, w.data.subarray(w.done)) : 0;
      } catch (e) {
        this.writes.shift();
        clearTimeout(w.timer);
        w.reject(e as Error);
        continue;
      }
      if (w.done < w.data.length) {
        this.output ??= watch(this.fd, { writable: () => this.flush() }, { readable: false, writable: true });
        return;
      }
      this.writes.shift();
      clearTimeout(w.timer);
      w.resolve(w.data.length);
    }
    this.output?.close();
    this.output = undefined;
  }

  /**
   * Calls onInput when input is waiting, then stays quiet until the next read():
   * the data stays in the tty for read() to take.
   */
  notifyInput(onInput: () => void): void {
    if (this.input) return;
    const w: Watch = watch(this.fd, {
      readable: () => {
        w.want({ readable: false });
        onInput();
      },
    }, { ref: false });
    this.input = w;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.input?.close();
    this.output?.close();
    for (const w of this.writes.splice(0)) {
      clearTimeout(w.timer);
      w.reject(new SysError("write: interface closed", EIO));
    }
    termios.close(this.fd);
  }
}
