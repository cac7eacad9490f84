// The test automation service's options: the board recipe's
// serviceConfig.testautomation, read by the platform's one loader (service.ts) and
// published in the board recipe's schema (scripts/schemas.ts).
import { z } from "zod";

/** serviceConfig.testautomation (docs/services/testautomation.md). */
export const testAutomationOptions = () => z.object({ replyTimeoutMs: z.number().positive().default(10000) });
