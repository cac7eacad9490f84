// Reads one D-Bus socket with blocking recvmsg on its own thread, so that file
// descriptors sent with SCM_RIGHTS arrive with their bytes. What it reads goes to
// the main thread through a pipe, as frames: u32 length, u32 fd count, i32 fds[],
// bytes. (A pipe, not postMessage: an idle main loop reliably wakes for I/O.)
// fds are process-wide, so their numbers are all the main thread needs.
import { Receiver } from "../ffi/socket";
import { writeAll, closeFd } from "../ffi/libc";

declare const self: Worker;

self.onmessage = (ev: MessageEvent<{ fd: number; pipe: number }>) => {
  const { fd, pipe } = ev.data;
  const receiver = new Receiver(fd);
  try {
    for (;;) {
      const chunk = receiver.recv();
      if (chunk.data.length === 0) break;
      const head = Buffer.alloc(8 + 4 * chunk.fds.length);
      head.writeUInt32LE(chunk.data.length, 0);
      head.writeUInt32LE(chunk.fds.length, 4);
      chunk.fds.forEach((f, i) => head.writeInt32LE(f, 8 + 4 * i));
      writeAll(pipe, Buffer.concat([head, chunk.data]));
    }
  } catch {
    // A read error ends the connection like end-of-stream does.
  }
  closeFd(pipe);
};
