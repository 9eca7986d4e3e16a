import { Logger } from "@aws-lambda-powertools/logger";
import { Config } from "../../core/config";
import { runNightlyCycles } from "../../core/cycle";

const logger = new Logger({ serviceName: "research-to-delivery", logLevel: Config.logLevel() as "INFO" });

/**
 * The overnight research cycles (core/cycle), run at 02:00 UTC by EventBridge Scheduler in AWS (stacks/Tasks.ts) and
 * by croner on the embedded runtime (local/tasks.ts): one cycle per enabled workspace on a plan with overnight
 * cycles, at most once a night (a schedule delivered twice starts nothing the second time).
 * @returns how many cycles started, had already run, and were skipped.
 * @throws Error when some workspace's cycle could not start (after the run's own retries): the failed invocation is
 *   retried (Lambda's asynchronous retries in AWS), and the retry starts only what has not started.
 */
export async function handler(): Promise<{ date: string; started: number; already: number; skipped: number; errors: number }> {
  const report = await runNightlyCycles();
  for (const { workspace_id, error } of report.errors) logger.error("research cycle did not start", { workspace_id, error: error as Error });
  const counts = { date: report.date, started: report.started.length, already: report.already.length, skipped: report.skipped.length, errors: report.errors.length };
  logger.info("overnight research cycles", counts);
  // No night record exists for a workspace whose start failed, so nothing else would start its cycle tonight.
  if (counts.errors) throw new Error(`${counts.errors} research cycle${counts.errors === 1 ? "" : "s"} did not start; the run is to be retried`);
  return counts;
}
