import { Entity } from "electrodb";

/**
 * A research source (spec 01 Research source). The item holds metadata and status; the extracted text, transcript
 * and units live in S3 next to the file (`.../extraction.json`), because a transcript or survey export can pass
 * DynamoDB's 400 KB item limit.
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
  },
});
export type ResearchSourceEntity = ReturnType<typeof buildResearchSourceEntity>;
