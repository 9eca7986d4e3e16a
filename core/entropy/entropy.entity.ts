import { Entity } from "electrodb";

/*
 * Entropy scans live in the workspace partition (deleting the workspace removes them):
 *   entropyscan#<scanned_at>#<scan id>     one completed scan with its counts, newest last (Query desc for the latest)
 *   entropyissue#<scan id>#<issue id>      the issues that scan found (one begins_with Query per scan)
 * A scan's issues are written before the scan item, so a scan that is visible always has all its issues; a scan that
 * crashed half-way leaves issues no scan names, which their TTL removes. Both expire ENTROPY_RETENTION_DAYS after
 * the scan (core/entropy/settings.ts).
 */

const wsKey = { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" } as const;

/** One completed entropy scan of a workspace (issue #21; spec 02 Admin observability, entropy). */
export const buildEntropyScanEntity = () => new Entity({
  model: { entity: "entropy_scan", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    scanned_at: { type: "string", required: true },
    /** What started it: the admin endpoint, the scheduled scanner, or the overnight research cycle. */
    trigger: { type: ["on_demand", "scheduled", "cycle"] as const, required: true },
    /** The member who asked for an on-demand scan. */
    requested_by: { type: "string" },
    insight_count: { type: "number", required: true },
    source_count: { type: "number", required: true },
    issue_count: { type: "number", required: true },
    high_count: { type: "number", required: true },
    medium_count: { type: "number", required: true },
    low_count: { type: "number", required: true },
    /** [{issue_type, severity, count}] of this scan's issues. */
    by_type: { type: "any", required: true },
    /** True when a detector found more issues than a scan keeps (the weightiest are kept). */
    truncated: { type: "boolean", required: true, default: false },
    duration_ms: { type: "number", required: true },
    /** The embedder whose vectors compared the insights (absent when none was available: rules only). */
    embedder_id: { type: "string" },
    /** Epoch seconds after which DynamoDB's TTL deletes the scan. */
    ttl: { type: "number", required: true },
  },
  indexes: {
    byWorkspace: { pk: wsKey, sk: { field: "sk", composite: ["scanned_at", "id"], template: "entropyscan#${scanned_at}#${id}", casing: "none" } },
  },
});
export type EntropyScanEntity = ReturnType<typeof buildEntropyScanEntity>;

/** One issue an entropy scan found: a stale source or a pair of contradictory insights. */
export const buildEntropyIssueEntity = () => new Entity({
  model: { entity: "entropy_issue", version: "1", service: "r2d" },
  attributes: {
    /** Stable across scans: derived from the issue's kind and subject (the same contradiction keeps its id). */
    id: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    scan_id: { type: "string", required: true },
    issue_type: { type: ["stale_source", "contradictory_insights"] as const, required: true },
    severity: { type: ["low", "medium", "high"] as const, required: true },
    /** Why, in words an admin can act on. */
    detail: { type: "string", required: true },
    source_id: { type: "string" },
    insight_ids: { type: "list", items: { type: "string" }, default: () => [] },
    /** The detector's figures: reason, age in days, similarity, the rules that fired. */
    evidence: { type: "any" },
    detected_at: { type: "string", required: true },
    ttl: { type: "number", required: true },
  },
  indexes: {
    byScan: { pk: wsKey, sk: { field: "sk", composite: ["scan_id", "id"], template: "entropyissue#${scan_id}#${id}", casing: "none" } },
  },
});
export type EntropyIssueEntity = ReturnType<typeof buildEntropyIssueEntity>;
