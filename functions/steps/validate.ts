import { isConditionalFailure } from "../../core/db/errors";
import { db } from "../../core/db/service";
import { AppError } from "../../core/error";
import { ExtractionError, inspectUpload, SNIFF_BYTES, type FileKind, type UploadVerdict } from "../../core/extract";
import { copyObjectIfMatch, deleteObject, getObjectHead } from "../../core/storage";
import { validatedKey, type SourceItem } from "../../core/research";
import { engineMode, requireCurrentAttempt, StaleExecutionError, type StepState } from "./common";

/** How many times the checks run again when the upload is replaced between reading it and pinning it. */
export const VALIDATE_ROUNDS = 3;

/**
 * Largest PNG or JPEG Textract reads, in bytes (10 MB: its limit for those formats, synchronous or asynchronous).
 * PDFs and TIFFs go to its asynchronous text detection, which takes up to 500 MB (more than the 100 MB upload limit).
 */
export const TEXTRACT_IMAGE_MAX_BYTES = 10_485_760;

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
 *
 * A presigned upload's `file_size_bytes` is the size the client declared (the POST policy accepts 1 byte up to it),
 * so once the checked copy is pinned its stored size is written to the source, conditioned on this attempt.
 *
 * @throws ExtractionError `too_large` (after pinning) for a PNG or JPEG over TEXTRACT_IMAGE_MAX_BYTES in AWS; the
 *   errors of inspectAndPin.
 */
export async function handler(state: StepState): Promise<StepState> {
  const item = await requireCurrentAttempt(state);
  let key = state.key;
  let verdict: Pick<UploadVerdict, "kind" | "contentType">;
  // A multipart upload's recorded size is its stored size (core/research upload counts the bytes it stores).
  let size = item.file_size_bytes;
  if (item.upload_method === "multipart") {
    verdict = { kind: item.file_kind as FileKind, contentType: item.file_type };
  } else {
    ({ verdict, key, size } = await inspectAndPin(state, item));
  }
  const route = routeOf(verdict, size, engineMode());
  return { ...state, key, route, kind: verdict.kind, content_type: verdict.contentType, file_name: item.file_name };
}

/**
 * Which step extracts a checked file. On the embedded runtime ("local") everything is parsed in-process. In AWS:
 * PDFs and TIFFs go to Textract's asynchronous text detection (StartTextract), since its synchronous
 * DetectDocumentText reads single-page documents of at most 10 MB and a TIFF may have many pages; audio and video
 * go to Transcribe; PNG and JPEG are parsed, read by DetectDocumentText (functions/steps/parse.ts).
 *
 * @param size the stored file's size in bytes.
 * @throws ExtractionError `too_large` in AWS for a PNG or JPEG over TEXTRACT_IMAGE_MAX_BYTES, which Textract would
 *   refuse (DocumentTooLargeException) after Parse had read the whole file.
 */
export function routeOf(verdict: Pick<UploadVerdict, "kind" | "contentType">, size: number, mode: "aws" | "local"): NonNullable<StepState["route"]> {
  if (mode !== "aws") return "parse";
  if (verdict.kind === "pdf" || verdict.contentType === "image/tiff") return "textract";
  if (verdict.kind === "audio" || verdict.kind === "video") return "transcribe";
  if (verdict.kind === "image" && size > TEXTRACT_IMAGE_MAX_BYTES) {
    throw new ExtractionError(
      "too_large",
      `This image is ${(size / 1_048_576).toFixed(1)} MB; images over 10 MB cannot be read in this deployment. Scale it down or save it as a PDF, then upload it again`,
    );
  }
  return "parse";
}

/**
 * The upload checks on the stored object, then its checked version copied to the validated key and its size
 * written to the source.
 * @returns the verdict, the pinned copy's key and its size in bytes.
 * @throws AppError NOT_FOUND when the object is gone; the check's AppError (object and copy deleted) when refused;
 *   CONFLICT when it was replaced during every one of VALIDATE_ROUNDS rounds; StaleExecutionError when the source
 *   was deleted or reprocessed meanwhile (the copy is removed).
 */
async function inspectAndPin(state: StepState, item: SourceItem): Promise<{ verdict: UploadVerdict; key: string; size: number }> {
  const pinned = validatedKey(state.workspace_id, state.source_id, state.attempt, item.file_name);
  for (let round = 1; round <= VALIDATE_ROUNDS; round++) {
    const verdict = await inspectStored(state.key, pinned, item);
    if (!verdict.etag) throw new Error(`the object store sent no ETag for ${state.key}`);
    if ((await copyObjectIfMatch(state.key, pinned, verdict.etag)) === null) continue; // replaced meanwhile: check again
    // Deleted while copying: the source's purge may have run before the copy landed, so remove it here. A delete
    // after this write purges the copy itself (the item goes first, then the files).
    try {
      await recordStoredSize(state, verdict.size);
    } catch (err) {
      if (err instanceof StaleExecutionError) await deleteObject(pinned);
      throw err;
    }
    return { verdict: verdict.verdict, key: pinned, size: verdict.size };
  }
  throw new AppError(
    "CONFLICT",
    "The uploaded file kept being replaced while it was checked; upload it once (the upload link can be reused until it expires), then reprocess the source",
  );
}

/** The upload checks on a stored object's head and size; a refused object is deleted, with any earlier checked copy. */
async function inspectStored(key: string, pinned: string, item: SourceItem): Promise<{ verdict: UploadVerdict; size: number; etag?: string }> {
  const stored = await getObjectHead(key, SNIFF_BYTES);
  if (stored === null) throw new AppError("NOT_FOUND", "The uploaded file is missing from storage; upload it again");
  const { head, size, etag } = stored;
  try {
    return { verdict: await inspectUpload({ head, declaredType: item.file_type, filename: item.file_name, size }), size, etag };
  } catch (err) {
    if (err instanceof AppError) await Promise.all([deleteObject(key), deleteObject(pinned)]);
    throw err;
  }
}

/**
 * Write the pinned copy's size (bytes) to the source as its `file_size_bytes` (spec 01: the file's size), only while
 * the source is pending under this attempt: the write is also the check that the attempt is still current.
 * @throws StaleExecutionError when the source was deleted or reprocessed meanwhile (nothing written).
 */
async function recordStoredSize(state: StepState, size: number): Promise<void> {
  try {
    await db()
      .entities.researchSource.patch({ workspace_id: state.workspace_id, id: state.source_id })
      .set({ file_size_bytes: size })
      .where((attr, op) => `${op.eq(attr.processing_status, "pending")} AND ${op.eq(attr.processing_attempt, state.attempt)}`)
      .go();
  } catch (err) {
    if (isConditionalFailure(err)) throw new StaleExecutionError(`source ${state.source_id} attempt ${state.attempt} is no longer current`);
    throw err;
  }
}
