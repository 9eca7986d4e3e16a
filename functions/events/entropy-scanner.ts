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
 * storing each scan for the admin dashboard (`GET /api/admin/quality/entropy`). Runs daily at 04:00 UTC
 * (`ENTROPY_SCAN_SCHEDULE`: EventBridge Scheduler in AWS, stacks/Tasks.ts; croner on the embedded runtime,
 * local/tasks-schedules.ts); workspaces it had no time for are still due at the next run, and come first then (the
 * longest unscanned first). Reads through indexes (users by access status, owner memberships); never scans the table.
 * @returns the run's counts (errors are logged, one line per workspace).
 */
export async function handler(_event?: unknown, context?: { getRemainingTimeInMillis?: () => number }): Promise<Omit<ScanDueReport, "errors"> & { failed: number }> {
  const remaining = context?.getRemainingTimeInMillis?.bind(context);
  // Before each scan, the Lambda's time left (less the margin to finish the scan it starts).
  const { errors, ...counts } = await scanDue(remaining ? { timeLeftMs: () => remaining() - FINISH_MARGIN_MS } : { budgetMs: LOCAL_BUDGET_MS });
  for (const { workspaceId, error } of errors) logger.error("entropy scan failed", { workspace_id: workspaceId, error: error as Error });
  logger.info("entropy scans", { ...counts, failed: errors.length });
  return { ...counts, failed: errors.length };
}
