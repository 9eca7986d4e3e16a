import * as z from "zod";
import { DocumentStatus } from "./status";
import { jsonObject, type JsonObjectBounds } from "../json-object";
import { BLOCK_CONTENT_BOUNDS, BLOCK_CONTENT_SCHEMAS, BLOCK_TYPES, BlockType, MAX_BLOCKS_PER_DOCUMENT } from "./blocks";
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
    content_truncated: z
      .boolean()
      .describe("from_content or to_content was cut to fit the response (a Lambda answers at most 6 MB, so the two texts share 5 MB of JSON; each may be 1,000,000 characters, up to 3 MB): each keeps its beginning, diff_stats counts the whole texts, and GET .../versions/{revision_id} reads either whole"),
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
/**
 * `GET /api/documents/{id}/blocks` paging: by default every block from `offset` (spec 01: all blocks ordered by
 * position), but a page ends early past 5 MB of JSON (core/response-size.ts): fewer blocks than `total` from `offset`
 * means the next page starts at `offset` plus the blocks given.
 */
export const ListBlocksQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).optional().describe("at most this many blocks; default: every block from offset (up to 5 MB)"),
  offset: z.coerce.number().int().min(0).default(0).describe("blocks to skip, in position order"),
});
export type ListBlocksQuery = z.infer<typeof ListBlocksQuery>;
/**
 * One block type's content in a request body: the bounded-JSON checks of {@link BlockContentInput} on the raw value
 * first (the same 422s: size, depth, keys, reserved keys; nothing else is looked at once they fail), then the type's
 * own contract (core/document/blocks.ts). In OpenAPI it is that type's component, `<Type>BlockContent`.
 */
function boundedContent<S extends z.ZodType>(schema: S) {
  return z.preprocess((value, ctx) => {
    // Only a plain object can break the bounds; anything else is left to the contract's "expected object".
    if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
    const bounds = BlockContentInput.safeParse(value);
    if (!bounds.success) for (const issue of bounds.error.issues) ctx.issues.push({ ...issue, input: value } as never);
    return value;
  }, schema);
}

const pascal = (type: BlockType) => type.replace(/(^|_)([a-z])/g, (_, _sep: string, c: string) => c.toUpperCase());

/** The POST body of one block type: its `content` is that type's content schema. */
const createBlockMember = <K extends BlockType>(type: K) =>
  z
    .strictObject({
      block_type: z.literal(type),
      title: z.string().max(300).optional(),
      content: boundedContent(BLOCK_CONTENT_SCHEMAS[type] as (typeof BLOCK_CONTENT_SCHEMAS)[K]).optional(),
      position: z.int().min(0).optional().describe("default: after the last block"),
    })
    .meta({ id: `Create${pascal(type)}BlockInput`, description: `block_type ${type}; content defaults to an empty skeleton` });

/**
 * POST body: one strict member per block type, discriminated on `block_type`, whose `content` is the type's content
 * schema (bounded JSON first; an empty skeleton when omitted). An unknown or missing `block_type` is a 422 at
 * `["body", "block_type"]`; a content problem names its field (`["body", "content", ...]`).
 */
export const CreateBlockInput = z
  .discriminatedUnion(
    "block_type",
    [
      createBlockMember("problem"),
      createBlockMember("persona"),
      createBlockMember("solution"),
      createBlockMember("metrics"),
      createBlockMember("user_story"),
      createBlockMember("edge_case"),
      createBlockMember("risk"),
      createBlockMember("timeline"),
      createBlockMember("free_text"),
    ],
    { error: (issue) => (issue.code === "invalid_union" ? `block_type must be one of: ${BLOCK_TYPES.join(", ")}` : undefined) },
  )
  // JSON Schema reads neither the discriminator nor zod's refusal of {}: say that block_type is required.
  .meta({
    id: "CreateBlockInput",
    description: `content has the shape of block_type's content component and defaults to an empty skeleton. ${BlockContentInput.description}`,
    required: ["block_type"],
  });
export type CreateBlockInput = z.infer<typeof CreateBlockInput>;

/**
 * PATCH body. `content` must fit the stored block's type, which the handler checks (422 at `["body", "content", ...]`,
 * core/document/block-ops.ts); this schema checks the bounds only. OpenAPI documents it as one of the per-type content
 * components (the generator reads `type` and `oneOf` from the metadata instead of the record).
 */
export const UpdateBlockInput = z
  .object({
    title: z.string().max(300).optional(),
    content: BlockContentInput.meta({
      type: "object",
      description: `the shape of the block's own type (its block_type's content component). ${BlockContentInput.description}`,
      oneOf: BLOCK_TYPES.map((type) => ({ $ref: `#/components/schemas/${BLOCK_CONTENT_SCHEMAS[type].meta()!.id}` })),
    }).optional(),
    position: z.int().min(0).optional(),
  })
  .strict()
  .meta({ id: "UpdateBlockInput" });
export type UpdateBlockInput = z.infer<typeof UpdateBlockInput>;
export const ReorderInput = z
  .object({ block_ids: z.array(z.uuid()).min(1).max(MAX_BLOCKS_PER_DOCUMENT).describe("every block of the document, in the new order") })
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
/**
 * `GET .../blocks/{block_id}/annotations`: every annotation from `offset` by default, oldest first, at most `limit`;
 * a page ends early past 5 MB of JSON (core/response-size.ts), as the blocks list does: fewer annotations than
 * `total` from `offset` means the next page starts at `offset` plus the annotations given.
 */
export const ListAnnotationsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).optional().describe("at most this many annotations; default: every annotation from offset (up to 5 MB)"),
  offset: z.coerce.number().int().min(0).default(0).describe("annotations to skip, oldest first"),
});
export type ListAnnotationsQuery = z.infer<typeof ListAnnotationsQuery>;
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
