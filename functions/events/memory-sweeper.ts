import { Logger } from "@aws-lambda-powertools/logger";
import { Config } from "../../core/config";
import { sweepOwedExchanges, type OwedSweepReport } from "../../core/memory/owed";

const logger = new Logger({ serviceName: "research-to-delivery", logLevel: Config.logLevel() as "INFO" });

/**
 * Memory's outbox sweeper, run every 5 minutes by an EventBridge schedule (stacks/Api.ts) and by the embedded runtime
 * (local/recovery.ts `startMemorySweep`): sends again the copilot exchanges still owed to memory 30 minutes after
 * their answer (a process that died before the send, a send that failed), and drops those whose exchange is gone
 * (core/memory/owed.ts `sweepOwedExchanges`; reads a sparse index, never scans).
 * @returns the sweep's counts
 */
export async function handler(): Promise<Omit<OwedSweepReport, "errors">> {
  const { errors, ...report } = await sweepOwedExchanges();
  for (const error of errors) logger.error("sending an exchange owed to memory again failed", { error: error as Error });
  if (report.due > 0) logger.info("memory outbox sweep", report);
  return report;
}
