// UI test automation errors (spec part 1, "Errors": UI test automation service).
export const E = {
  missing: (param: string) => ({ code: -1, text: `Parameter is missing: ${param}` }),
  notSubscription: { code: -1, text: "Not a subscription message" },
  badCommandId: { code: -1, text: "Command ID is invalid" },
  badStage: { code: -1, text: "Invalid Stage ID" },
  badAppId: { code: -1, text: "Invalid application ID" },
  /** Observed behaviors 3 and 5: code 0. */
  noCommandName: { code: 0, text: "command name is not specified" },
  /** Observed behavior 2: code 0. */
  unknownCommand: (name: string) => ({ code: 0, text: `command '${name}' is unknown` }),
  /** Observed behavior 6. */
  invalidJson: { code: 4, text: "Invalid JSON message" },
} as const;
