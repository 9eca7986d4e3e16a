import { getTranscription } from "../../core/extract/transcribe";
import { settleJob } from "./jobs";
import type { StepState } from "./common";

/** CheckTranscribe step: poll the job; on completion the transcript's speaker turns become the extraction. */
export async function handler(state: StepState): Promise<StepState> {
  const jobName = state.job!.id;
  return settleJob(state, jobName, await getTranscription(jobName), "Transcribe");
}
