// src/ffi/socket.ts mirrors sys/socket.h and sys/un.h: sizes, offsets and constants
// checked against the C compiler of this machine.
import { test, expect } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as S from "../../src/ffi/socket";

test("struct layouts and constants match the C headers", async () => {
  const dir = mkdtempSync(join(tmpdir(), "socket-layout-"));
  const src = join(dir, "l.c");
  await Bun.write(
    src,
    `#define _GNU_SOURCE
#include <stdio.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/uio.h>
int main(void) {
  printf("{\\"sockaddr_un\\":%zu,\\"msghdr\\":%zu,\\"iovec\\":%zu,\\"cmsghdr\\":%zu,", sizeof(struct sockaddr_un), sizeof(struct msghdr), sizeof(struct iovec), sizeof(struct cmsghdr));
  printf("\\"msg_name\\":%zu,\\"msg_namelen\\":%zu,\\"msg_iov\\":%zu,\\"msg_iovlen\\":%zu,\\"msg_control\\":%zu,\\"msg_controllen\\":%zu,\\"msg_flags\\":%zu,",
    offsetof(struct msghdr, msg_name), offsetof(struct msghdr, msg_namelen), offsetof(struct msghdr, msg_iov), offsetof(struct msghdr, msg_iovlen),
    offsetof(struct msghdr, msg_control), offsetof(struct msghdr, msg_controllen), offsetof(struct msghdr, msg_flags));
  printf("\\"space4\\":%zu,\\"space12\\":%zu,\\"len8\\":%zu,", (size_t)CMSG_SPACE(4), (size_t)CMSG_SPACE(12), (size_t)CMSG_LEN(8));
  printf("\\"SOL_SOCKET\\":%d,\\"SCM_RIGHTS\\":%d,\\"MSG_NOSIGNAL\\":%d,\\"MSG_CMSG_CLOEXEC\\":%d,\\"SOCK_CLOEXEC\\":%d,\\"AF_UNIX\\":%d}\\n",
    SOL_SOCKET, SCM_RIGHTS, MSG_NOSIGNAL, MSG_CMSG_CLOEXEC, SOCK_CLOEXEC, AF_UNIX);
  return 0;
}
`,
  );
  await Bun.$`gcc -o ${join(dir, "l")} ${src}`.quiet();
  const c = JSON.parse(await Bun.$`${join(dir, "l")}`.text());
  expect(S.SIZEOF_SOCKADDR_UN).toBe(c.sockaddr_un);
  expect(S.SIZEOF_MSGHDR).toBe(c.msghdr);
  expect(S.SIZEOF_IOVEC).toBe(c.iovec);
  expect(S.SIZEOF_CMSGHDR).toBe(c.cmsghdr);
  for (const k of Object.keys(S.OFFSETOF_MSGHDR)) expect([k, (S.OFFSETOF_MSGHDR as any)[k]]).toEqual([k, c[k]]);
  expect(S.CMSG_SPACE(4)).toBe(c.space4);
  expect(S.CMSG_SPACE(12)).toBe(c.space12);
  expect(S.CMSG_LEN(8)).toBe(c.len8);
  expect([S.SOL_SOCKET, S.SCM_RIGHTS, S.MSG_NOSIGNAL, S.MSG_CMSG_CLOEXEC, S.SOCK_CLOEXEC, S.AF_UNIX]).toEqual([
    c.SOL_SOCKET, c.SCM_RIGHTS, c.MSG_NOSIGNAL, c.MSG_CMSG_CLOEXEC, c.SOCK_CLOEXEC, c.AF_UNIX,
  ]);
});

test("several fds travel with one message, in order", async () => {
  const { libc, makePipe, writeAll, readFd } = await import("../../src/ffi/libc");
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
