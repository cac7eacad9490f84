// Power service errors (spec part 2, "Errors": Power service). Codes and texts are
// the spec's, spelling included ("errorCleintAlreadyRegistered"); 8 is ours.
import type { ErrorRow } from "../../core/errors";

export const E = {
  /** A transition is running, a wake lock is held, or a client voted no. */
  busy: { code: 1, text: "errorPower2Busy" },
  /** Malformed JSON, or a payload that does not match the method's schema. */
  invalidJson: { code: 2, text: "Invalid JSON format" },
  notRegistered: { code: 3, text: "errorClientNotRegistered" },
  alreadyRegistered: { code: 4, text: "errorCleintAlreadyRegistered" },
  tooLate: { code: 5, text: "errorResponseTooLate" },
  timerNotRunning: { code: 6, text: "errorTimerNotRunning" },
  /** No such state or path in the board's machine, or the system refused the action. */
  unknown: { code: 7, text: "errorUnknown" },
  /**
   * Not in the spec's table (docs/decisions/power.md): a caller outside root and the
   * power group powering off or rebooting, or acting on another client's wake lock.
   */
  denied: { code: 8, text: "errorPermissionDenied" },
} as const satisfies Record<string, ErrorRow>;
