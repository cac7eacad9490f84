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
  MSG_CMSG_CLOEXEC: ["MSG_CMSG_CLOEXEC", S.MSG_CMSG_CLOEXEC],
  SHUT_RDWR: ["SHUT_RDWR", S.SHUT_RDWR],
  CMSG_SPACE_4: ["CMSG_SPACE(4)", S.CMSG_SPACE(4)],
  CMSG_SPACE_12: ["CMSG_SPACE(12)", S.CMSG_SPACE(12)],
  CMSG_LEN_8: ["CMSG_LEN(8)", S.CMSG_LEN(8)],
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
