// A directory watched for cameras coming and going (the inotify watch of
// src/ffi/inotify.ts, on the event source): a burst of changes runs onChange once,
// settleMs after the last.
import * as ino from "../../../ffi/inotify";
import type { Logger } from "../../../core/log";

export function watchDirectory(
  dir: string, settleMs: number, onChange: () => void, log: Logger,
  opts: { match?: (name: string) => boolean; mask?: number } = {},
): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let watch: ino.DirWatch | undefined;
  try {
    watch = ino.watchDirectory(dir, (ev) => {
      if (ev.name && opts.match && !opts.match(ev.name)) return;
      clearTimeout(timer);
      timer = setTimeout(onChange, settleMs);
    }, { mask: opts.mask });
  } catch (e) {
    log.warn({ dir, err: e }, "cannot watch for camera hotplug");
  }
  return () => {
    clearTimeout(timer);
    watch?.close();
    watch = undefined;
  };
}
