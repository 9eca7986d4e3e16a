import { Entity } from "electrodb";

/** An insight (spec 01 Insight). Its embedding is kept on the item (base64 Float32) for semantic search. */
export const buildInsightEntity = () => new Entity({
  model: { entity: "insight", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    insight_type: { type: "string", required: true },
    title: { type: "string", required: true },
    description: { type: "string", required: true },
    source_ids: { type: "list", items: { type: "string" }, default: () => [] },
    quotes: {
      type: "list",
      default: () => [],
      items: {
        type: "map",
        properties: {
          text: { type: "string", required: true },
          source_id: { type: "string", required: true },
          speaker: { type: "string" },
        },
      },
    },
    frequency: { type: "number", required: true, default: 1 },
    mention_count: { type: "number", required: true, default: 1 },
    /**
     * Distinct mentions per source, written by synthesis (their sum is `mention_count`): a later synthesis of a known
     * source replaces its count instead of adding it again. Absent on manual insights and on those stored before it.
     */
    mentions_by_source: {
      type: "list",
      items: { type: "map", properties: { source_id: { type: "string", required: true }, count: { type: "number", required: true } } },
    },
    severity: { type: ["low", "medium", "high", "critical"] as const, required: true, default: "medium" },
    impact: { type: "string" },
    is_archived: { type: "boolean", required: true, default: false },
    notes: { type: "string" },
    rating: { type: "number" },
    /** Where it came from: "manual" or "synthesis". */
    origin: { type: "string", default: "manual" },
    /** The pending action whose approved execution wrote this item (DESIGN.md 6.2: agent writes are traceable). */
    pending_action_id: { type: "string" },
    /** base64 of a unit-length Float32Array, and the embedder that made it. */
    vector: { type: "string" },
    embedder_id: { type: "string" },
    /**
     * The search vector (core/insight/search-index.ts): the embedding of "title. description", int8 codes in base64
     * with their scale, and the embedder that made it. Written with the insight whenever its text is written; the
     * synthesis `vector` above (a centroid of mentions, for merging) is a different thing.
     */
    search_vector: { type: "string" },
    search_scale: { type: "number" },
    search_embedder_id: { type: "string" },
    created_by: { type: "string" },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
    updated_at: { type: "string", required: true, default: () => new Date().toISOString(), set: () => new Date().toISOString(), watch: "*" },
  },
  indexes: {
    byWorkspace: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: ["id"], template: "insight#${id}", casing: "none" },
    },
    byId: {
      index: "gsi1",
      pk: { field: "gsi1pk", composite: ["id"], template: "insight#${id}", casing: "none" },
      sk: { field: "gsi1sk", composite: [], template: "insight", casing: "none" },
    },
  },
});
export type InsightEntity = ReturnType<typeof buildInsightEntity>;
