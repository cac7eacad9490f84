// A NOTIFY_SOCKET of the test's own, as systemd makes it: an AF_UNIX datagram socket
// (a path, or an abstract name given as "@name") with SO_PASSCRED, so that each
// notification arrives with its sender's pid (systemd's NotifyAccess=main checks it).
import { libc, check, checkAgain, closeFd, ptr } from "../../src/ffi/libc";
import { AF_UNIX, SOCK_CLOEXEC, SOL_SOCKET, MSG_DONTWAIT, CMSG_SPACE, MsgHdr, sockaddrUn } from "../../src/ffi/socket";
import { SOCK_DGRAM } from "../../src/ffi/sdnotify";

const SOCK_NONBLOCK = 0o4000;
const SO_PASSCRED = 16;
const SCM_CREDENTIALS = 2;

export interface Notification {
  /** The datagram's KEY=VALUE lines. */
  fields: Record<string, string>;
  pid: number;
  at: number;
}

export class NotifySocket {
  /** The value for NOTIFY_SOCKET. */
  readonly address: string;
  readonly received: Notification[] = [];
  private fd: number;
  private timer: ReturnType<typeof setInterval>;

  /** `name`: a filesystem path, or "@name" for an abstract socket. */
  constructor(name: string) {
    const abstract = name.startsWith("@");
    this.fd = check("socket", () => libc.socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    const { buf, len } = sockaddrUn(abstract ? name.slice(1) : name, abstract);
    check("bind", () => libc.bind(this.fd, ptr(buf), len));
    const one = Buffer.alloc(4);
    one.writeInt32LE(1);
    check("setsockopt(SO_PASSCRED)", () => libc.setsockopt(this.fd, SOL_SOCKET, SO_PASSCRED, ptr(one), 4));
    this.address = name;
    this.timer = setInterval(() => this.drain(), 10);
  }

  private drain() {
    for (;;) {
      const data = Buffer.alloc(4096);
      const msg = new MsgHdr([data], Buffer.alloc(CMSG_SPACE(12)));
      const n = checkAgain("recvmsg", () => libc.recvmsg(this.fd, msg.ptr, MSG_DONTWAIT));
      if (n === null) return;
      const cred = msg.cmsgs().find((c) => c.level === SOL_SOCKET && c.type === SCM_CREDENTIALS);
      const fields: Record<string, string> = {};
      for (const line of data.subarray(0, Number(n)).toString("utf8").split("\n")) {
        const eq = line.indexOf("=");
        if (eq > 0) fields[line.slice(0, eq)] = line.slice(eq + 1);
      }
      this.received.push({ fields, pid: cred ? cred.data.readInt32LE(0) : -1, at: performance.now() });
    }
  }

  /** Waits for a notification carrying KEY (e.g. "READY"). */
  async next(key: string, timeoutMs = 15000, after = 0): Promise<Notification> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      this.drain();
      const n = this.received.slice(after).find((r) => key in r.fields);
      if (n) return n;
      if (Date.now() > end) throw new Error(`no ${key}= on ${this.address} within ${timeoutMs} ms; got ${JSON.stringify(this.received.map((r) => r.fields))}`);
      await Bun.sleep(10);
    }
  }

  close() {
    clearInterval(this.timer);
    closeFd(this.fd);
  }
}
