import { Logger } from "@aws-lambda-powertools/logger";
import { Config } from "../../core/config";
import { sweep, type SweepReport } from "../../core/pending-action/executor";

const logger = new Logger({ serviceName: "research-to-delivery", logLevel: Config.logLevel() as "INFO" });

/**
 * The pending-action sweeper (DESIGN.md 6.2), run every minute by an EventBridge schedule (stacks/PendingActions.ts)
 * and by the embedded runtime (local/streams.ts): executes approved rows the stream left alone for more than 30 s,
 * rows a transient failure deferred whose retry time has come, and executing rows whose executor's lease expired.
 * Queries the sparse index; never scans.
 * @returns the sweep's counts (due, executed, failed, deferred, skipped).
 */
export async function handler(): Promise<Omit<SweepReport, "errors">> {
  const { errors, ...counts } = await sweep();
  for (const error of errors) logger.error("pending action failed with an internal error", { error: error as Error });
  if (counts.due > 0) logger.info("pending-action sweep", counts);
  return counts;
}
