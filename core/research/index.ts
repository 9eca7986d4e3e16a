import { isConditionalFailure } from "../db/errors";
import { randomUUID } from "node:crypto";
import type { EntityItem } from "electrodb";
import { AppError, Errors } from "../error";
import { Config } from "../config";
import pRetry from "p-retry";
import { db } from "../db/service";
import { getAll } from "../db/bulk";
import { asWrite, commitWrites, type WriteItem } from "../db/agent-write";
import { stateTable } from "../state-table";
import { requireActiveSubscription } from "../billing";
import { requireMember, requireResourceById } from "../workspace";
import { deleteObject, deletePrefix, getObject, objectSize, putObject } from "../storage";
import { PRESIGN_VALID_SECONDS, presignedPost } from "../storage/presign";
import { startExtraction } from "../pipeline";
import { inspectUpload, inspectDeclared } from "../extract/validate";
import type { Extraction } from "../extract/types";
import { SOURCE_DUE, type ResearchSourceEntity } from "./research-source.entity";
import { fitResponse, fitText, wireBytes } from "../response-size";
import {
  MAX_UPLOAD_BYTES,
  MULTIPART_MAX_BYTES,
  type ListSourcesQuery,
  type ResearchSource as SourceView,
  type ResearchSourceDetail,
  type UploadBody,
  type UploadUrlInput,
} from "./schema";

export * from "./schema";

export type SourceItem = EntityItem<ResearchSourceEntity>;

/** Processing transitions (spec 01 Research source processing), enforced with conditional writes. */
export const PROCESSING_TRANSITIONS = {
  pending: ["completed", "failed", "pending"],
  failed: ["pending"],
  completed: [],
} as const satisfies Record<SourceItem["processing_status"], readonly SourceItem["processing_status"][]>;
const processing = stateTable<SourceItem["processing_status"]>(PROCESSING_TRANSITIONS);

/** When the recovery sweeper should next look at a source that was just (re)started: now + the sweep grace. */
export const dueAfterGrace = (from = Date.now()): string => new Date(from + Config.sourceSweepGraceSeconds() * 1000).toISOString();

/** Where a source's files live: the original under `original/`, derived files beside it. */
const sourcePrefix = (workspaceId: string, sourceId: string) => `workspaces/${workspaceId}/sources/${sourceId}/`;
const safeFileName = (fileName: string) => fileName.replace(/[^\w.\- ]+/g, "_").slice(-200) || "file";
const originalKey = (workspaceId: string, sourceId: string, fileName: string) => `${sourcePrefix(workspaceId, sourceId)}original/${safeFileName(fileName)}`;
/**
 * Key of the copy of a presigned upload that the Validate step checked (functions/steps/validate.ts): the steps after
 * it read this copy, never the original, which the presigned POST can replace until it expires. Outside `original/`,
 * so its object-created event starts nothing (parseOriginalKey), and inside the source's prefix, so deleting the
 * source or its workspace removes it. One per processing attempt: a superseded attempt's Validate, which removes its
 * own copy when it finds itself stale, never touches the copy a newer attempt reads.
 */
export const validatedKey = (workspaceId: string, sourceId: string, attempt: number, fileName: string) =>
  `${sourcePrefix(workspaceId, sourceId)}validated/${attempt}/${safeFileName(fileName)}`;
/** Key of the extraction result (text, transcript, units) of a source. */
export const extractionKey = (workspaceId: string, sourceId: string) => `${sourcePrefix(workspaceId, sourceId)}extraction.json`;
/** Key of the source's embedded mentions (written by the Index step). */
export const mentionsKey = (workspaceId: string, sourceId: string) => `${sourcePrefix(workspaceId, sourceId)}mentions.json`;

/** Parse an uploads-bucket key of an original file back into its workspace and source. */
export function parseOriginalKey(key: string): { workspace_id: string; source_id: string } | null {
  const m = /^workspaces\/([0-9a-f-]{36})\/sources\/([0-9a-f-]{36})\/original\/.+$/.exec(key);
  return m ? { workspace_id: m[1]!, source_id: m[2]! } : null;
}

export const toView = (s: SourceItem): SourceView => ({
  id: s.id,
  workspace_id: s.workspace_id,
  source_type: s.source_type,
  title: s.title,
  file_name: s.file_name,
  // The object's key in the uploads store: what the presigned upload's `key` field names, without the bucket's name,
  // which is an internal detail (issue #10).
  file_url: s.file_key,
  file_type: s.file_type,
  file_size_bytes: s.file_size_bytes,
  processing_status: s.processing_status,
  processing_error: s.processing_error ?? null,
  char_count: s.char_count ?? null,
  unit_count: s.unit_count ?? null,
  pages: s.pages ?? null,
  indexed: s.indexed ?? false,
  created_at: s.created_at,
  processed_at: s.processed_at ?? null,
});

