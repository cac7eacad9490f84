// The event source's poller thread (loop.ts): waits in epoll_wait and hands each
// ready watch to the main thread as a record [u32 id][u32 events] over a socket
// pair, which the main thread's own event loop reads. Watches are one-shot: the
// main thread re-arms a watch after its callback ran, so a ready fd is reported
// once per round, however long the main thread takes.
import { ptr } from "bun:ffi";
import { getEvent, pollerLib, SIZEOF_EPOLL_EVENT } from "./epoll";

declare const self: Worker;
const MAX_EVENTS = 64;

self.onmessage = (ev: MessageEvent<{ epfd: number; out: number }>) => {
  const { epfd, out } = ev.data;
  const lib = pollerLib();
  const events = new Uint8Array(SIZEOF_EPOLL_EVENT * MAX_EVENTS);
  const view = new DataView(events.buffer);
  const records = new Uint8Array(8 * MAX_EVENTS);
  const rv = new DataView(records.buffer);
  for (;;) {
    const n = lib.epoll_wait(epfd, ptr(events), MAX_EVENTS, -1);
    if (n <= 0) continue; // EINTR
    for (let i = 0; i < n; i++) {
      const [mask, id] = getEvent(view, i);
      rv.setUint32(8 * i, id, true);
      rv.setUint32(8 * i + 4, mask, true);
    }
    // A blocking write of at most 512 bytes to a stream socket pair: whole or not at all.
    if (Number(lib.write(out, ptr(records), 8 * n)) < 0) return; // the main side is gone
  }
};
