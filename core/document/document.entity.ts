import { Entity } from "electrodb";

/*
 * A document and its children share one sort-key prefix in the workspace partition:
 *   document#<doc id>                      the document
 *   document#<doc id>#block#<block id>     its blocks
 *   document#<doc id>#rev#<000001>         its revisions (zero-padded, so they sort by number)
 *   document#<doc id>#note#<block id>#<id> block annotations
 * so one Query with begins_with reads a document with all its children, and deleting a document removes them.
 *
 * The flip side: that prefix cannot list documents without reading every child too (revisions hold full texts). The
 * documents alone are listed from a sparse index, gsi3 `wsdocs#<ws>` / `document#<doc id>`, which only document items
 * (and the workspace's index mark, `DocumentIndexMark`) carry: core/document/listing.ts, docs/decisions.md "Documents
 * are listed from a sparse index".
 */

const docKey = { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" } as const;
/** The partition of a workspace's documents in the sparse gsi3 index. */
const listedKey = { field: "gsi3pk", composite: ["workspace_id"], template: "wsdocs#${workspace_id}", casing: "none" } as const;

/**
 * The keys the templates below give, for the raw reads and writes of core/document/listing.ts (a unit test checks
 * them against what ElectroDB writes): the workspace's partition, its documents' gsi3 partition, the index mark's
 * gsi3 sort key (which every document's starts with), and a document's gsi3 sort key when `documentId` is given.
 */
export const listedKeysOf = (workspaceId: string, documentId = "") => ({
  pk: `ws#${workspaceId}`,
  gsi3pk: `wsdocs#${workspaceId}`,
  markSk: "document",
  documentSk: `document#${documentId}`,
});

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
    /** The workspace's documents without their children (sparse: only documents write gsi3 under `wsdocs#`). */
    listed: {
      index: "gsi3",
      pk: listedKey,
      sk: { field: "gsi3sk", composite: ["id"], template: "document#${id}", casing: "none" },
    },
  },
});
export type DocumentEntity = ReturnType<typeof buildDocumentEntity>;

/**
 * The mark that a workspace's documents are all in the `listed` index: written with every new workspace, and once
 * for an older one after its documents were given their index keys (core/document/listing.ts). It sits in the index
 * itself (gsi3 sort key `document`, before every `document#<id>`), so the Query that lists the documents also says
 * whether the list is complete.
 */
export const buildDocumentIndexMarkEntity = () => new Entity({
  model: { entity: "document_index", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true },
    /** Documents that were given index keys when the mark was written (0 for a new workspace). */
    backfilled: { type: "number", required: true, default: 0 },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
  },
  indexes: {
    byWorkspace: { pk: docKey, sk: { field: "sk", composite: [], template: "docindex", casing: "none" } },
    listed: { index: "gsi3", pk: listedKey, sk: { field: "gsi3sk", composite: [], template: "document", casing: "none" } },
  },
});
export type DocumentIndexMarkEntity = ReturnType<typeof buildDocumentIndexMarkEntity>;

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
