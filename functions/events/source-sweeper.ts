import { Logger } from "@aws-lambda-powertools/logger";
import { Config } from "../../core/config";
import { sweepSources, type SourceSweepReport } from "../../core/pipeline/recovery";

const logger = new Logger({ serviceName: "research-to-delivery", logLevel: Config.logLevel() as "INFO" });

/**
 * The research-source recovery sweeper (issue #10; core/pipeline/recovery.ts), run every minute by an EventBridge
 * schedule (stacks/Pipelines.ts) and by the embedded runtime (local/recovery.ts): restarts the extraction of pending
 * sources whose execution is gone, indexes completed sources whose Index step never finished, and fails uploads
 * that never arrived. Queries the sparse `due` index; never scans.
 * @returns the sweep's counts by outcome.
 */
export async function handler(): Promise<Omit<SourceSweepReport, "errors">> {
  const { errors, ...counts } = await sweepSources();
  for (const error of errors) logger.error("source recovery failed with an internal error", { error: error as Error });
  if (counts.due > 0) logger.info("source recovery sweep", counts);
  return counts;
}
