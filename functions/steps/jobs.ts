import { ExtractionError } from "../../core/extract";
import type { Extraction } from "../../core/extract/types";
import { storeExtraction, type StepState } from "./common";
import { JOB_DEADLINE_SECONDS } from "./extraction.asl";

/** A job name unique per source attempt (Textract client token and Transcribe job name rules: [A-Za-z0-9-_]). */
export const jobNameOf = (state: StepState) => `src-${state.source_id}-${state.attempt}`;

/** The polled services, and what their work is called in a reason a user reads. */
export type JobService = "Textract" | "Transcribe";
const WORK: Record<JobService, { name: string; split: string }> = {
  Textract: { name: "Text detection", split: "split the document into smaller files" },
  Transcribe: { name: "Transcription", split: "split the recording into shorter parts" },
};

/** The state after a Start step: the job to poll, stamped with when it started (the Check step's deadline counts from it). */
export const startedJob = (state: StepState, id: string, now = Date.now()): StepState => ({
  ...state,
  job: { id, status: "IN_PROGRESS", started_at: new Date(now).toISOString() },
});

/**
 * Turn a polled job's result into the next state: IN_PROGRESS loops through the Wait state; SUCCEEDED stores the
 * extraction and carries its figures to Complete; FAILED ends in MarkFailed with the service's own reason.
 *
 * A job still IN_PROGRESS JOB_DEADLINE_SECONDS after `job.started_at` ends in MarkFailed too: left to the execution's
 * TimeoutSeconds, the execution would end TIMED_OUT, which no Catch sees, and the source would stay pending for the
 * recovery sweeper to start the same paid job again. A result that arrives after the deadline is still used.
 *
 * @param now the clock, ms since the epoch (tests).
 * @throws ExtractionError `service_rejected` for a failed job, `no_text` for an empty result, `engine_failed` past
 *   the deadline; StaleExecutionError when the attempt is no longer current (nothing stored).
 */
export async function settleJob(
  state: StepState,
  jobId: string,
  result: { status: "IN_PROGRESS" } | { status: "SUCCEEDED"; extraction: Extraction } | { status: "FAILED"; reason: string },
  service: JobService,
  now = Date.now(),
): Promise<StepState> {
  if (result.status === "IN_PROGRESS") {
    const started = Date.parse(state.job?.started_at ?? "");
    if (now - started > JOB_DEADLINE_SECONDS * 1000) {
      const { name, split } = WORK[service];
      throw new ExtractionError(
        "engine_failed",
        `${name} took longer than ${JOB_DEADLINE_SECONDS / 60} minutes, so it was stopped; try reprocessing later, or ${split}`,
      );
    }
    return { ...state, job: { ...state.job, id: jobId, status: "IN_PROGRESS" } };
  }
  if (result.status === "FAILED") throw new ExtractionError("service_rejected", `${service} could not read the file: ${result.reason}`);
  const { extraction } = result;
  if (!extraction.extracted_text.trim()) throw new ExtractionError("no_text", `${service} found no text in the file`);
  return { ...state, job: { ...state.job, id: jobId, status: "SUCCEEDED" }, stats: await storeExtraction(state, extraction) };
}
