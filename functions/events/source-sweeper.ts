import { Logger } from "@aws-lambda-powertools/logger";
import { Config } from "../../core/config";
import { sweepSources, type SourceSweepReport } from "../../core/pipeline/recovery";
import { sweepDocumentDeletions, type DeletionSweepReport } from "../../core/document/deletion";
import { sweepWorkspaceDeletions, type WorkspaceDeletionSweepReport } from "../../core/workspace/deletion";

const logger = new Logger({ serviceName: "research-to-delivery", logLevel: Config.logLevel() as "INFO" });

/**
 * The recovery sweeper, run every minute by an EventBridge schedule (stacks/Pipelines.ts) and by the embedded runtime
 * (local/recovery.ts). Research sources (issue #10; core/pipeline/recovery.ts): restarts the extraction of pending
 * sources whose execution is gone, indexes completed sources whose Index step never finished, and fails uploads
 * that never arrived. Documents (core/document/deletion.ts): finishes the deletions a DELETE began and did not end.
 * Workspaces (core/workspace/deletion.ts): goes on with the workspace deletions a DELETE or a `user.deleted` began and
 * did not end, within a work budget. Queries sparse `due` indexes; never scans. One sweep failing does not stop the
 * others. In AWS the source sweep stops taking sources when the Lambda's time runs short (`left` counts those).
 * @returns the sweeps' counts by outcome (the sources' at the top level, the documents' under `document_deletions`,
 *   the workspaces' under `workspace_deletions`).
 */
export async function handler(
  _event?: unknown,
  context?: { getRemainingTimeInMillis?: () => number },
): Promise<
  Omit<SourceSweepReport, "errors"> & { document_deletions: Omit<DeletionSweepReport, "errors">; workspace_deletions: Omit<WorkspaceDeletionSweepReport, "errors"> }
> {
  // In AWS the source sweep starts no work it lacks the time to finish (see sweepSources); locally there is no deadline.
  const remaining = context?.getRemainingTimeInMillis?.bind(context);
  const [sourcesRun, documentsRun, workspacesRun] = await Promise.allSettled([
    sweepSources(remaining ? { timeLeftMs: remaining } : {}),
    sweepDocumentDeletions(),
    sweepWorkspaceDeletions(),
  ]);
  // A sweep whose query failed throws once the others have run (the schedule's next run tries them all again).
  if (sourcesRun.status === "rejected") throw sourcesRun.reason;
  if (documentsRun.status === "rejected") throw documentsRun.reason;
  if (workspacesRun.status === "rejected") throw workspacesRun.reason;
  const { errors, ...counts } = sourcesRun.value;
  for (const error of errors) logger.error("source recovery failed with an internal error", { error: error as Error });
  if (counts.due > 0) logger.info("source recovery sweep", counts);
  const { errors: deletionErrors, ...deletions } = documentsRun.value;
  for (const error of deletionErrors) logger.error("finishing a document deletion failed", { error: error as Error });
  if (deletions.due > 0) logger.info("document deletion sweep", deletions);
  const { errors: workspaceErrors, ...workspaces } = workspacesRun.value;
  for (const error of workspaceErrors) logger.error("going on with a workspace deletion failed", { error: error as Error });
  if (workspaces.due > 0) logger.info("workspace deletion sweep", workspaces);
  return { ...counts, document_deletions: deletions, workspace_deletions: workspaces };
}
