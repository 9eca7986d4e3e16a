import { Logger } from "@aws-lambda-powertools/logger";
import { Config } from "../../core/config";
import { sweep, type SweepReport } from "../../core/pending-action/executor";

const logger = new Logger({ serviceName: "research-to-delivery", logLevel: Config.logLevel() as "INFO" });

/**
 * The pending-action sweeper (DESIGN.md 6.2), run every minute by an EventBridge schedule (stacks/PendingActions.ts)
 * and by the embedded runtime (local/streams.ts): executes approved rows the stream left alone for more than 30 s,
 * rows a transient failure deferred whose retry time has come, and executing rows whose executor's lease expired.
 * Queries the sparse index; never scans. In AWS it claims no row once less than a row's budget
 * (`sweepRowBudgetMs`) is left of the Lambda's time, so no execution is killed with it; the embedded runtime passes
 * no context and has no deadline.
 * @returns the sweep's counts (due, executed, failed, deferred, skipped, left for lack of time).
 */
export async function handler(_event?: unknown, context?: { getRemainingTimeInMillis?: () => number }): Promise<Omit<SweepReport, "errors">> {
  const remaining = context?.getRemainingTimeInMillis?.bind(context);
  const { errors, ...counts } = await sweep(remaining ? { timeLeftMs: remaining } : {});
  for (const error of errors) logger.error("pending action failed with an internal error", { error: error as Error });
  if (counts.due > 0) logger.info("pending-action sweep", counts);
  return counts;
}
