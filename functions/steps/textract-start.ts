import { startTextDetection } from "../../core/extract/textract";
import { jobNameOf, startedJob } from "./jobs";
import type { StepState } from "./common";

/** StartTextract step: asynchronous text detection on the stored PDF or TIFF (multi-page documents, up to 500 MB). */
export async function handler(state: StepState): Promise<StepState> {
  const { jobId } = await startTextDetection({ bucket: state.bucket, key: state.key }, { clientToken: jobNameOf(state).slice(0, 64) });
  return startedJob(state, jobId);
}