/** A source by workspace and id, strongly consistent; null when absent. */
export async function getItem(workspaceId: string, sourceId: string): Promise<SourceItem | null> {
  const { data } = await db().entities.researchSource.get({ workspace_id: workspaceId, id: sourceId }).go({ consistent: true });
  return data;
}

/**
 * Resolve a source fetched by id alone and check the caller's membership of its workspace.
 * @throws AppError NOT_FOUND (404), also when the caller is not a member of its workspace (its existence is not revealed).
 */
export async function requireSource(userId: string, sourceId: string): Promise<SourceItem> {
  // One round trip once the container knows the id's workspace (core/workspace requireResourceById).
  return requireResourceById<SourceItem>(userId, {
    kind: "research_source",
    id: sourceId,
    what: "Research source",
    entity: db().entities.researchSource,
    locate: async () => {
      const { data } = await db().entities.researchSource.query.byId({ id: sourceId }).go({ limit: 1, attributes: ["workspace_id"] });
      return data[0] && { workspace_id: data[0].workspace_id, id: sourceId };
    },
  });
}

/**
 * The sources of a workspace named by a request body's ids, in the order given (duplicates once): provenance must not
 * cross tenants (issue #10 item 6).
 * @param field the body field named in the error (`source_ids`, `quotes`).
 * @throws AppError VALIDATION_ERROR (422) naming the ids that are not sources of this workspace.
 */
export async function requireSourcesIn(workspaceId: string, ids: string[], field: string): Promise<SourceItem[]> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return [];
  const data = await getAll(unique.map((id) => ({ workspace_id: workspaceId, id })), (keys) => db().entities.researchSource.get(keys).go({ consistent: true }));
  const byId = new Map(data.map((s) => [s.id, s]));
  const unknown = unique.filter((id) => !byId.has(id));
  if (unknown.length) throw Errors.unknownIds("research source", field, unknown);
  return unique.map((id) => byId.get(id)!);
}

/**
 * A counted transaction (`commitWrites`), tried again while it loses to a concurrent one on the workspace's usage
 * item (parallel uploads all count there) or is throttled: only a refused condition is an answer.
 * @returns as `commitWrites`: null when committed, else each item's cancellation reason
 * @throws AppError SERVICE_UNAVAILABLE (503) when it stays busy through the tries
 */
function commitCounted(items: WriteItem[]): Promise<string[] | null> {
  return pRetry(() => commitWrites(["researchSource", "usage"], items), {
    retries: 6,
    factor: 2,
    minTimeout: 10,
    maxTimeout: 200,
    randomize: true,
    shouldRetry: ({ error }) => error instanceof AppError && error.code === "SERVICE_UNAVAILABLE",
  });
}

/**
 * Create the source item and count it against the plan's research-source limit in one transaction.
 * @throws AppError USAGE_LIMIT_EXCEEDED (402) when the limit is reached (the counter's condition refused, not a
 *   transaction that lost to a concurrent upload: that one is tried again); SERVICE_UNAVAILABLE (503) when busy.
 */
async function createCounted(item: SourceItem, max: number | null) {
  const e = db().entities;
  const refused = await commitCounted([
    asWrite(e.researchSource.create(item)),
    asWrite(
      e.usage
        .update({ workspace_id: item.workspace_id })
        .add({ research_sources: 1 })
        .where((attr, op) => (max === null ? "" : `${op.notExists(attr.research_sources)} OR ${op.lt(attr.research_sources, max)}`)),
    ),
  ]);
  if (!refused) return;
  if (refused[1] === "ConditionalCheckFailed") {
    throw new AppError("USAGE_LIMIT_EXCEEDED", `This plan allows ${max} research sources; delete some or upgrade the plan`, { limit: max });
  }
  throw new AppError("CONFLICT", "The research source could not be created; try again", { reasons: refused });
}

/**
 * Delete the source item and give its slot back, in one transaction. The delete is conditional on the item
 * existing, so two deletes racing each other give the slot back once (the loser's transaction is cancelled).
 * @returns whether this call deleted the item (false: it was gone already).
 * @throws AppError SERVICE_UNAVAILABLE (503) when the transaction stays busy (the item is then still there).
 */
