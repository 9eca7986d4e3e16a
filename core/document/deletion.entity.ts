import { Entity } from "electrodb";

/*
 * A document deletion that has begun and is not finished (core/document/deletion.ts):
 *   ws#<workspace> / docdelete#<document id>
 * written in one transaction with the document's `deleting_at` mark and deleted last, once the document, its children
 * and its stored texts are gone. Outside the document's own sort-key prefix (`document#<id>`), which the deletion
 * deletes first, so a crash part-way still leaves it; in the workspace partition, so deleting the workspace removes it.
 *
 * gsi3 `docdelete#due` / `<due_at>`: one sparse partition of every unfinished deletion by when the sweeper may finish
 * it (the memory outbox's `due` index is the same shape): the sweeper reads its old end instead of scanning.
 */

/** The constant partition of the `due` index (ElectroDB keys are built from attributes). */
export const DELETION_SWEEP = "due";

/** One document whose DELETE began (its `deleting_at` mark is set) and has not yet removed everything. */
export const buildDocumentDeletionEntity = () => new Entity({
  model: { entity: "document_deletion", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true, readOnly: true },
    document_id: { type: "string", required: true, readOnly: true },
    /** Always `DELETION_SWEEP`: the partition of the `due` index. Set again with `due_at` (ElectroDB rebuilds both keys). */
    sweep: { type: "string", required: true, default: () => DELETION_SWEEP },
    /** When the sweeper may finish the deletion, ISO 8601: after the DELETE that began it has had time to. */
    due_at: { type: "string", required: true },
    /** Times the sweeper has tried to finish it (its wait doubles each time). */
    attempts: { type: "number", required: true, default: 0 },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
  },
  indexes: {
    byDocument: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: ["document_id"], template: "docdelete#${document_id}", casing: "none" },
    },
    due: {
      index: "gsi3",
      pk: { field: "gsi3pk", composite: ["sweep"], template: "docdelete#${sweep}", casing: "none" },
      sk: { field: "gsi3sk", composite: ["due_at"], template: "${due_at}", casing: "none" },
    },
  },
});
export type DocumentDeletionEntity = ReturnType<typeof buildDocumentDeletionEntity>;
