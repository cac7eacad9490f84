// src/ffi/socket.ts mirrors sys/socket.h and sys/un.h (the D-Bus transport's
// sendmsg/recvmsg with SCM_RIGHTS): layouts and constants against the C headers.
import { test, expect } from "bun:test";
import * as S from "../../src/ffi/socket";
import { libc, makePipe, writeAll, readFd } from "../../src/ffi/libc";
import { checkAgainstHeaders } from "./cabi.ts";

const consts: Record<string, [string, number]> = {
  AF_UNIX: ["AF_UNIX", S.AF_UNIX],
  SOCK_STREAM: ["SOCK_STREAM", S.SOCK_STREAM],
  SOCK_CLOEXEC: ["SOCK_CLOEXEC", S.SOCK_CLOEXEC],
  SOL_SOCKET: ["SOL_SOCKET", S.SOL_SOCKET],
  SCM_RIGHTS: ["SCM_RIGHTS", S.SCM_RIGHTS],
  MSG_NOSIGNAL: ["MSG_NOSIGNAL", S.MSG_NOSIGNAL],
  MSG_DONTWAIT: ["MSG_DONTWAIT", S.MSG_DONTWAIT],
  MSG_TRUNC: ["MSG_TRUNC", S.MSG_TRUNC],
  MSG_CTRUNC: ["MSG_CTRUNC", S.MSG_CTRUNC],
  MSG_CMSG_CLOEXEC: ["MSG_CMSG_CLOEXEC", S.MSG_CMSG_CLOEXEC],
  SHUT_RDWR: ["SHUT_RDWR", S.SHUT_RDWR],
  CMSG_SPACE_4: ["CMSG_SPACE(4)", S.CMSG_SPACE(4)],
  CMSG_SPACE_12: ["CMSG_SPACE(12)", S.CMSG_SPACE(12)],
  CMSG_LEN_8: ["CMSG_LEN(8)", S.CMSG_LEN(8)],
  CMSG_LEN_0: ["CMSG_LEN(0)", S.CMSG_LEN(0)],
  CMSG_SPACE_0: ["CMSG_SPACE(0)", S.CMSG_SPACE(0)],
};
checkAgainstHeaders("socket.ts mirrors sys/socket.h and sys/un.h", {
  headers: ["sys/un.h", "sys/uio.h"],
  structs: S.structs,
  consts,
});

test("several fds travel with one message, in order", () => {
  const pair = new Int32Array(2);
  expect(libc.socketpair(S.AF_UNIX, S.SOCK_STREAM | S.SOCK_CLOEXEC, 0, pair)).toBe(0);
  const pipes = [makePipe(), makePipe(), makePipe()];
  pipes.forEach(([, w], i) => writeAll(w, Buffer.from(`pipe${i}`)));
  S.sendAll(pair[0]!, Buffer.from("payload"), pipes.map(([r]) => r));
  const got = new S.Receiver(pair[1]!).recv();
  expect(got.data.toString()).toBe("payload");
  expect(got.fds).toHaveLength(3);
  expect(got.fds.map((fd) => readFd(fd, 16).toString())).toEqual(["pipe0", "pipe1", "pipe2"]);
  for (const fd of [...got.fds, ...pipes.flat(), pair[0]!, pair[1]!]) libc.close(fd);
});

test("control messages encode and decode as the kernel lays them out", () => {
  const data = Buffer.from([1, 2, 3, 4, 5]);
  const c = S.encodeCmsgs([{ level: 1, type: 2, data }, { level: 3, type: 4, data: Buffer.alloc(4, 9) }]);
  expect(c.length).toBe(S.CMSG_SPACE(5) + S.CMSG_SPACE(4));
  expect(S.decodeCmsgs(c, c.length).map((m) => [m.level, m.type, [...m.data]])).toEqual([[1, 2, [1, 2, 3, 4, 5]], [3, 4, [9, 9, 9, 9]]]);
});

test("sockaddr_un: path, abstract name, and a path too long", () => {
  expect(S.sockaddrUn("/run/x").len).toBe(2 + 6 + 1);
  const abs = S.sockaddrUn("bus", true);
  expect([abs.len, abs.buf[2], abs.buf.toString("utf8", 3, 6)]).toEqual([6, 0, "bus"]);
  expect(() => S.sockaddrUn("x".repeat(108))).toThrow(/too long/);
});