async function uncount(workspaceId: string, sourceId: string): Promise<boolean> {
  const e = db().entities;
  const refused = await commitCounted([
    asWrite(e.researchSource.remove({ workspace_id: workspaceId, id: sourceId })),
    asWrite(e.usage.update({ workspace_id: workspaceId }).subtract({ research_sources: 1 })),
  ]);
  if (!refused) return true;
  if (refused[0] === "ConditionalCheckFailed") return false;
  throw new AppError("CONFLICT", "The research source could not be deleted; try again", { reasons: refused });
}

/**
 * A new pending source item for an accepted upload (both upload routes), complete with its timestamps, so the
 * response is built from what was written instead of reading it back.
 */
function newSourceItem(
  userId: string,
  fields: { workspace_id: string; source_type: SourceItem["source_type"]; title: string },
  file: { file_name: string; size: number; verdict: { contentType: string; kind: string }; method: SourceItem["upload_method"] },
): SourceItem {
  const id = randomUUID();
  const now = new Date().toISOString();
  return {
    id,
    workspace_id: fields.workspace_id,
    source_type: fields.source_type,
    title: fields.title,
    file_name: file.file_name,
    file_key: originalKey(fields.workspace_id, id, file.file_name),
    file_type: file.verdict.contentType,
    file_kind: file.verdict.kind,
    file_size_bytes: file.size,
    upload_method: file.method,
    processing_status: "pending",
    processing_attempt: 0,
    indexed: false,
    // Unsettled from the start: if the object's event or the execution is lost, the recovery sweeper finds it.
    sweep: SOURCE_DUE,
    due_at: dueAfterGrace(),
    created_by: userId,
    created_at: now,
    updated_at: now,
  };
}

/**
 * `POST /api/research/upload` (spec 01): validate the file before anything is stored (size, executables, declared
 * type vs leading bytes), then write the pending source and the object. If storing the object fails, the item is
 * removed again, so a refused or failed upload leaves nothing behind. The object-created event starts extraction.
 * @throws AppError EMPTY_FILE, BLOCKED_FILE_TYPE, FILE_TYPE_MISMATCH (400), PAYLOAD_TOO_LARGE (413),
 *   UNSUPPORTED_MEDIA_TYPE (415), SUBSCRIPTION_REQUIRED / USAGE_LIMIT_EXCEEDED (402), FORBIDDEN (403).
 */
export async function upload(userId: string, body: UploadBody): Promise<SourceView> {
  await requireMember(userId, body.workspace_id);
  const sub = await requireActiveSubscription(body.workspace_id);
  const { content, filename, mimetype, truncated } = body.file;
  if (truncated) {
    // The envelope of the HTTP stack's 413 (`payloadTooLarge`), limit_bytes naming the file's limit that was passed.
    throw new AppError("PAYLOAD_TOO_LARGE", `Files over ${MULTIPART_MAX_BYTES / 1024 / 1024} MB go through POST /api/research/upload-url (up to 100 MB)`, { limit_bytes: MULTIPART_MAX_BYTES });
  }
  const inspected = await inspectUpload({ head: content.subarray(0, 8192), declaredType: mimetype, filename, size: content.length });
  const item = newSourceItem(userId, body, { file_name: filename, size: content.length, verdict: inspected, method: "multipart" });
  const id = item.id;
  await createCounted(item, sub.limits.max_research_sources);
  try {
    await putObject(item.file_key, content, inspected.contentType, { "source-id": id });
  } catch (err) {
    await uncount(body.workspace_id, id);
    throw err;
  }
  return toView(item);
}

/**
 * `POST /api/research/upload-url` (DESIGN.md section 5): a presigned S3 POST for files up to 100 MB. What can be
 * checked without the bytes is checked now (size, blocked names and types); the byte checks run when the object's
 * S3 event arrives, and a refused object is deleted and the source marked failed with the reason.
 */
export async function createUploadUrl(userId: string, input: UploadUrlInput) {
  await requireMember(userId, input.workspace_id);
  const sub = await requireActiveSubscription(input.workspace_id);
  const declared = inspectDeclared({ declaredType: input.content_type, filename: input.file_name, size: input.file_size_bytes });
  const item = newSourceItem(userId, input, { file_name: input.file_name, size: input.file_size_bytes, verdict: declared, method: "presigned" });
  const id = item.id;
  await createCounted(item, sub.limits.max_research_sources);
  const upload = await presignedPost(item.file_key, declared.contentType, Math.min(MAX_UPLOAD_BYTES, input.file_size_bytes));
  return { source: toView(item), upload: { ...upload, max_bytes: input.file_size_bytes } };
}

/**
 * `GET /api/research/sources` (spec 01): newest first, filtered, paginated (limit default 200, max 500); read strongly
 * consistent from the workspace's partition. @throws AppError FORBIDDEN (403) for a non-member.
 */
