// The intent service's options: the board recipe's serviceConfig.intent, read by the
// platform's one loader (service.ts) and published in the board recipe's schema
// (scripts/schemas.ts).
import { z } from "zod";

/** serviceConfig.intent (docs/services/intent.md). */
export const intentOptions = () => {
  // A type several options share, built once (core/config.ts, "Shared option types").
  const count = z.number().int().positive();
  return z.object({
    applicationDirs: z.array(z.string()).optional(),
    sessions: z.record(z.string(), z.array(z.string())).default({}),
    launcher: z.enum(["auto", "applicationmanager", "exec"]).default("auto"),
    applicationManager: z.string().default("com.vendor.service.applicationmanager"),
    launchTimeoutMs: count.default(10000),
    intentLifetimeMs: count.default(300000),
    maxIntents: count.default(1024),
    reloadDelayMs: z.number().int().nonnegative().default(50),
    /** Handler processes the service runs at once for the callers of one uid (docs/services/intent.md). */
    maxHandlerProcessesPerUid: count.default(16),
    /** Handler processes the service runs at once in all. */
    maxHandlerProcesses: count.default(64),
    /** Handler processes the callers of one uid may start a second, after a burst of launchBurstPerUid. */
    maxLaunchesPerUidPerSecond: z.number().positive().default(4),
    /** Launches one uid may start at once before maxLaunchesPerUidPerSecond applies; default maxHandlerProcessesPerUid. */
    launchBurstPerUid: count.optional(),
    /** Nice steps below the service that the handler processes it runs themselves run at (0: the service's priority). */
    handlerNice: z.number().int().min(0).max(19).default(10),
  });
};
export type IntentOptionsT = z.output<ReturnType<typeof intentOptions>>;
