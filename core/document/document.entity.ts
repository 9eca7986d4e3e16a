import { createConversions, Entity } from "electrodb";
import { indexKeysOf, type IndexKeys } from "../db/table";
import type { MarkPut, SlimIndex } from "../db/slim-index";

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
 * (and the workspace's index mark, `DocumentIndexMark`) carry: core/document/listing.ts, `DOCUMENT_INDEX` below,
 * docs/decisions.md "Documents are listed from a sparse index".
 */

const docKey = { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" } as const;
/** Sort key of a workspace's documents index mark in its partition (`DocumentIndexMark`, `DOCUMENT_INDEX`). */
const DOCUMENT_INDEX_MARK_SK = "docindex";
/** The partition of a workspace's documents in the sparse gsi3 index. */
const listedKey = { field: "gsi3pk", composite: ["workspace_id"], template: "wsdocs#${workspace_id}", casing: "none" } as const;

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
    /**
     * Internal: counts block creates (absent before the first). Each create writes its block in one transaction with
     * this counter's increment, conditioned on the value it read with the blocks: two creates at once cannot both
     * take the slot after the last block (core/document/block-ops.ts createBlock). Written outside ElectroDB's
     * update, so it leaves `updated_at` as it is.
     */
    blocks_rev: { type: "number" },
    /**
     * Internal: set (epoch ms) by a block extraction while it replaces the blocks, with `blocks_rev` moved in the same
     * write; block creates are refused while it is in the future (core/document/block-ops.ts documentGuard). The
     * extraction clears it when done; a crashed one's mark lapses at that time. Written outside ElectroDB's update.
     */
    extracting_until: { type: "number" },
    /**
     * Internal: set when a DELETE starts removing the document, before it reads the child keys it deletes. Block and
     * annotation creates are conditioned on its absence (and on the item existing), so none commits after that read.
     */
    deleting_at: { type: "string" },
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
 * for an older one after its documents were given their index keys. It sits in the index itself (gsi3 sort key
 * `document`, before every `document#<id>`), so the Query that lists the documents also says whether the list is
 * complete. Written and deleted only through core/db/slim-index.ts (`DOCUMENT_INDEX`), as ElectroDB's create of this
 * entity shapes it, so marks written before that (by this entity's create) are the same item.
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
    byWorkspace: { pk: docKey, sk: { field: "sk", composite: [], template: DOCUMENT_INDEX_MARK_SK, casing: "none" } },
    listed: { index: "gsi3", pk: listedKey, sk: { field: "gsi3sk", composite: [], template: "document", casing: "none" } },
  },
});
export type DocumentIndexMarkEntity = ReturnType<typeof buildDocumentIndexMarkEntity>;

/*
 * Built on first use, not at import (docs/decisions.md "Entities are built on first use"); outside the entity
 * catalogue (core/db/service.ts), whose import of this file would close a circle.
 */
let documentConversions: ReturnType<typeof createConversions> | undefined;
let markConversions: ReturnType<typeof createConversions> | undefined;
let markEntity: DocumentIndexMarkEntity | undefined;

/**
 * A document's keys in the `listed` (gsi3) index, built by ElectroDB from that index (its conversions), for the
 * backfill of documents written before the index (`DOCUMENT_INDEX`): the template is written once. An empty id gives
 * the bare prefix `document#` (`DOCUMENT_INDEX.keysOf` refuses it).
 * @throws Error when ElectroDB builds no gsi3 keys (not for string arguments)
 */
export const documentListKeysOf = (workspaceId: string, documentId: string): IndexKeys<"gsi3"> =>
  indexKeysOf("gsi3", (documentConversions ??= createConversions(buildDocumentEntity() as never)).byAccessPattern.listed.fromComposite.toKeys({ workspace_id: workspaceId, id: documentId }));

/** A workspace's documents index mark's keys: its own (`pk`, `sk`) and its gsi3 ones (`gsi3pk`, `gsi3sk`). */
export interface DocumentIndexMarkKeys {
  pk: string;
  sk: string;
  gsi3pk: string;
  gsi3sk: string;
}

/**
 * The keys of a workspace's documents index mark, built by ElectroDB from `DocumentIndexMark`'s indexes: `ws#<ws>` /
 * `docindex`, and gsi3 `wsdocs#<ws>` / `document`. The listing's Query (core/document/listing.ts) reads the gsi3
 * partition `gsi3pk` by the prefix `gsi3sk`, which every document's gsi3 sort key begins with, so the one Query
 * reads the documents and the mark.
 * @throws Error when ElectroDB builds an incomplete key (not for a string argument)
 */
export function documentIndexMarkKeysOf(workspaceId: string): DocumentIndexMarkKeys {
  const keys = (markConversions ??= createConversions(buildDocumentIndexMarkEntity() as never)).byAccessPattern.listed.fromComposite.toKeys({ workspace_id: workspaceId }) as Record<string, unknown>;
  const { pk, sk } = keys;
  if (typeof pk !== "string" || typeof sk !== "string") throw new Error(`document index mark keys incomplete: ${JSON.stringify(keys)}`);
  return { pk, sk, ...indexKeysOf("gsi3", keys) };
}

/**
 * The documents' sparse list for core/db/slim-index.ts (docs/decisions.md "Documents are listed from a sparse
 * index"): the partition's `document#` items of entity `document` (not their revisions, blocks, notes or tickets),
 * each keyed as `listed` writes it on gsi3; the backfill gives back whole items (the listing parses them with
 * ElectroDB). The workspace's mark is a `document_index` item (`ws#<ws>` / `docindex`, with its gsi3 keys), as this
 * entity's create shapes it, with that create's condition: the marks existing tables hold keep working.
 */
export const DOCUMENT_INDEX: SlimIndex<"gsi3"> = {
  index: "gsi3",
  markSk: DOCUMENT_INDEX_MARK_SK,
  skPrefix: "document#",
  entity: "document",
  keysOf: (workspaceId, d) => (typeof d.id === "string" && d.id !== "" ? documentListKeysOf(workspaceId, d.id) : undefined),
  mark: (workspaceId, backfilled, table) =>
    (markEntity ??= buildDocumentIndexMarkEntity()).create({ workspace_id: workspaceId, backfilled }).params<MarkPut>({ table }),
};

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
