import * as Research from "../../core/research";
import { indexMentions, mentionIndexingEnabled } from "../../core/pipeline/mentions";
import { requireCurrentAttempt, type StepState } from "./common";

export type { StoredMentions } from "../../core/pipeline/mentions";

/**
 * Index step: embed the source's mentions once, at ingestion, so synthesis only clusters and names. A failure here
 * does not fail the source (the state machine catches it; synthesis then embeds on the fly, and the recovery
 * sweeper tries indexing again).
 */
export async function handler(state: StepState): Promise<StepState> {
  if (!mentionIndexingEnabled()) {
    await Research.settleUnindexed(state.workspace_id, state.source_id);
    return state;
  }
  await requireCurrentAttemptOrCompleted(state);
  await indexMentions(state.workspace_id, state.source_id, () => requireCurrentAttemptOrCompleted(state));
  return state;
}

/** Index runs after Complete: the source must be this attempt's, and completed. */
async function requireCurrentAttemptOrCompleted(state: StepState): Promise<void> {
  const item = await Research.getItem(state.workspace_id, state.source_id);
  if (!item || item.processing_attempt !== state.attempt || item.processing_status !== "completed") {
    await requireCurrentAttempt(state); // throws StaleExecutionError with the reason
  }
}
