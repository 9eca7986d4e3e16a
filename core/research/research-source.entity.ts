import { Entity } from "electrodb";

/**
 * Value of `sweep` while a source is unsettled (its extraction or indexing still owed): its partition in the sparse
 * `due` index is `source#due`. ElectroDB writes an index key only from attributes, so the constant is an attribute.
 */
export const SOURCE_DUE = "due" as const;

/**
 * A research source (spec 01 Research source). The item holds metadata and status; the extracted text, transcript
 * and units live in S3 next to the file (`.../extraction.json`), because a transcript or survey export can pass
 * DynamoDB's 400 KB item limit.
 *
 * Indexes:
 * - byWorkspace: the workspace partition; byId (gsi1): look-up by id alone.
 * - due (gsi3, SPARSE): only sources whose work is still owed, i.e. pending, or completed and not yet indexed, in
 *   one partition `source#due`, sorted by when the recovery sweeper (core/pipeline/recovery.ts) should look at them
 *   next. Every write that settles a source (failed, indexed, indexing given up) removes `sweep` and `due_at`.
 */
export const buildResearchSourceEntity = () => new Entity({
  model: { entity: "research_source", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    source_type: { type: ["interview", "support_ticket", "survey", "usage_data", "feedback", "other"] as const, required: true },
    title: { type: "string", required: true },
    file_name: { type: "string", required: true },
    file_key: { type: "string", required: true },
    file_type: { type: "string", required: true },
    file_kind: { type: "string", required: true },
    file_size_bytes: { type: "number", required: true },
    upload_method: { type: ["multipart", "presigned"] as const, required: true },
    processing_status: { type: ["pending", "completed", "failed"] as const, required: true },
    processing_error: { type: "string" },
    /** Bumped on every (re)processing start, so a stale execution cannot overwrite a newer one. */
    processing_attempt: { type: "number", required: true, default: 0 },
    char_count: { type: "number" },
    unit_count: { type: "number" },
    pages: { type: "number" },
    engine: { type: "string" },
    indexed: { type: "boolean", default: false },
    /** SOURCE_DUE while the source is unsettled (in the sweeper's sparse index); absent once settled. */
    sweep: { type: [SOURCE_DUE] as const },
    /** ISO time from which the recovery sweeper looks at the source; present only while `sweep` is. */
    due_at: { type: "string" },
    /** Executions the sweeper started again after finding none running (bounded: Config.sourceMaxRecoveries). */
    recoveries: { type: "number" },
    /** Indexing attempts the sweeper made after the execution's own Index step did not finish. */
    index_attempts: { type: "number" },
    created_by: { type: "string", required: true },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
    processed_at: { type: "string" },
    updated_at: { type: "string", required: true, default: () => new Date().toISOString(), set: () => new Date().toISOString(), watch: "*" },
  },
  indexes: {
    byWorkspace: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: ["id"], template: "source#${id}", casing: "none" },
    },
    byId: {
      index: "gsi1",
      pk: { field: "gsi1pk", composite: ["id"], template: "source#${id}", casing: "none" },
      sk: { field: "gsi1sk", composite: [], template: "source", casing: "none" },
    },
    due: {
      index: "gsi3",
      condition: (attr) => attr.sweep === SOURCE_DUE && typeof attr.due_at === "string",
      pk: { field: "gsi3pk", composite: ["sweep"], template: "source#${sweep}", casing: "none" },
      sk: { field: "gsi3sk", composite: ["due_at"], template: "due#${due_at}", casing: "none" },
    },
  },
});
export type ResearchSourceEntity = ReturnType<typeof buildResearchSourceEntity>;
