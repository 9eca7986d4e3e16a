import { getTextDetection } from "../../core/extract/textract";
import { settleJob } from "./jobs";
import type { StepState } from "./common";

/** CheckTextract step: poll the job; the state machine waits and loops while it is IN_PROGRESS. */
export async function handler(state: StepState): Promise<StepState> {
  const jobId = state.job!.id;
  return settleJob(state, jobId, await getTextDetection(jobId), "Textract");
}
