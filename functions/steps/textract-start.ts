import { startTextDetection } from "../../core/extract/textract";
import { jobNameOf } from "./jobs";
import type { StepState } from "./common";

/** StartTextract step: asynchronous text detection on the stored PDF (multi-page documents). */
export async function handler(state: StepState): Promise<StepState> {
  const { jobId } = await startTextDetection({ bucket: state.bucket, key: state.key }, { clientToken: jobNameOf(state).slice(0, 64) });
  return { ...state, job: { id: jobId, status: "IN_PROGRESS" } };
}
