import * as z from "zod";
import { EntropyTypeCount } from "../entropy/schema";

/**
 * Agent types stored on agent runs: spec 02's four (synthesis, recommendation, drafting, chat) plus ours,
 * `block_action` (expand, challenge, simulate a block) and `embedding` (ingestion's indexing; internal, not charged).
 */
export const AgentRunType = z.enum(["synthesis", "recommendation", "drafting", "chat", "block_action", "embedding"]).meta({ id: "AgentRunType" });
export const AgentRunStatus = z.enum(["success", "failed", "partial"]).meta({ id: "AgentRunStatus" });

/** `GET /api/admin/agent-runs` (spec 02 Admin observability; Limits: limit default 50, max 100). */
export const AgentRunsQuery = z.object({
  workspace_id: z.uuid(),
  agent_type: AgentRunType.optional(),
  status: AgentRunStatus.optional(),
  tool_name: z.string().trim().min(1).max(200).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  offset: z.coerce.number().int().min(0).default(0),
});
export type AgentRunsQuery = z.infer<typeof AgentRunsQuery>;

/** Spec 02 "Agent run (admin)": exactly its fields. */
export const AgentRunView = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    agent_type: AgentRunType,
    tool_name: z.string().nullable(),
    input_data: z.unknown().describe("what the run was asked (a clipped summary: over 20,000 characters of JSON it is {truncated, preview})"),
    output_data: z.unknown().describe("what it produced, clipped the same way; null when it failed"),
    latency_ms: z.number().describe("milliseconds"),
    tokens_used: z.int().describe("input plus output tokens of every model call of the run"),
    cost_usd: z.number().describe("model cost in USD (0 on the local engine)"),
    status: AgentRunStatus,
    error_message: z.string().nullable(),
    executed_at: z.string().describe("ISO time the run ended"),
  })
  .meta({ id: "AgentRun" });
export type AgentRunView = z.infer<typeof AgentRunView>;

export const AgentRunsPage = z
  .object({
    runs: z.array(AgentRunView).describe("newest first"),
    total: z.int().describe("runs matching the filters"),
    limit: z.int(),
    offset: z.int(),
  })
  .meta({ id: "AgentRunsPage" });
export type AgentRunsPage = z.infer<typeof AgentRunsPage>;

/** The admin endpoints that take only the workspace. */
export const ObservabilityWorkspaceQuery = z.object({ workspace_id: z.uuid() });
export type ObservabilityWorkspaceQuery = z.infer<typeof ObservabilityWorkspaceQuery>;

/** `GET /api/admin/agent-runs/stats`: every run of the workspace, all time. */
export const AgentRunStats = z
  .object({
    total_runs: z.int(),
    total_cost_usd: z.number(),
    runs_by_type: z.record(z.string(), z.int()).describe("agent_type → runs (types without runs are absent)"),
    runs_by_status: z.record(z.string(), z.int()).describe("status → runs"),
  })
  .meta({ id: "AgentRunStats" });
export type AgentRunStats = z.infer<typeof AgentRunStats>;

/** Spec 02 Limits: admin quality days are 7, 30 or 90 (default 30). */
const Days = z.coerce
  .number()
  .pipe(z.union([z.literal(7), z.literal(30), z.literal(90)], { error: "days must be 7, 30 or 90" }))
  .default(30);

export const QualityQuery = z.object({ workspace_id: z.uuid(), days: Days });
export type QualityQuery = z.infer<typeof QualityQuery>;

const rate = () => z.number().min(0).max(1).nullable();
const pct = () => z.number().min(0).max(100).nullable();

/** `GET /api/admin/quality/rqs` (spec 02; docs/decisions.md "Admin observability"). */
export const RqsDashboard = z
  .object({
    avg_rqs: z.number().nullable().describe("mean research quality score (0–100) of the workspace's judged runs in the window; null without any"),
    contract_pass_rate: rate().describe("share (0–1) of the judged runs whose contract passed"),
    verifier_pass_rate: rate().describe("share (0–1) of the judged runs the verifier passed"),
    daily_trend: z
      .array(z.object({ date: z.string().describe("UTC day, YYYY-MM-DD"), avg_rqs: z.number().nullable(), contract_pass_pct: pct(), verifier_pass_pct: pct() }))
      .describe("one entry per UTC day of the window, oldest first; nulls on days without judged runs"),
    by_agent_type: z.array(z.object({ agent_type: AgentRunType, avg_rqs: z.number() })),
    worst_workspaces: z
      .array(z.object({ workspace_id: z.uuid(), workspace_name: z.string(), avg_rqs: z.number(), run_count: z.int(), verifier_fail_count: z.int() }))
      .describe("the caller's workspaces with judged runs in the window, lowest average first, at most 5"),
  })
  .meta({ id: "RqsDashboard" });
export type RqsDashboard = z.infer<typeof RqsDashboard>;

const TagCount = z.object({ tag: z.string(), count: z.int() });

/** `GET /api/admin/quality/feedback` (spec 02; from message feedback, core/chat). */
export const FeedbackDashboard = z
  .object({
    positive_rate: rate().describe("share (0–1) of ratings in the window that are positive"),
    avg_rating: z.number().min(-1).max(1).nullable().describe("mean rating with positive = 1 and negative = -1"),
    rated_count: z.int().describe("ratings given in the window (one per rated assistant message)"),
    unrated_count: z.int().describe("assistant messages written in the window that nobody rated"),
    daily_trend: z
      .array(z.object({ date: z.string(), positive_count: z.int(), negative_count: z.int() }))
      .describe("one entry per UTC day of the window, oldest first"),
    top_positive_tags: z.array(TagCount).describe("tags of positive ratings, most used first, at most 10"),
    top_negative_tags: z.array(TagCount).describe("tags of negative ratings, most used first, at most 10"),
    worst_workspaces: z
      .array(z.object({ workspace_id: z.uuid(), workspace_name: z.string(), positive_rate: z.number(), total_rated: z.int() }))
      .describe("the caller's workspaces with ratings in the window, lowest positive rate first, at most 5"),
  })
  .meta({ id: "FeedbackDashboard" });
export type FeedbackDashboard = z.infer<typeof FeedbackDashboard>;

/** `GET /api/admin/quality/entropy` (spec 02; core/entropy). */
export const EntropyDashboard = z
  .object({
    total_active_issues: z.int().describe("issues of the workspace's latest scan"),
    high_severity_count: z.int(),
    affected_workspaces: z.int().describe("the caller's workspaces whose latest scan found an issue"),
    by_type: z.array(EntropyTypeCount),
    worst_workspaces: z
      .array(
        z.object({
          workspace_id: z.uuid(),
          workspace_name: z.string(),
          high_count: z.int(),
          medium_count: z.int(),
          low_count: z.int(),
          last_scanned_at: z.string(),
        }),
      )
      .describe("the caller's workspaces with issues in their latest scan, most high, then medium, then low first, at most 5"),
    recent_scans: z
      .array(z.object({ workspace_id: z.uuid(), workspace_name: z.string(), scanned_at: z.string(), issue_count: z.int(), high_severity_count: z.int() }))
      .describe("the newest scans of the caller's workspaces, newest first, at most 10"),
  })
  .meta({ id: "EntropyDashboard" });
export type EntropyDashboard = z.infer<typeof EntropyDashboard>;
