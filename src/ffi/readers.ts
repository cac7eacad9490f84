// The one shape of every FFI reader on the event source (loop.ts): when the fd is
// readable, take what the kernel has queued with a non-blocking read, and hand the
// decoded items to the caller one by one.
//
// A read that fails (a GPIO chip unplugged: ENODEV; a V4L2 queue in error: EIO) is
// not retried: the fd would stay readable with the same error, and a level-triggered
// watch would report it for ever. The watch is closed and the error goes to onError.
// An exception thrown by the caller's onItem is its own: it is logged and the watch
// goes on.
import { watch, type Watch, type WatchOptions } from "./loop.ts";

export interface ReaderOptions extends WatchOptions {
  /** A read failed; the watch is closed already. Without it the error is logged. */
  onError?: (err: Error) => void;
}

/**
 * Watches fd; on readable calls read() (non-blocking: [] when nothing is queued)
 * until it returns [], and passes each item to onItem.
 */
export function watchItems<T>(fd: number, read: () => T[], onItem: (item: T) => void, opts: ReaderOptions = {}): Watch {
  const w = watch(fd, {
    readable: () => {
      while (!w.closed) {
        let items: T[];
        try {
          items = read();
        } catch (e) {
          w.close();
          if (opts.onError) opts.onError(e as Error);
          else console.error(`event source: reading fd ${fd} failed; its watch is closed:`, e);
          return;
        }
        if (items.length === 0) return;
        for (const item of items) {
          if (w.closed) return;
          try {
            onItem(item);
          } catch (e) {
            console.error(`event source: a callback for fd ${fd} failed:`, e);
          }
        }
      }
    },
  }, opts);
  return w;
}
