import { Logger } from "@aws-lambda-powertools/logger";
import { Config } from "../../core/config";
import { sweepSources, type SourceSweepReport } from "../../core/pipeline/recovery";
import { sweepDocumentDeletions, type DeletionSweepReport } from "../../core/document/deletion";

const logger = new Logger({ serviceName: "research-to-delivery", logLevel: Config.logLevel() as "INFO" });

/**
 * The recovery sweeper, run every minute by an EventBridge schedule (stacks/Pipelines.ts) and by the embedded runtime
 * (local/recovery.ts). Research sources (issue #10; core/pipeline/recovery.ts): restarts the extraction of pending
 * sources whose execution is gone, indexes completed sources whose Index step never finished, and fails uploads
 * that never arrived. Documents (core/document/deletion.ts): finishes the deletions a DELETE began and did not end.
 * Queries sparse `due` indexes; never scans. One sweep failing does not stop the other.
 * @returns the sweeps' counts by outcome (the sources' at the top level, the documents' under `document_deletions`).
 */
export async function handler(): Promise<Omit<SourceSweepReport, "errors"> & { document_deletions: Omit<DeletionSweepReport, "errors"> }> {
  const [sourcesRun, documentsRun] = await Promise.allSettled([sweepSources(), sweepDocumentDeletions()]);
  // A sweep whose query failed throws once the other has run (the schedule's next run tries both again).
  if (sourcesRun.status === "rejected") throw sourcesRun.reason;
  if (documentsRun.status === "rejected") throw documentsRun.reason;
  const { errors, ...counts } = sourcesRun.value;
  for (const error of errors) logger.error("source recovery failed with an internal error", { error: error as Error });
  if (counts.due > 0) logger.info("source recovery sweep", counts);
  const { errors: deletionErrors, ...deletions } = documentsRun.value;
  for (const error of deletionErrors) logger.error("finishing a document deletion failed", { error: error as Error });
  if (deletions.due > 0) logger.info("document deletion sweep", deletions);
  return { ...counts, document_deletions: deletions };
}
