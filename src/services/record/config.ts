// The recording pipeline's options (docs/services/record.md), read by the
// platform's one loader (src/core/config.ts) from the board recipe's
// serviceConfig.record (shared by every pipeline instance of the board).
import { z } from "zod";
import { loadConfig } from "../../core/config";
import { DEFAULT_GROUP } from "./schemas";

const ms = (def: number) => z.coerce.number().int().positive().default(def);

export const recordOptions = () => z.object({
  /** Root and this group's members may start, pause, resume and stop recordings ("*": any caller). */
  accessGroup: z.string().min(1).default(DEFAULT_GROUP),
  /** How long start waits for the pipeline to reach PLAYING. */
  startTimeoutMs: ms(5000),
  /** How long stop waits for end-of-stream to reach the file. */
  stopTimeoutMs: ms(10000),
  /** How long a service that is stopping waits for a recording's end-of-stream. */
  shutdownEosMs: ms(3000),
  /** Subscribers a pipeline instance accepts (one more: Subscription add fail). */
  maxSubscribers: ms(32),
  /**
   * Load GStreamer and the plugins of the recipe's default pipeline when the service
   * starts (true) rather than at the first start (false: about 170 ms more on that
   * call, about 45 MB less resident while no recording was ever made).
   */
  preload: z.boolean().default(false),
});
export type RecordOptions = z.output<ReturnType<typeof recordOptions>>;

export function loadRecordOptions(section: Record<string, unknown> | undefined) {
  return loadConfig({ service: "record", schema: recordOptions, section, file: null });
}
