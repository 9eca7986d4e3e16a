import { Entity } from "electrodb";

/**
 * Per-workspace usage counters that plan limits are enforced against. Changed in the same transaction as the
 * resource they count, with a condition on the limit, so concurrent requests cannot overshoot it.
 */
export const buildUsageEntity = () => new Entity({
  model: { entity: "usage", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true },
    research_sources: { type: "number", default: 0 },
    /** Members of the workspace, owner included: the seats counter (core/billing/counters.ts). Unset on older items. */
    members: { type: "number" },
    /** Documents created in `documents_period` (the owner's billing period start): the documents-a-month counter. */
    documents: { type: "number" },
    documents_period: { type: "string" },
    /**
     * Manual integration syncs answered 2xx in `integration_syncs_period` (the owner's billing period start): the
     * dashboard's `integration_sync` usage (core/billing/usage-counters.ts). Unset until the first sync.
     */
    integration_syncs: { type: "number" },
    integration_syncs_period: { type: "string" },
    /** Bumped on every insight write, so search caches of the workspace's vectors know when to reload. */
    insights_version: { type: "number", default: 0 },
  },
  indexes: {
    byWorkspace: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: [], template: "usage", casing: "none" },
    },
  },
});
export type UsageEntity = ReturnType<typeof buildUsageEntity>;
