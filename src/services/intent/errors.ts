// Intent service errors (spec part 1, "Errors": intent service). Code None: text only.
import type { ErrorRow } from "../../core/errors";

export const E = {
  startFailed: { code: null, text: "Failed to start intent" },
  invalidParameter: { code: null, text: "Invalid parameter" },
  parseIntent: { code: null, text: "Failed to parse intent" },
  noSession: { code: null, text: "Cannot find session" },
  noHandler: { code: null, text: "Cannot find handler" },
  intentIdRequired: { code: null, text: "'intentId' is required parameter" },
} as const satisfies Record<string, ErrorRow>;
