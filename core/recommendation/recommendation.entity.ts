import { Entity } from "electrodb";

/** A recommendation (spec 01 Recommendation); status moves only through the transition table. */
export const buildRecommendationEntity = () => new Entity({
  model: { entity: "recommendation", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    title: { type: "string", required: true },
    description: { type: "string", required: true },
    addresses_insight_ids: { type: "list", items: { type: "string" }, default: () => [] },
    rationale: { type: "string" },
    effort_estimate: { type: ["trivial", "small", "medium", "large", "xlarge"] as const },
    effort_weeks: { type: "number" },
    impact_score: { type: "number" },
    success_metrics: { type: "list", items: { type: "string" }, default: () => [] },
    target_repo: { type: "string" },
    status: { type: ["suggested", "accepted", "in_progress", "implemented", "rejected"] as const, required: true, default: "suggested" },
    user_notes: { type: "string" },
    /** Priority rank from the generation that made it (1 = first), when generated. */
    priority_rank: { type: "number" },
    origin: { type: "string", default: "manual" },
    /** The pending action whose approved execution wrote this item (DESIGN.md 6.2: agent writes are traceable). */
    pending_action_id: { type: "string" },
    created_by: { type: "string" },
    status_changed_at: { type: "string" },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
    updated_at: { type: "string", required: true, default: () => new Date().toISOString(), set: () => new Date().toISOString(), watch: "*" },
  },
  indexes: {
    byWorkspace: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: ["id"], template: "recommendation#${id}", casing: "none" },
    },
    byId: {
      index: "gsi1",
      pk: { field: "gsi1pk", composite: ["id"], template: "recommendation#${id}", casing: "none" },
      sk: { field: "gsi1sk", composite: [], template: "recommendation", casing: "none" },
    },
  },
});
export type RecommendationEntity = ReturnType<typeof buildRecommendationEntity>;
