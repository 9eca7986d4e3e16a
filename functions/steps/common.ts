import type { ExtractionInput } from "../../core/pipeline";
import type { FileKind } from "../../core/extract";
import type { Extraction } from "../../core/extract/types";
import * as Research from "../../core/research";

/**
 * The state that flows through the extraction state machine (kept small: Step Functions payloads cap at 256 KB).
 * `key` is the uploaded object's key on input; from Validate on it names the bytes Validate checked (a presigned
 * upload's pinned copy, core/research validatedKey), and it is the only key the later steps read.
 */
export interface StepState extends ExtractionInput {
  route?: "parse" | "textract" | "transcribe";
  kind?: FileKind;
  content_type?: string;
  file_name?: string;
  /**
   * The polled Textract or Transcribe job. `started_at` (ISO time) is when its Start step ran: the Check step fails
   * the source once the job is still running JOB_DEADLINE_SECONDS later (absent in executions started before it
   * was kept: those are bounded by the execution's TimeoutSeconds alone).
   */
  job?: { id: string; status: "IN_PROGRESS" | "SUCCEEDED"; started_at?: string };
  stats?: { char_count: number; unit_count: number; pages?: number; engine: string };
  error?: { Error: string; Cause?: string };
}

/** Which engines extraction uses: "aws" (Textract, Transcribe) in deployed stages, "local" on the embedded runtime. */
export const engineMode = (): "aws" | "local" => (process.env.EXTRACTION_ENGINES === "aws" ? "aws" : "local");

/** Raised when an execution belongs to a superseded attempt or a deleted source: nothing must be written. */
export class StaleExecutionError extends Error {
  override readonly name = "StaleExecutionError";
}

/**
 * The source of this execution, if the execution is still the current one: the source exists, is pending and its
 * processing attempt is this execution's.
 * @throws StaleExecutionError otherwise (reprocessed or deleted meanwhile, or already finished).
 */
export async function requireCurrentAttempt(state: StepState): Promise<Research.SourceItem> {
  const item = await Research.getItem(state.workspace_id, state.source_id);
  if (!item || item.processing_attempt !== state.attempt || item.processing_status !== "pending") {
    throw new StaleExecutionError(`source ${state.source_id} attempt ${state.attempt} is no longer current`);
  }
  return item;
}

/**
 * Store the extraction of this execution's attempt beside the file and return the figures Complete records.
 * Extraction can take minutes, so the attempt is checked again first. A source deleted between that check and the
 * write is cleaned up by Complete, whose conditional update then fails.
 * @throws StaleExecutionError when the attempt is no longer current (nothing is written).
 */
export async function storeExtraction(state: StepState, extraction: Extraction): Promise<NonNullable<StepState["stats"]>> {
  await requireCurrentAttempt(state);
  await Research.writeExtraction(state.workspace_id, state.source_id, extraction);
  return { char_count: extraction.extracted_text.length, unit_count: extraction.units.length, pages: extraction.pages, engine: extraction.engine };
}
