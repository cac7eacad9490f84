// UI test automation errors (spec part 1, "Errors": UI test automation service).
import type { ErrorRow } from "../../core/errors";

export const E = {
  missing: (param: string): ErrorRow => ({ code: -1, text: `Parameter is missing: ${param}` }),
  notSubscription: { code: -1, text: "Not a subscription message" },
  badCommandId: { code: -1, text: "Command ID is invalid" },
  badStage: { code: -1, text: "Invalid Stage ID" },
  badAppId: { code: -1, text: "Invalid application ID" },
  /** Observed behaviors 3 and 5: code 0. */
  noCommandName: { code: 0, text: "command name is not specified" },
  /** Observed behavior 2: code 0. */
  unknownCommand: (name: string): ErrorRow => ({ code: 0, text: `command '${name}' is unknown` }),
  /** Observed behavior 6: malformed JSON. Also a well-formed message whose fields have the wrong types. */
  invalidJson: { code: 4, text: "Invalid JSON message" },
  /**
   * A failure inside the service: the table's general code (-1) with the text of its
   * row for a message that could not be processed; code 4 stays malformed JSON's.
   */
  internal: { code: -1, text: "Invalid JSON message" },
  /**
   * A caller outside root and the test group sending a command into an application or
   * posting a stage event: the table's general code (-1) with a text of ours
   * (docs/decisions/testautomation.md).
   */
  denied: (method: string, group: string): ErrorRow => ({ code: -1, text: `Permission denied: ${method} is for root and group ${group}` }),
} as const satisfies Record<string, ErrorRow | ((...s: string[]) => ErrorRow)>;