export async function list(userId: string, query: ListSourcesQuery): Promise<{ sources: SourceView[]; total: number }> {
  await requireMember(userId, query.workspace_id);
  const { data } = await db()
    .entities.researchSource.query.byWorkspace({ workspace_id: query.workspace_id })
    .where((attr, op) =>
      [
        query.source_type ? op.eq(attr.source_type, query.source_type) : "",
        query.processing_status ? op.eq(attr.processing_status, query.processing_status) : "",
      ]
        .filter(Boolean)
        .join(" AND "),
    )
    // Strongly consistent, as the insight and recommendation lists: a source just uploaded is listed.
    .go({ pages: "all", consistent: true });
  const sorted = data.sort((a, b) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id));
  // A page ends early past 5 MB (fitResponse, as the other lists): a source's own fields are bounded, not small.
  return { sources: fitResponse(sorted.slice(query.offset, query.offset + query.limit).map(toView)), total: sorted.length };
}

/** The stored extraction of a source, or null before extraction completes. */
export async function readExtraction(workspaceId: string, sourceId: string): Promise<Extraction | null> {
  const raw = await getObject(extractionKey(workspaceId, sourceId));
  return raw ? (JSON.parse(raw.toString("utf8")) as Extraction) : null;
}

/**
 * What a source's two texts may take of the single-source read together, bytes as the Lambda answer carries them
 * (core/response-size.ts `wireBytes`): under the 6 MB a Lambda may answer (API Gateway's proxy integration refuses
 * more, a 500 outside the envelope), with room for the other fields.
 */
export const SOURCE_TEXT_RESPONSE_BYTES = 5_000_000;

/**
 * `GET /api/research/sources/{id}`: the source with extracted_text and transcript, cut together to
 * SOURCE_TEXT_RESPONSE_BYTES (`text_truncated` says so): the transcript keeps at most half, the extracted text the rest.
 */
export async function get(userId: string, sourceId: string): Promise<ResearchSourceDetail> {
  const item = await requireSource(userId, sourceId);
  const extraction = item.processing_status === "completed" ? await readExtraction(item.workspace_id, item.id) : null;
  const transcript = extraction?.transcript == null ? null : fitText(extraction.transcript, SOURCE_TEXT_RESPONSE_BYTES / 2);
  const room = SOURCE_TEXT_RESPONSE_BYTES - (transcript ? wireBytes(transcript.text) : 0);
  const text = extraction?.extracted_text == null ? null : fitText(extraction.extracted_text, room);
  return { ...toView(item), extracted_text: text?.text ?? null, transcript: transcript?.text ?? null, text_truncated: !!(text?.cut || transcript?.cut) };
}

/**
 * `DELETE /api/research/sources/{id}`: the item and its count first (one transaction), then the stored file and
 * derived files. Never an item pointing at nothing: a delete interrupted after the files went used to leave a
 * completed source without its text, which synthesis refuses and reprocess cannot restart; interrupted now, it leaves
 * at most files no item names (storage only). Once the item is gone every later pipeline step finds it absent and
 * writes nothing; one that found it just before (or a presigned upload's event) can still write a derived file
 * (extraction.json, mentions.json) while the files are purged, so the purge runs twice.
 */
export async function remove(userId: string, sourceId: string): Promise<void> {
  const item = await requireSource(userId, sourceId);
  const prefix = sourcePrefix(item.workspace_id, item.id);
  await uncount(item.workspace_id, item.id);
  await deletePrefix(prefix);
  await deletePrefix(prefix);
}

/**
 * `POST /api/research/sources/{id}/reprocess`: pending or failed goes (back) to pending with a new attempt number
 * and extraction runs again; completed is refused. The failed attempt's `processing_error` and `processed_at` go.
 * A presigned source whose file has not arrived while its upload URL is still valid is answered as it is (pending)
 * and nothing starts: its extraction starts when the file arrives (functions/events/s3-upload.ts).
 * @throws AppError ALREADY_PROCESSED (422) for a completed source; CONFLICT (409) for one changed meanwhile.
 */
