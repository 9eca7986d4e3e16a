import { Logger } from "@aws-lambda-powertools/logger";
import { Config } from "../../core/config";
import { sweepStaleHolds, type HoldSweepReport } from "../../core/billing/sweeper";
import { renewYearly, type RenewalReport } from "../../core/billing/sync";

const logger = new Logger({ serviceName: "research-to-delivery", logLevel: Config.logLevel() as "INFO" });

/**
 * Billing's scheduled work, run every 5 minutes by an EventBridge schedule (stacks/Billing.ts) and by the embedded
 * runtime (local/recovery.ts): releases credit reservations of runs that died before settling
 * (core/billing/sweeper.ts), and credits the next month of paid yearly subscriptions (core/billing/sync.ts
 * `renewYearly`). Both read sparse indexes; neither scans.
 * @returns the counts of both.
 */
export async function handler(): Promise<{ holds: Omit<HoldSweepReport, "errors">; renewals: Omit<RenewalReport, "errors"> }> {
  const { errors, ...holds } = await sweepStaleHolds();
  for (const error of errors) logger.error("releasing a stale credit reservation failed", { error: error as Error });
  if (holds.stale > 0) logger.info("credit reservation sweep", holds);
  const { errors: renewalErrors, ...renewals } = await renewYearly();
  for (const error of renewalErrors) logger.error("crediting a yearly subscription's month failed", { error: error as Error });
  if (renewals.due > 0) logger.info("yearly renewals", renewals);
  return { holds, renewals };
}
