import * as z from "zod";

/** Issue types (spec 02 Admin observability: "Issue types named: stale_source, contradictory_insights"). */
export const EntropyIssueType = z.enum(["stale_source", "contradictory_insights"]).meta({ id: "EntropyIssueType" });
export type EntropyIssueType = z.infer<typeof EntropyIssueType>;

/** How much an issue matters (docs/decisions.md "Entropy scanner": severities). */
export const EntropySeverity = z.enum(["low", "medium", "high"]).meta({ id: "EntropySeverity" });
export type EntropySeverity = z.infer<typeof EntropySeverity>;

export const EntropyTypeCount = z
  .object({ issue_type: EntropyIssueType, severity: EntropySeverity, count: z.int() })
  .meta({ id: "EntropyTypeCount" });
export type EntropyTypeCount = z.infer<typeof EntropyTypeCount>;

/** One issue of a scan. */
export const EntropyIssue = z
  .object({
    id: z.uuid().describe("stable across scans: the same stale source or the same pair keeps its id"),
    scan_id: z.uuid(),
    workspace_id: z.uuid(),
    issue_type: EntropyIssueType,
    severity: EntropySeverity,
    detail: z.string().describe("why, in words an admin can act on"),
    source_id: z.uuid().nullable().describe("stale_source: the source"),
    insight_ids: z.array(z.uuid()).describe("contradictory_insights: the pair; stale_source: the active insights resting on it (at most 200; evidence.insight_count counts them all)"),
    evidence: z
      .record(z.string(), z.unknown())
      .describe("stale_source: {reason, age_days, stale_after_days, insight_count}; contradictory_insights: {similarity, rules: [{rule, terms}]}"),
    detected_at: z.string(),
  })
  .meta({ id: "EntropyIssue" });
export type EntropyIssue = z.infer<typeof EntropyIssue>;

/** One completed scan with its counts. */
export const EntropyScan = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    scanned_at: z.string(),
    trigger: z.enum(["on_demand", "scheduled", "cycle"]),
    insight_count: z.int().describe("active (not archived) insights compared"),
    source_count: z.int(),
    issue_count: z.int(),
    high_severity_count: z.int(),
    by_type: z.array(EntropyTypeCount),
    truncated: z.boolean().describe("a detector found more issues than a scan keeps (500 per type; the weightiest are kept)"),
    duration_ms: z.int(),
    embedder_id: z.string().nullable().describe("the embedder that compared insights; null: rules on shared words only"),
  })
  .meta({ id: "EntropyScan" });
export type EntropyScan = z.infer<typeof EntropyScan>;

/** `POST /api/admin/quality/entropy/scan` (ours: issue #21 asks for an on-demand scan). */
export const EntropyScanInput = z.object({ workspace_id: z.uuid() }).strict().meta({ id: "EntropyScanInput" });
export type EntropyScanInput = z.infer<typeof EntropyScanInput>;

export const EntropyScanResult = z
  .object({ scan: EntropyScan, issues: z.array(EntropyIssue) })
  .meta({ id: "EntropyScanResult" });
export type EntropyScanResult = z.infer<typeof EntropyScanResult>;

/** `GET /api/admin/quality/entropy/issues` (ours): the active issues, those of the workspace's latest scan. */
export const EntropyIssuesQuery = z.object({
  workspace_id: z.uuid(),
  issue_type: EntropyIssueType.optional(),
  severity: EntropySeverity.optional(),
});
export type EntropyIssuesQuery = z.infer<typeof EntropyIssuesQuery>;

export const EntropyIssueList = z
  .object({
    scan: EntropyScan.nullable().describe("the latest scan; null before the first"),
    issues: z.array(EntropyIssue).describe("high first, then medium, then low"),
    total: z.int(),
  })
  .meta({ id: "EntropyIssueList" });
export type EntropyIssueList = z.infer<typeof EntropyIssueList>;
