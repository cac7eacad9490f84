// A dbus-next MessageBus over our SocketStream. This mirrors dbus-next's own
// createConnection (lib/connection.js) with a transport that can carry fds.
import { EventEmitter } from "node:events";
import dbus from "dbus-next";
import { SocketStream } from "./transport";
// dbus-next internals: the SASL handshake, the message parser and marshaller.
// @ts-ignore untyped internal module
import clientHandshake from "dbus-next/lib/handshake.js";
// @ts-ignore untyped internal module
import messageParser from "dbus-next/lib/message.js";
// @ts-ignore untyped internal module
import { messageToJsFmt, marshallMessage } from "dbus-next/lib/marshall-compat.js";
// @ts-ignore untyped internal module
import MessageBusClass from "dbus-next/lib/bus.js";

export type MessageBus = dbus.MessageBus;
export const { Message } = dbus;
export type Message = dbus.Message;

export const SYSTEM_BUS_ADDRESS = "unix:path=/run/dbus/system_bus_socket";

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

export interface Connection extends EventEmitter {
  stream: SocketStream;
  /** True once the daemon agreed to fd passing on this connection. */
  readonly unixFd: boolean;
  message(msg: Message): void;
  end(): Connection;
}

function createConnection(address: string, negotiateUnixFd: boolean): Connection {
  const self = new EventEmitter() as Connection;
  const stream = new SocketStream(address, negotiateUnixFd);
  self.stream = stream;
  Object.defineProperty(self, "unixFd", { get: () => stream.supportsUnixFd });
  stream.on("error", (err) => self.emit("error", err));
  stream.on("end", () => {
    // Sending on a closed connection throws, so a call's promise rejects at once.
    self.message = () => {
      throw new Error("the bus connection is closed");
    };
    self.emit("end");
  });
  self.end = () => {
    stream.end();
    return self;
  };
  const queue: Message[] = [];
  const send = (msg: Message) => {
    const [data, fds] = marshallMessage(msg) as [Buffer, number[]];
    if (fds.length && !stream.supportsUnixFd) {
      // The daemon drops a connection that sends fds it did not agree to carry.
      throw new Error("file descriptor passing was not negotiated on this connection");
    }
    stream.write(fds.length ? { data, fds } : data);
  };
  self.message = (msg) => void queue.push(msg);
  stream.once("connect", () =>
    clientHandshake(stream, {}, (error: Error | null, guid: string) => {
      if (error) return self.emit("error", error);
      (self as any).guid = guid;
      self.message = send;
      for (const m of queue.splice(0)) send(m);
      self.emit("connect");
      messageParser.unmarshalMessages(
        stream,
        (raw: unknown) => {
          let msg: Message;
          try {
            msg = new Message(messageToJsFmt(raw));
          } catch (err) {
            self.emit("error", err);
            return;
          }
          self.emit("message", msg);
        },
        {},
      );
      if (stream.readableLength) stream.emit("readable");
    }),
  );
  return self;
}

/** Opens a bus connection; resolves once Hello has answered (bus.name is set). */
export function connectBus(address: string, opts: { negotiateUnixFd?: boolean; timeoutMs?: number } = {}): Promise<MessageBus> {
  const conn = createConnection(address, opts.negotiateUnixFd ?? true);
  const bus: MessageBus = new MessageBusClass(conn);
  return new Promise((resolve, reject) => {
    let connected = false;
    const timer = setTimeout(() => {
      if (connected) return;
      conn.end();
      reject(new Error(`no answer from the bus at ${address} within ${opts.timeoutMs ?? 10000} ms`));
    }, opts.timeoutMs ?? 10000);
    // Stream and parse errors end up here; the connection's "end" tells users.
    bus.on("error", (e: Error) => {
      if (!connected) reject(e);
    });
    conn.on("end", () => {
      // Calls still waiting for a reply fail now instead of at their timeout.
      const handlers = (bus as any)._methodReturnHandlers as Record<number, (m: unknown) => void>;
      for (const serial of Object.keys(handlers)) {
        const h = handlers[Number(serial)]!;
        delete handlers[Number(serial)];
        h(
          new Message({
            type: dbus.MessageType.ERROR,
            replySerial: Number(serial),
            errorName: "org.freedesktop.DBus.Error.Disconnected",
            signature: "s",
            body: ["the bus connection is closed"],
          } as any),
        );
      }
      if (!connected) reject(new Error("the bus closed the connection"));
      bus.emit("disconnected");
    });
    bus.once("connect", () => {
      connected = true;
      clearTimeout(timer);
      resolve(bus);
    });
  });
}
