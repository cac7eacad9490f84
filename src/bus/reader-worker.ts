// Reads one D-Bus socket with blocking recvmsg on its own thread, so that file
// descriptors sent with SCM_RIGHTS reach the main thread with their bytes.
import { Receiver } from "../ffi/socket";

declare const self: Worker;

self.onmessage = (ev: MessageEvent<{ fd: number }>) => {
  const receiver = new Receiver(ev.data.fd);
  for (;;) {
    let chunk;
    try {
      chunk = receiver.recv();
    } catch (e) {
      self.postMessage({ error: String((e as Error).message) });
      return;
    }
    if (chunk.data.length === 0) {
      self.postMessage({ eof: true });
      return;
    }
    const ab = chunk.data.buffer.slice(chunk.data.byteOffset, chunk.data.byteOffset + chunk.data.length);
    self.postMessage({ data: ab, fds: chunk.fds }, [ab]);
  }
};
