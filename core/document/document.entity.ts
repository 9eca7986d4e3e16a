import { Entity } from "electrodb";

/*
 * A document and its children share one sort-key prefix in the workspace partition:
 *   document#<doc id>                      the document
 *   document#<doc id>#block#<block id>     its blocks
 *   document#<doc id>#rev#<000001>         its revisions (zero-padded, so they sort by number)
 *   document#<doc id>#note#<block id>#<id> block annotations
 * so one Query with begins_with reads a document with all its children, and deleting a document removes them.
 */

const docKey = { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" } as const;

/** Pointer to a text stored beside the item in the uploads bucket (core/document/content.ts); `content` is "" then. */
const contentRef = {
  type: "map",
  properties: {
    key: { type: "string", required: true },
    bytes: { type: "number", required: true },
    sha256: { type: "string", required: true },
  },
} as const;

/** A product document (spec 01 Document). */
export const buildDocumentEntity = () => new Entity({
  model: { entity: "document", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    document_type: { type: ["prd", "spec", "memo", "user_story", "roadmap_update", "release_notes"] as const, required: true },
    title: { type: "string", required: true },
    content: { type: "string", required: true },
    content_ref: contentRef,
    status: { type: ["draft", "review", "approved", "published"] as const, required: true, default: "draft" },
    version: { type: "number", required: true, default: 1 },
    /** Highest revision number saved so far (revisions are numbered 1, 2, ...). */
    last_revision: { type: "number", required: true, default: 0 },
    related_recommendation_id: { type: "string" },
    related_insight_ids: { type: "list", items: { type: "string" }, default: () => [] },
    metadata: { type: "any", default: () => ({}) },
    created_by: { type: "string", required: true },
    /** The pending action whose approved execution wrote this item (DESIGN.md 6.2: agent writes are traceable). */
    pending_action_id: { type: "string" },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
    updated_at: { type: "string", required: true, default: () => new Date().toISOString(), set: () => new Date().toISOString(), watch: "*" },
  },
  indexes: {
    byWorkspace: { pk: docKey, sk: { field: "sk", composite: ["id"], template: "document#${id}", casing: "none" } },
    byId: {
      index: "gsi1",
      pk: { field: "gsi1pk", composite: ["id"], template: "document#${id}", casing: "none" },
      sk: { field: "gsi1sk", composite: [], template: "document", casing: "none" },
    },
  },
});
export type DocumentEntity = ReturnType<typeof buildDocumentEntity>;

/** An immutable document revision (spec 01 Document revision). */
export const buildRevisionEntity = () => new Entity({
  model: { entity: "document_revision", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    document_id: { type: "string", required: true },
    revision_number: { type: "number", required: true, readOnly: true },
    revision_key: { type: "string", required: true, readOnly: true },
    title: { type: "string", required: true, readOnly: true },
    content: { type: "string", required: true, readOnly: true },
    content_ref: { ...contentRef, readOnly: true },
    status_at_revision: { type: "string", required: true, readOnly: true },
    change_type: { type: "string", required: true, readOnly: true },
    change_summary: { type: "string", readOnly: true },
    changed_by: { type: "string", required: true, readOnly: true },
    word_count: { type: "number", required: true, readOnly: true },
    /** The pending action whose approved execution wrote this revision (DESIGN.md 6.2: agent writes are traceable). */
    pending_action_id: { type: "string", readOnly: true },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
  },
  indexes: {
    byDocument: {
      pk: docKey,
      sk: { field: "sk", composite: ["document_id", "revision_key"], template: "document#${document_id}#rev#${revision_key}", casing: "none" },
    },
    byId: {
      index: "gsi1",
      pk: { field: "gsi1pk", composite: ["id"], template: "revision#${id}", casing: "none" },
      sk: { field: "gsi1sk", composite: [], template: "revision", casing: "none" },
    },
  },
});
export type RevisionEntity = ReturnType<typeof buildRevisionEntity>;

/** A typed block of a document (spec 01 Document block). */
export const buildBlockEntity = () => new Entity({
  model: { entity: "document_block", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    document_id: { type: "string", required: true },
    block_type: { type: ["problem", "persona", "solution", "metrics", "user_story", "edge_case", "risk", "timeline", "free_text"] as const, required: true },
    title: { type: "string", default: "" },
    content: { type: "any", required: true },
    position: { type: "number", required: true },
    /** The pending action whose approved execution last wrote this block (DESIGN.md 6.2: agent writes are traceable). */
    pending_action_id: { type: "string" },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
    updated_at: { type: "string", required: true, default: () => new Date().toISOString(), set: () => new Date().toISOString(), watch: "*" },
  },
  indexes: {
    byDocument: {
      pk: docKey,
      sk: { field: "sk", composite: ["document_id", "id"], template: "document#${document_id}#block#${id}", casing: "none" },
    },
    byId: {
      index: "gsi1",
      pk: { field: "gsi1pk", composite: ["id"], template: "block#${id}", casing: "none" },
      sk: { field: "gsi1sk", composite: [], template: "block", casing: "none" },
    },
  },
});
export type BlockEntity = ReturnType<typeof buildBlockEntity>;

/** A reviewer's annotation on a block (DESIGN.md section 5). */
export const buildAnnotationEntity = () => new Entity({
  model: { entity: "block_annotation", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    document_id: { type: "string", required: true },
    block_id: { type: "string", required: true },
    body: { type: "string", required: true },
    kind: { type: ["comment", "question", "suggestion", "approval"] as const, required: true, default: "comment" },
    author_id: { type: "string", required: true },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
  },
  indexes: {
    byBlock: {
      pk: docKey,
      sk: { field: "sk", composite: ["document_id", "block_id", "id"], template: "document#${document_id}#note#${block_id}#${id}", casing: "none" },
    },
  },
});
export type AnnotationEntity = ReturnType<typeof buildAnnotationEntity>;
