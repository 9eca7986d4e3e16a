import { AppError } from "../../core/error";
import { inspectUpload, SNIFF_BYTES, type FileKind } from "../../core/extract";
import { deleteObject, getObjectHead } from "../../core/storage";
import type { SourceItem } from "../../core/research";
import { engineMode, requireCurrentAttempt, type StepState } from "./common";

/**
 * Validate step: presigned uploads are first seen here, so the upload's checks run on the stored object; a refused
 * object is deleted and the error goes on to MarkFailed with its reason. A multipart upload's bytes passed the same
 * checks before they were stored (core/research upload), so its recorded verdict is used instead of reading them
 * again. Then choose the route.
 */
export async function handler(state: StepState): Promise<StepState> {
  const item = await requireCurrentAttempt(state);
  const verdict = item.upload_method === "multipart" ? { kind: item.file_kind as FileKind, contentType: item.file_type } : await inspectStored(state.key, item);
  const aws = engineMode() === "aws";
  const route = aws && verdict.kind === "pdf" ? "textract" : aws && (verdict.kind === "audio" || verdict.kind === "video") ? "transcribe" : "parse";
  return { ...state, route, kind: verdict.kind, content_type: verdict.contentType, file_name: item.file_name };
}

/** The upload checks on a stored object's head and size; a refused object is deleted. */
async function inspectStored(key: string, item: SourceItem) {
  const stored = await getObjectHead(key, SNIFF_BYTES);
  if (stored === null) throw new AppError("NOT_FOUND", "The uploaded file is missing from storage; upload it again");
  const { head, size } = stored;
  try {
    return await inspectUpload({ head, declaredType: item.file_type, filename: item.file_name, size });
  } catch (err) {
    if (err instanceof AppError) await deleteObject(key);
    throw err;
  }
}
