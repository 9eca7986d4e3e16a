import { Logger } from "@aws-lambda-powertools/logger";
import { Config } from "../../core/config";
import { sweepExpiredBoosts, sweepStaleHolds, type BoostSweepReport, type HoldSweepReport } from "../../core/billing/sweeper";
import { renewYearly, type RenewalReport } from "../../core/billing/sync";

const logger = new Logger({ serviceName: "research-to-delivery", logLevel: Config.logLevel() as "INFO" });

/**
 * Billing's scheduled work, run every 5 minutes by an EventBridge schedule (stacks/Billing.ts) and by the embedded
 * runtime (local/recovery.ts): closes credit reservations of runs that died before settling (core/billing/sweeper.ts:
 * released, or settled for what the run owed when an executed pending action recorded that its work was delivered), closes boost packs past their 30 days (`sweepExpiredBoosts`), and handles the accounts
 * that are due (core/billing/sync.ts `renewYearly`: the next month of a paid yearly subscription, the quota of a paid
 * plan that lapsed). All read sparse indexes; none scans.
 * @returns the counts of each.
 */
export async function handler(): Promise<{ holds: Omit<HoldSweepReport, "errors">; boosts: Omit<BoostSweepReport, "errors">; renewals: Omit<RenewalReport, "errors"> }> {
  const { errors, ...holds } = await sweepStaleHolds();
  for (const error of errors) logger.error("closing a stale credit reservation failed", { error: error as Error });
  if (holds.stale > 0) logger.info("credit reservation sweep", holds);
  const { errors: boostErrors, ...boosts } = await sweepExpiredBoosts();
  for (const error of boostErrors) logger.error("expiring a boost pack failed", { error: error as Error });
  if (boosts.due > 0) logger.info("boost expiry sweep", boosts);
  const { errors: renewalErrors, ...renewals } = await renewYearly();
  for (const error of renewalErrors) logger.error("crediting a yearly subscription's month failed", { error: error as Error });
  if (renewals.due > 0) logger.info("due billing accounts", renewals);
  return { holds, boosts, renewals };
}
