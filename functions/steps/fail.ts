import * as Research from "../../core/research";
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

/** MarkFailed step: pending -> failed with a reason a user can act on (a superseded attempt writes nothing). */
export async function handler(state: StepState): Promise<StepState> {
  if (state.error?.Error !== "StaleExecutionError") {
    await Research.markFailed(state.workspace_id, state.source_id, state.attempt, reasonOf(state.error));
  }
  return state;
}
