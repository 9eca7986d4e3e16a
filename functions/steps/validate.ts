import { AppError } from "../../core/error";
import { inspectUpload, SNIFF_BYTES } from "../../core/extract";
import { deleteObject, getObjectHead } from "../../core/storage";
import { engineMode, requireCurrentAttempt, type StepState } from "./common";

/**
 * Validate step: the same checks as the multipart upload, run on the stored object (presigned uploads are first
 * seen here). A refused object is deleted; the error goes on to MarkFailed with its reason. Then choose the route.
 */
export async function handler(state: StepState): Promise<StepState> {
  const item = await requireCurrentAttempt(state);
  const stored = await getObjectHead(state.key, SNIFF_BYTES);
  if (stored === null) throw new AppError("NOT_FOUND", "The uploaded file is missing from storage; upload it again");
  const { head, size } = stored;
  let verdict;
  try {
    verdict = await inspectUpload({ head, declaredType: item.file_type, filename: item.file_name, size });
  } catch (err) {
    if (err instanceof AppError) await deleteObject(state.key);
    throw err;
  }
  const aws = engineMode() === "aws";
  const route = aws && verdict.kind === "pdf" ? "textract" : aws && (verdict.kind === "audio" || verdict.kind === "video") ? "transcribe" : "parse";
  return { ...state, route, kind: verdict.kind, content_type: verdict.contentType, file_name: item.file_name };
}