export async function reprocess(userId: string, sourceId: string): Promise<SourceView> {
  const item = await requireSource(userId, sourceId);
  if (!processing.canTransition(item.processing_status, "pending")) {
    throw new AppError("ALREADY_PROCESSED", "This source is already processed");
  }
  if (await awaitingUpload(item)) return toView(item);
  const attempt = item.processing_attempt + 1;
  let updated: SourceItem;
  try {
    ({ data: updated } = await db()
      .entities.researchSource.patch({ workspace_id: item.workspace_id, id: item.id })
      .set({ processing_status: "pending", processing_attempt: attempt, sweep: SOURCE_DUE, due_at: dueAfterGrace(), recoveries: 0 })
      // A pending source has neither (spec 01 Research source): both belong to the failed attempt.
      .remove(["processing_error", "processed_at"])
      .where((attr, op) => `${op.eq(attr.processing_attempt, item.processing_attempt)} AND ${op.ne(attr.processing_status, "completed")}`)
      .go({ response: "all_new" }));
  } catch (err) {
    if (isConditionalFailure(err)) {
      throw new AppError("CONFLICT", "The source changed while reprocessing was requested; try again");
    }
    throw err;
  }
  await startExtraction({ workspace_id: item.workspace_id, source_id: item.id, bucket: Config.bucketName(), key: item.file_key, attempt });
  return toView(updated);
}

/**
 * A presigned source still waiting for its file, its upload URL still valid. Extraction started now would fail it
 * ("the uploaded file is missing"), and the upload that then arrives would start nothing (only a pending source is
 * extracted on upload), so reprocess leaves it pending for that upload.
 */
async function awaitingUpload(item: SourceItem): Promise<boolean> {
  if (item.processing_status !== "pending" || item.upload_method !== "presigned") return false;
  if (Date.now() >= Date.parse(item.created_at) + PRESIGN_VALID_SECONDS * 1000) return false;
  return (await objectSize(item.file_key)) === null;
}

// ---- used by the extraction steps (functions/steps) ----

/** Store an extraction result next to the source file. */
export async function writeExtraction(workspaceId: string, sourceId: string, extraction: Extraction): Promise<void> {
  await putObject(extractionKey(workspaceId, sourceId), JSON.stringify(extraction), "application/json");
}


/**
 * pending -> completed for the given attempt. A superseded attempt (the source was reprocessed meanwhile) is a
 * no-op. @returns whether the write happened.
 */
export async function markCompleted(
  workspaceId: string,
  sourceId: string,
  attempt: number,
  meta: { char_count: number; unit_count: number; pages?: number; engine: string },
): Promise<boolean> {
  try {
    await db()
      .entities.researchSource.patch({ workspace_id: workspaceId, id: sourceId })
      // Still unsettled until indexed: the sweeper indexes it if the execution dies before its Index step ends.
      .set({ processing_status: "completed", processed_at: new Date().toISOString(), ...meta, sweep: SOURCE_DUE, due_at: dueAfterGrace() })
      .remove(["processing_error"])
      .where((attr, op) => `${op.eq(attr.processing_status, "pending")} AND ${op.eq(attr.processing_attempt, attempt)}`)
      .go();
    return true;
  } catch (err) {
    if (isConditionalFailure(err)) return false;
    throw err;
  }
}

/** pending -> failed with the reason, for the given attempt (superseded attempts are a no-op). */
export async function markFailed(workspaceId: string, sourceId: string, attempt: number, reason: string): Promise<boolean> {
  try {
    await db()
      .entities.researchSource.patch({ workspace_id: workspaceId, id: sourceId })
      .set({ processing_status: "failed", processing_error: reason.slice(0, 2000), processed_at: new Date().toISOString() })
      .remove(["sweep", "due_at"])
      .where((attr, op) => `${op.eq(attr.processing_status, "pending")} AND ${op.eq(attr.processing_attempt, attempt)}`)
      .go();
    return true;
  } catch (err) {
    if (isConditionalFailure(err)) return false;
    throw err;
  }
}

/** Record that the source's mentions are embedded and stored (Index step, or the sweeper): the source is settled. */
export async function markIndexed(workspaceId: string, sourceId: string): Promise<void> {
  await db().entities.researchSource.patch({ workspace_id: workspaceId, id: sourceId }).set({ indexed: true }).remove(["sweep", "due_at"]).go();
}

/**
 * Settle a completed source without indexing it: indexing is off (MENTION_INDEXING=off), or the sweeper gave up
 * after Config.sourceMaxRecoveries attempts. `indexed` stays false; synthesis embeds its mentions on the fly.
 */
export async function settleUnindexed(workspaceId: string, sourceId: string): Promise<void> {
  try {
    await db()
      .entities.researchSource.patch({ workspace_id: workspaceId, id: sourceId })
      .remove(["sweep", "due_at"])
      .where((attr, op) => op.eq(attr.processing_status, "completed"))
      .go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
  }
}

/** Remove a refused object (presigned uploads that fail the byte checks). */
export const deleteOriginal = (item: SourceItem) => deleteObject(item.file_key);
