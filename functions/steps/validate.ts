import { AppError } from "../../core/error";
import { inspectUpload, SNIFF_BYTES, type FileKind, type UploadVerdict } from "../../core/extract";
import { copyObjectIfMatch, deleteObject, getObjectHead } from "../../core/storage";
import { validatedKey, type SourceItem } from "../../core/research";
import { engineMode, requireCurrentAttempt, StaleExecutionError, type StepState } from "./common";

/** How many times the checks run again when the upload is replaced between reading it and pinning it. */
export const VALIDATE_ROUNDS = 3;

/**
 * Validate step: presigned uploads are first seen here, so the upload's checks run on the stored object; a refused
 * object is deleted and the error goes on to MarkFailed with its reason. A multipart upload's bytes passed the same
 * checks before they were stored (core/research upload), so its recorded verdict is used instead of reading them
 * again. Then choose the route.
 *
 * A presigned POST can be used again until it expires, so the original of a presigned upload can be replaced after
 * it was checked. The checked version is therefore pinned: copied server side, only if its ETag is still the one read
 * with the checked bytes (core/storage copyObjectIfMatch), to the source's `validated/` key, which no presigned policy
 * names, and the state's `key` becomes that copy: every later step (Parse, Textract, Transcribe) reads it. If the
 * original changed in between, the checks run again on what is there now, up to VALIDATE_ROUNDS times. A multipart
 * upload's key is never presigned (its source is its own), so its `key` stays the original.
 */
export async function handler(state: StepState): Promise<StepState> {
  const item = await requireCurrentAttempt(state);
  let key = state.key;
  let verdict: Pick<UploadVerdict, "kind" | "contentType">;
  if (item.upload_method === "multipart") {
    verdict = { kind: item.file_kind as FileKind, contentType: item.file_type };
  } else {
    ({ verdict, key } = await inspectAndPin(state, item));
  }
  const aws = engineMode() === "aws";
  const route = aws && verdict.kind === "pdf" ? "textract" : aws && (verdict.kind === "audio" || verdict.kind === "video") ? "transcribe" : "parse";
  return { ...state, key, route, kind: verdict.kind, content_type: verdict.contentType, file_name: item.file_name };
}

/**
 * The upload checks on the stored object, then its checked version copied to the validated key.
 * @throws AppError NOT_FOUND when the object is gone; the check's AppError (object and copy deleted) when refused;
 *   CONFLICT when it was replaced during every one of VALIDATE_ROUNDS rounds; StaleExecutionError when the source
 *   was deleted or reprocessed meanwhile (the copy is removed).
 */
async function inspectAndPin(state: StepState, item: SourceItem): Promise<{ verdict: UploadVerdict; key: string }> {
  const pinned = validatedKey(state.workspace_id, state.source_id, state.attempt, item.file_name);
  for (let round = 1; round <= VALIDATE_ROUNDS; round++) {
    const verdict = await inspectStored(state.key, pinned, item);
    if (!verdict.etag) throw new Error(`the object store sent no ETag for ${state.key}`);
    if ((await copyObjectIfMatch(state.key, pinned, verdict.etag)) === null) continue; // replaced meanwhile: check again
    // Deleted while copying: the source's purge may have run before the copy landed, so remove it here. A delete
    // after this check purges the copy itself (the item goes first, then the files).
    try {
      await requireCurrentAttempt(state);
    } catch (err) {
      if (err instanceof StaleExecutionError) await deleteObject(pinned);
      throw err;
    }
    return { verdict: verdict.verdict, key: pinned };
  }
  throw new AppError(
    "CONFLICT",
    "The uploaded file kept being replaced while it was checked; upload it once (the upload link can be reused until it expires), then reprocess the source",
  );
}

/** The upload checks on a stored object's head and size; a refused object is deleted, with any earlier checked copy. */
async function inspectStored(key: string, pinned: string, item: SourceItem): Promise<{ verdict: UploadVerdict; etag?: string }> {
  const stored = await getObjectHead(key, SNIFF_BYTES);
  if (stored === null) throw new AppError("NOT_FOUND", "The uploaded file is missing from storage; upload it again");
  const { head, size, etag } = stored;
  try {
    return { verdict: await inspectUpload({ head, declaredType: item.file_type, filename: item.file_name, size }), etag };
  } catch (err) {
    if (err instanceof AppError) await Promise.all([deleteObject(key), deleteObject(pinned)]);
    throw err;
  }
}
