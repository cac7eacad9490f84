// Recording pipeline errors (spec part 2, "Errors": Recording pipeline). Codes and
// texts are the spec's; when each is answered: docs/decisions/record.md.
import type { ErrorRow } from "../../core/errors";

export const E = {
  /** start: the request names no usable source, codec or format, the path is not writable, the pipeline cannot be built, or a recorder is already loaded. */
  notCreated: { code: 1, text: "recorder not created" },
  /** start: the pipeline was built but did not reach PLAYING (a state change failed, an element posted an error, or the start bound passed). */
  loadFailed: { code: 2, text: "Failed to load recorder" },
  /** stop: no recorder is loaded (never started, already stopped, or being stopped). */
  alreadyUnloaded: { code: 3, text: "Already unloaded" },
  /** stop: end-of-stream did not reach the file within the stop bound, or the recording ended with an error. */
  unloadFailed: { code: 4, text: "Fails to unload the recorder" },
  /** stop: the pipeline did not go to NULL, or the output file is not there after it stopped. */
  releaseFailed: { code: 5, text: "Resource release failed" },
  /** pause, resume: the recorder is not in the state the method leaves. */
  invalidState: { code: 6, text: "Invalid state" },
  /** subscribe: the pipeline has its most subscribers (maxSubscribers). */
  subscriptionAddFail: { code: 7, text: "Subscription add fail" },
} as const satisfies Record<string, ErrorRow>;
