import { Entity } from "electrodb";

/*
 * A workspace deletion that has begun and is not finished (core/workspace/deletion.ts):
 *   ws#<workspace> / wsdelete
 * written in one transaction with the owner's membership mark (`deleting_at`) and the return of the owner's workspace
 * slot, and deleted in the deletion's last transaction, with the workspace item and the owner's membership. The
 * cascade's passes over the partition keep it (as they keep those two), so a crash at any step leaves it.
 *
 * gsi3 `wsdelete#due` / `<due_at>`: one sparse partition of every unfinished workspace deletion by when the recovery
 * sweeper may go on with it (the document deletions' `docdelete#due` is the same shape): read by its old end, never
 * scanned.
 */

/** The constant partition of the `due` index (ElectroDB keys are built from attributes). */
export const WORKSPACE_DELETION_SWEEP = "due";

/** One workspace whose DELETE (or its owner's `user.deleted`) began and has not yet removed everything. */
export const buildWorkspaceDeletionEntity = () => new Entity({
  model: { entity: "workspace_deletion", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true, readOnly: true },
    /** The owner whose membership is kept, marked, until the last step. */
    owner_id: { type: "string", required: true, readOnly: true },
    /** Always `WORKSPACE_DELETION_SWEEP`: the partition of the `due` index. Set again with `due_at`. */
    sweep: { type: "string", required: true, default: () => WORKSPACE_DELETION_SWEEP },
    /** When the sweeper may go on with the deletion, ISO 8601: after the request that began it has had time to. */
    due_at: { type: "string", required: true },
    /** The sweeper's failed tries since its last progress (its wait doubles with each). */
    attempts: { type: "number", required: true, default: 0 },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
  },
  indexes: {
    byWorkspace: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: [], template: "wsdelete", casing: "none" },
    },
    due: {
      index: "gsi3",
      pk: { field: "gsi3pk", composite: ["sweep"], template: "wsdelete#${sweep}", casing: "none" },
      sk: { field: "gsi3sk", composite: ["due_at"], template: "${due_at}", casing: "none" },
    },
  },
});
export type WorkspaceDeletionEntity = ReturnType<typeof buildWorkspaceDeletionEntity>;
