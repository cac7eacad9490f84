// A directory watched for cameras coming and going (inotify through fs.watch, on the
// event loop): a burst of changes runs onChange once, settleMs after the last.
import { watch as fsWatch } from "node:fs";
import type { Logger } from "../../../core/log";

export function watchDirectory(dir: string, settleMs: number, onChange: () => void, log: Logger, match: (name: string) => boolean = () => true): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let watcher: ReturnType<typeof fsWatch> | undefined;
  try {
    watcher = fsWatch(dir, (_ev, name) => {
      if (name && !match(String(name))) return;
      clearTimeout(timer);
      timer = setTimeout(onChange, settleMs);
    });
  } catch (e) {
    log.warn({ dir, err: e }, "cannot watch for camera hotplug");
  }
  return () => {
    clearTimeout(timer);
    watcher?.close();
    watcher = undefined;
  };
}
