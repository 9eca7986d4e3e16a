import { Logger } from "@aws-lambda-powertools/logger";
import { Config } from "../../core/config";
import { sweepTasks, type TaskSweepReport } from "../../core/task/sweeper";

const logger = new Logger({ serviceName: "research-to-delivery", logLevel: Config.logLevel() as "INFO" });

/**
 * The task sweeper (DESIGN.md 6.5; core/task/sweeper.ts), run every minute by an EventBridge schedule
 * (stacks/Tasks.ts) and by the embedded runtime (local/tasks.ts): starts pending tasks whose execution never ran,
 * resumes running tasks whose worker died (no heartbeat past TASK_STALE_SECONDS, no execution running), fails those
 * past their attempts, and retries the research cycles owed a retry. Queries sparse indexes; never scans.
 * @returns the sweep's counts.
 */
export async function handler(): Promise<Omit<TaskSweepReport, "errors">> {
  const { errors, ...counts } = await sweepTasks();
  for (const error of errors) logger.error("task recovery failed with an internal error", { error: error as Error });
  if (counts.due > 0 || counts.cycles.due > 0) logger.info("task sweep", { ...counts });
  return counts;
}
