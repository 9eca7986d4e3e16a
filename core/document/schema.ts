import * as z from "zod";
import { DocumentStatus } from "./status";
import { jsonObject, type JsonObjectBounds } from "../json-object";
import { BLOCK_CONTENT_BOUNDS, BlockType } from "./blocks";
import { ChallengeResult, ExpandResult, SimulateResult } from "./engine/types";

export { DocumentStatus };
export const DocumentType = z.enum(["prd", "spec", "memo", "user_story", "roadmap_update", "release_notes"]);

/**
 * Revision change types. `manual_save` is the spec's; the others are ours (docs/decisions.md):
 * created (first snapshot), ai_draft (drafted by the engine), pre_restore / restore (the snapshots around a
 * rollback), status_change (a status transition).
 */
export const ChangeType = z.enum(["created", "ai_draft", "manual_save", "pre_restore", "restore", "status_change"]);
export type ChangeType = z.infer<typeof ChangeType>;

export const Document = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    document_type: DocumentType,
    title: z.string(),
    content: z.string(),
    status: DocumentStatus,
    version: z.int().describe("edit count: +1 on every change of title or content"),
    last_revision: z.int().describe("number of the newest saved revision"),
    related_recommendation_id: z.uuid().nullable(),
    related_insight_ids: z.array(z.uuid()),
    metadata: z.record(z.string(), z.unknown()),
    created_by: z.uuid(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: "Document" });
export type Document = z.infer<typeof Document>;

/**
 * Bounds of a document's metadata, in a request and after a PATCH merges it (docs/decisions.md "Free-form JSON
 * objects"): small descriptive data, not a second content field.
 */
export const METADATA_BOUNDS: JsonObjectBounds = { maxBytes: 32 * 1024, maxDepth: 8, maxKeys: 100, maxKeyLength: 200 };
/** Document metadata in a request body (422 naming the location beyond {@link METADATA_BOUNDS}). */
export const MetadataInput = jsonObject(METADATA_BOUNDS);
/**
 * Block content in a request body: bounded JSON ({@link BLOCK_CONTENT_BOUNDS}) before the block type's own contract
 * (core/document/blocks.ts) checks its fields.
 */
export const BlockContentInput = jsonObject(BLOCK_CONTENT_BOUNDS);

export const CreateDocumentInput = z
  .object({
    workspace_id: z.uuid(),
    document_type: DocumentType,
    title: z.string().trim().min(1).max(300),
    content: z.string().max(1_000_000),
    related_recommendation_id: z.uuid().optional(),
    related_insight_ids: z.array(z.uuid()).max(200).default([]),
  })
  .strict()
  .meta({ id: "CreateDocumentInput" });
export type CreateDocumentInput = z.infer<typeof CreateDocumentInput>;

/** PATCH body (the spec names content, title or metadata). metadata is shallow-merged; null values remove keys. */
export const UpdateDocumentInput = z
  .object({
    title: z.string().trim().min(1).max(300).optional(),
    content: z.string().max(1_000_000).optional(),
    metadata: MetadataInput.optional().describe(`${MetadataInput.description}; shallow-merged, null removes a key; the merged object must stay within the same bounds`),
  })
  .strict()
  .refine((v) => v.title !== undefined || v.content !== undefined || v.metadata !== undefined, "give content, title or metadata")
  .meta({ id: "UpdateDocumentInput" });
export type UpdateDocumentInput = z.infer<typeof UpdateDocumentInput>;

export const ListDocumentsQuery = z.object({
  workspace_id: z.uuid(),
  document_type: DocumentType.optional(),
  status: DocumentStatus.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(200),
  offset: z.coerce.number().int().min(0).default(0),
});
export type ListDocumentsQuery = z.infer<typeof ListDocumentsQuery>;

export const DocumentList = z.object({ documents: z.array(Document), total: z.int() }).meta({ id: "DocumentList" });

export const DraftInput = z
  .object({
    workspace_id: z.uuid(),
    document_type: DocumentType,
    recommendation_id: z.uuid().optional(),
    insight_ids: z.array(z.uuid()).max(100).optional().describe("insights to ground the draft in; default: the recommendation's"),
    user_instructions: z.string().max(5000).optional(),
  })
  .strict()
  .meta({ id: "DraftDocumentInput" });
export type DraftInput = z.infer<typeof DraftInput>;

export const Revision = z
  .object({
    id: z.uuid(),
    document_id: z.uuid(),
    revision_number: z.int(),
    title: z.string(),
    content: z.string(),
    status_at_revision: DocumentStatus,
    change_type: ChangeType,
    change_summary: z.string().nullable(),
    changed_by: z.uuid(),
    word_count: z.int(),
    created_at: z.string(),
  })
  .meta({ id: "DocumentRevision" });
export type Revision = z.infer<typeof Revision>;

export const RevisionSummary = Revision.omit({ content: true }).meta({ id: "DocumentRevisionSummary" });
export const RevisionList = z.object({ revisions: z.array(RevisionSummary), total: z.int() }).meta({ id: "DocumentRevisionList" });

