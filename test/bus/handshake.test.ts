// The connection's handshake (src/bus/connection.ts): AUTH EXTERNAL, NEGOTIATE_UNIX_FD,
// BEGIN and Hello go out together, before any answer (one round trip, as sd-bus does);
// the daemon's answers may come in one read with the Hello reply behind them; a
// refusal fails the connection with the daemon's words. Against a scripted bus that
// answers only once it has the whole exchange (a client that waits for OK before
// sending the rest never gets an answer), and against a real dbus-daemon.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectBus } from "../../src/bus/connection";
import { encode, decode, messageLength, METHOD_CALL, METHOD_RETURN } from "../../src/bus/codec";
import { startPrivateBus } from "../../src/bus/daemon";

const dir = mkdtempSync(join(tmpdir(), "handshake-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A scripted bus on a unix socket: collects what the client sends until `complete`
 * says it is all there, then answers with `answer` in one write. Returns the address
 * and what the client had sent when the answer went.
 */
function scriptedBus(name: string, complete: (got: Buffer) => boolean, answer: (got: Buffer) => Buffer) {
  const path = join(dir, name);
  const seen: Buffer[] = [];
  let got = Buffer.alloc(0);
  const server = Bun.listen({
    unix: path,
    socket: {
      data(sock, chunk) {
        got = Buffer.concat([got, chunk]);
        if (!seen.length && complete(got)) {
          seen.push(got);
          sock.write(answer(got));
        }
      },
    },
  });
  return { address: `unix:path=${path}`, seen, stop: () => server.stop(true) };
}

/** The Hello call at the end of what the client sent, once it is whole (after BEGIN\r\n). */
function helloIn(got: Buffer): { serial: number } | undefined {
  const at = got.indexOf("BEGIN\r\n");
  if (at < 0) return undefined;
  const rest = got.subarray(at + 7);
  if (rest.length < 16 || rest.length < messageLength(rest)) return undefined;
  const m = decode(rest.subarray(0, messageLength(rest)), () => []);
  return m.member === "Hello" ? { serial: m.serial } : undefined;
}

const helloReply = (serial: number, name: string) =>
  encode({ type: METHOD_RETURN, replySerial: serial, destination: name, sender: "org.freedesktop.DBus", signature: "s", body: [name] }, 1).data;

/** A scripted bus that answers the whole exchange with these lines, then the Hello reply naming `name`. */
const helloBus = (file: string, lines: string, name: string) =>
  scriptedBus(
    file,
    (got) => helloIn(got) !== undefined,
    (got) => Buffer.concat([Buffer.from(lines, "latin1"), helloReply(helloIn(got)!.serial, name)]),
  );

describe("the handshake", () => {
  test("AUTH, NEGOTIATE_UNIX_FD, BEGIN and Hello are sent before any answer; the answers and the Hello reply in one read", async () => {
    const bus = helloBus("pipelined", "OK 0123456789abcdef0123456789abcdef\r\nAGREE_UNIX_FD\r\n", ":1.42");
    try {
      const conn = await connectBus(bus.address, { timeoutMs: 3000 });
      expect(conn.uniqueName).toBe(":1.42");
      const sent = bus.seen[0]!.toString("latin1");
      expect(sent.startsWith(`\0AUTH EXTERNAL ${Buffer.from(String(process.getuid!())).toString("hex")}\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n`)).toBe(true);
      conn.close();
    } finally {
      bus.stop();
    }
  });

  test("without fd passing agreed (the daemon's ERROR to NEGOTIATE_UNIX_FD), the connection opens and sends no fd", async () => {
    const bus = helloBus("no-fds", "OK 0123456789abcdef0123456789abcdef\r\nERROR\r\n", ":1.7");
    try {
      const conn = await connectBus(bus.address, { timeoutMs: 3000 });
      expect(conn.uniqueName).toBe(":1.7");
      expect(() => conn.send({ type: 1, destination: "x.y", path: "/x", member: "m", signature: "h", body: [0], fds: [0] })).toThrow(
        "file descriptor passing was not negotiated on this connection",
      );
      conn.close();
    } finally {
      bus.stop();
    }
  });

  test("a refused AUTH fails the connection with the daemon's answer; nothing after it is read as a message", async () => {
    const bus = scriptedBus(
      "refused",
      (got) => got.includes("BEGIN\r\n"),
      // What a daemon answers to the rest of a refused exchange, then bytes that would be a reply.
      (got) => Buffer.concat([Buffer.from("REJECTED EXTERNAL\r\nERROR\r\nERROR\r\n", "latin1"), helloReply(1, ":1.9")]),
    );
    try {
      const t0 = performance.now();
      await expect(connectBus(bus.address, { timeoutMs: 3000 })).rejects.toThrow("the bus refused authentication: REJECTED EXTERNAL");
      // At the answer, not at the timeout.
      expect(performance.now() - t0).toBeLessThan(2500);
    } finally {
      bus.stop();
    }
  });

  test("a bus that closes during authentication, before its OK or after it, fails the connection at once", async () => {
    for (const [name, answer] of [
      ["closing", ""],
      ["closing-after-ok", "OK 0123456789abcdef0123456789abcdef\r\n"],
    ] as const) {
      const path = join(dir, name);
      const server = Bun.listen({ unix: path, socket: { data: (sock) => void sock.end(answer) } });
      try {
        const t0 = performance.now();
        await expect(connectBus(`unix:path=${path}`, { timeoutMs: 3000 })).rejects.toThrow("the bus closed the connection during authentication");
        expect(performance.now() - t0).toBeLessThan(2500);
      } finally {
        server.stop(true);
      }
    }
  });

  test("on a real dbus-daemon, both transports: the unique name, and a call answered", async () => {
    const bus = await startPrivateBus();
    try {
      for (const receiveFds of [false, true]) {
        const conn = await connectBus(bus.address, { receiveFds });
        expect(conn.uniqueName).toMatch(/^:1\.\d+$/);
        const reply = await conn.call({ type: METHOD_CALL, destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "GetNameOwner", signature: "s", body: ["org.freedesktop.DBus"] });
        expect(reply.body[0]).toBe("org.freedesktop.DBus");
        conn.close();
      }
    } finally {
      await bus.stop();
    }
  });
});
