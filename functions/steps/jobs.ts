import { ExtractionError } from "../../core/extract";
import type { Extraction } from "../../core/extract/types";
import { storeExtraction, type StepState } from "./common";

/** A job name unique per source attempt (Textract client token and Transcribe job name rules: [A-Za-z0-9-_]). */
export const jobNameOf = (state: StepState) => `src-${state.source_id}-${state.attempt}`;

/**
 * Turn a polled job's result into the next state: IN_PROGRESS loops through the Wait state; SUCCEEDED stores the
 * extraction and carries its figures to Complete; FAILED ends in MarkFailed with the service's own reason.
 */
export async function settleJob(
  state: StepState,
  jobId: string,
  result: { status: "IN_PROGRESS" } | { status: "SUCCEEDED"; extraction: Extraction } | { status: "FAILED"; reason: string },
  service: string,
): Promise<StepState> {
  if (result.status === "IN_PROGRESS") return { ...state, job: { id: jobId, status: "IN_PROGRESS" } };
  if (result.status === "FAILED") throw new ExtractionError("service_rejected", `${service} could not read the file: ${result.reason}`);
  const { extraction } = result;
  if (!extraction.extracted_text.trim()) throw new ExtractionError("no_text", `${service} found no text in the file`);
  return { ...state, job: { id: jobId, status: "SUCCEEDED" }, stats: await storeExtraction(state, extraction) };
}