export const SaveVersionInput = z.object({ change_summary: z.string().trim().max(1000).optional() }).strict().meta({ id: "SaveVersionInput" });
export const ListVersionsQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(50) });
export const DiffQuery = z.object({ from_revision: z.coerce.number().int().min(1), to_revision: z.coerce.number().int().min(1) });
export const DiffResult = z
  .object({
    document_id: z.uuid(),
    from_revision: z.int(),
    to_revision: z.int(),
    from_content: z.string(),
    to_content: z.string(),
    diff_stats: z.object({ additions: z.int(), deletions: z.int(), changes: z.int() }),
  })
  .meta({ id: "DocumentDiff" });
export const RestoreResult = z
  .object({ document: Document, before_revision: RevisionSummary, after_revision: RevisionSummary })
  .meta({ id: "RestoreResult" });
export const StatusInput = z
  .object({ target_status: DocumentStatus, change_summary: z.string().trim().max(1000).optional() })
  .strict()
  .meta({ id: "DocumentStatusChange" });
export type StatusInput = z.infer<typeof StatusInput>;

export const DocumentIdParam = z.object({ document_id: z.uuid() });
export const RevisionParam = z.object({ document_id: z.uuid(), revision_id: z.uuid() });

// ---- blocks ----
export const Block = z
  .object({
    id: z.uuid(),
    document_id: z.uuid(),
    block_type: BlockType,
    title: z.string(),
    content: z.record(z.string(), z.unknown()),
    position: z.int(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: "Block" });
export type Block = z.infer<typeof Block>;
export const BlockList = z.object({ blocks: z.array(Block), total: z.int() }).meta({ id: "BlockList" });
export const CreateBlockInput = z
  .object({
    block_type: BlockType,
    title: z.string().max(300).optional(),
    content: BlockContentInput.optional().describe(`shape by block_type; defaults to an empty skeleton. ${BlockContentInput.description}`),
    position: z.int().min(0).optional().describe("default: after the last block"),
  })
  .strict()
  .meta({ id: "CreateBlockInput" });
export type CreateBlockInput = z.infer<typeof CreateBlockInput>;
export const UpdateBlockInput = z
  .object({
    title: z.string().max(300).optional(),
    content: BlockContentInput.optional(),
    position: z.int().min(0).optional(),
  })
  .strict()
  .meta({ id: "UpdateBlockInput" });
export type UpdateBlockInput = z.infer<typeof UpdateBlockInput>;
export const ReorderInput = z
  .object({ block_ids: z.array(z.uuid()).min(1).max(500).describe("every block of the document, in the new order") })
  .strict()
  .meta({ id: "ReorderBlocksInput" });
export const BlockParam = z.object({ document_id: z.uuid(), block_id: z.uuid() });
export const BlockIdParam = z.object({ block_id: z.uuid() });
export const ExtractInput = z.object({ workspace_id: z.uuid(), document_id: z.uuid() }).strict().meta({ id: "ExtractBlocksInput" });
export const ExtractResult = z
  .object({ document_id: z.uuid(), blocks: z.array(Block), count: z.int(), replaced: z.int() })
  .meta({ id: "ExtractBlocksResult" });
export const IntentInput = z
  .object({ raw_input: z.string().trim().min(1).max(20_000), workspace_id: z.uuid().optional() })
  .strict()
  .meta({ id: "IntentParseInput" });
export const IntentResult = z
  .object({ blocks: z.array(z.object({ block_type: BlockType, title: z.string(), content: z.record(z.string(), z.unknown()), position: z.int() })) })
  .meta({ id: "IntentParseResult" });
export const Annotation = z
  .object({
    id: z.uuid(),
    block_id: z.uuid(),
    document_id: z.uuid(),
    body: z.string(),
    kind: z.enum(["comment", "question", "suggestion", "approval"]),
    author_id: z.uuid(),
    created_at: z.string(),
  })
  .meta({ id: "BlockAnnotation" });
export const AnnotationList = z.object({ annotations: z.array(Annotation), total: z.int() }).meta({ id: "BlockAnnotationList" });
export const CreateAnnotationInput = z
  .object({ body: z.string().trim().min(1).max(5000), kind: z.enum(["comment", "question", "suggestion", "approval"]).default("comment") })
  .strict()
  .meta({ id: "CreateAnnotationInput" });
export const AnnotationParam = z.object({ document_id: z.uuid(), block_id: z.uuid(), annotation_id: z.uuid() });

const actionBase = { block_id: z.uuid(), block_type: BlockType, context_block_ids: z.array(z.uuid()).max(8) };
/** Responses of the block actions (not shown by the spec): the engine's result plus which blocks were context. */
export const BlockActionResult = {
  expand: ExpandResult.extend({ ...actionBase, action: z.literal("expand") }).meta({ id: "BlockExpandResponse" }),
  challenge: ChallengeResult.extend({ ...actionBase, action: z.literal("challenge") }).meta({ id: "BlockChallengeResponse" }),
  simulate: SimulateResult.extend({ ...actionBase, action: z.literal("simulate") }).meta({ id: "BlockSimulateResponse" }),
};
