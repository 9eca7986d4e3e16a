import { Logger } from "@aws-lambda-powertools/logger";
import { Config } from "../../core/config";
import { sweepStaleHolds, type HoldSweepReport } from "../../core/billing/sweeper";

const logger = new Logger({ serviceName: "research-to-delivery", logLevel: Config.logLevel() as "INFO" });

/**
 * The stale-reservation sweeper (core/billing/sweeper.ts), run every 5 minutes by an EventBridge schedule
 * (stacks/Billing.ts) and by the embedded runtime (local/start.ts): releases credit reservations of runs that died
 * before settling. Queries the `open` index of holds; never scans.
 * @returns the sweep's counts.
 */
export async function handler(): Promise<Omit<HoldSweepReport, "errors">> {
  const { errors, ...counts } = await sweepStaleHolds();
  for (const error of errors) logger.error("releasing a stale credit reservation failed", { error: error as Error });
  if (counts.stale > 0) logger.info("credit reservation sweep", counts);
  return counts;
}
