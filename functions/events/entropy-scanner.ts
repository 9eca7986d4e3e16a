import { Logger } from "@aws-lambda-powertools/logger";
import { Config } from "../../core/config";
import { scanDue, type ScanDueReport } from "../../core/entropy";

const logger = new Logger({ serviceName: "research-to-delivery", logLevel: Config.logLevel() as "INFO" });

/** Time the handler leaves itself to finish the scan in progress, of the Lambda's remaining time (ms). */
const FINISH_MARGIN_MS = 120_000;
/** Budget without a Lambda context (the embedded runtime's schedule): ten minutes of scans per run. */
const LOCAL_BUDGET_MS = 10 * 60_000;

/**
 * The scheduled entropy scanner (issue #21; core/entropy `scanDue`): scans every workspace of an active owner whose
 * last scan is older than ENTROPY_SCAN_INTERVAL_HOURS (default 20), for stale sources and contradictory insights,
 * storing each scan for the admin dashboard (`GET /api/admin/quality/entropy`). Meant to run daily (EventBridge in
 * AWS, the in-process cron locally); workspaces it had no time for are still due at the next run. Reads through
 * indexes (users by access status, owner memberships); never scans the table.
 * @returns the run's counts (errors are logged, one line per workspace).
 */
export async function handler(_event?: unknown, context?: { getRemainingTimeInMillis?: () => number }): Promise<Omit<ScanDueReport, "errors"> & { failed: number }> {
  const remaining = context?.getRemainingTimeInMillis?.();
  const budgetMs = remaining === undefined ? LOCAL_BUDGET_MS : Math.max(0, remaining - FINISH_MARGIN_MS);
  const { errors, ...counts } = await scanDue({ budgetMs });
  for (const { workspaceId, error } of errors) logger.error("entropy scan failed", { workspace_id: workspaceId, error: error as Error });
  logger.info("entropy scans", { ...counts, failed: errors.length });
  return { ...counts, failed: errors.length };
}
