import { ExtractionError } from "../../core/extract";
import { startTranscription, transcribeMediaFormat } from "../../core/extract/transcribe";
import { jobNameOf, startedJob } from "./jobs";
import type { StepState } from "./common";

/** StartTranscribe step: a transcription job with speaker labels on the stored audio or video. */
export async function handler(state: StepState): Promise<StepState> {
  const mediaFormat = transcribeMediaFormat(state.content_type!);
  if (!mediaFormat) throw new ExtractionError("service_rejected", `Transcribe cannot read ${state.content_type} media`);
  const { jobName } = await startTranscription({ bucket: state.bucket, key: state.key, jobName: jobNameOf(state), mediaFormat });
  return startedJob(state, jobName);
}
