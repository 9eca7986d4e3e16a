import * as Research from "../../core/research";
import { deleteObject } from "../../core/storage";
import type { StepState } from "./common";
import { extractionDefinition } from "./extraction.asl";

/** Errors the state machine retries (the Validate task's Retry policy is the one every task uses). */
const RETRIED_ERRORS: ReadonlySet<string> = new Set(extractionDefinition.States.Validate.Retry.flatMap((r) => r.ErrorEquals));

/**
 * The reason to show a user. Step Functions puts a Lambda error's JSON ({errorType, errorMessage}) in Cause; the
 * local runner puts the message itself.
 */
export function reasonOf(error: StepState["error"]): string {
  if (!error) return "Extraction failed for an unknown reason; try reprocessing";
  let message = error.Cause ?? "";
  try {
    const parsed = JSON.parse(message) as { errorMessage?: string };
    if (parsed && typeof parsed.errorMessage === "string") message = parsed.errorMessage;
  } catch {
    // Cause was the message itself
  }
  if (error.Error === "States.Timeout") return "Extraction timed out; try reprocessing, or split the file";
  // Retries exhausted on throttling or a transient Lambda fault: the engine's own words ("Rate exceeded") say nothing to act on.
  if (RETRIED_ERRORS.has(error.Error)) return `The extraction service was busy (${error.Error}); try reprocessing in a few minutes`;
  // Our own errors carry messages written for users; anything else is a defect whose text means nothing to them.
  if (USER_FACING_ERRORS.has(error.Error) && message) return message;
  return `Extraction failed unexpectedly (${error.Error}); try reprocessing, and report it if it happens again`;
}

/** Error names whose messages are written for users (AppError and its subclasses). */
const USER_FACING_ERRORS: ReadonlySet<string> = new Set(["AppError", "ExtractionError"]);

/**
 * MarkFailed step: pending -> failed with a reason a user can act on (a superseded attempt writes nothing), then the
 * attempt's checked copy of a presigned upload (`validated/<attempt>/`, functions/steps/validate.ts) is deleted: no
 * later step reads it (reprocess and recovery validate again from the original, under a new attempt and key), and
 * kept it would cost another copy of the file for every failed attempt until the source is deleted. The source is
 * marked first, so a failed delete leaves at most the copy behind, never a pending source.
 */
export async function handler(state: StepState): Promise<StepState> {
  if (state.error?.Error !== "StaleExecutionError") {
    await Research.markFailed(state.workspace_id, state.source_id, state.attempt, reasonOf(state.error));
  }
  await deleteValidatedCopy(state);
  return state;
}

/**
 * Delete this attempt's validated copy, if any. The file name is Validate's output, or the source's when Validate
 * itself failed (its output is then lost: the state is its input). Deleting a key that does not exist (a multipart
 * upload, which has no copy; a copy already gone) succeeds, so a retried MarkFailed is harmless. Each attempt has
 * its own key, so a superseded attempt's delete never touches the copy a newer attempt reads.
 */
async function deleteValidatedCopy(state: StepState): Promise<void> {
  const fileName = state.file_name ?? (await Research.getItem(state.workspace_id, state.source_id))?.file_name;
  if (fileName === undefined) return; // the source is deleted: its purge removes its files
  await deleteObject(Research.validatedKey(state.workspace_id, state.source_id, state.attempt, fileName));
}
