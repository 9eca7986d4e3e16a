import { defineRoutes, type RouteSpec } from "../../lib/route";
import {
  AgentRunsPage,
  AgentRunsQuery,
  AgentRunStats,
  EntropyDashboard,
  FeedbackDashboard,
  ObservabilityWorkspaceQuery,
  QualityQuery,
  RqsDashboard,
} from "../../../core/observability/schema";
import { EntropyIssueList, EntropyIssuesQuery, EntropyScanInput, EntropyScanResult } from "../../../core/entropy/schema";

/**
 * Admin observability (spec 02 "Admin observability (workspace membership required)"; issue #21): members of the
 * workspace, 60 requests a minute per user (spec 02 Limits: admin endpoints), one window shared with every other
 * admin endpoint (`admin_plg`). The entropy scan and issue list are ours (issue #21 asks for an on-demand scan).
 */
export const observabilityRoutes = defineRoutes({
  "observability.agentRuns": {
    method: "GET", path: "/api/admin/agent-runs", group: "observability", access: "user", workspaceScope: "query",
    summary: "Agent runs of a workspace, newest first, filtered by agent_type, status and tool_name",
    query: AgentRunsQuery, rateLimit: "admin_plg",
    responses: { 200: AgentRunsPage },
  },
  "observability.agentRunStats": {
    method: "GET", path: "/api/admin/agent-runs/stats", group: "observability", access: "user", workspaceScope: "query",
    summary: "Run counts by type and status and the total model cost of a workspace's agent runs",
    query: ObservabilityWorkspaceQuery, rateLimit: "admin_plg",
    responses: { 200: AgentRunStats },
  },
  "observability.rqs": {
    method: "GET", path: "/api/admin/quality/rqs", group: "observability", access: "user", workspaceScope: "query",
    summary: "Research quality score, contract and verifier pass rates over 7, 30 or 90 days, with the caller's worst workspaces",
    query: QualityQuery, rateLimit: "admin_plg",
    responses: { 200: RqsDashboard },
  },
  "observability.feedback": {
    method: "GET", path: "/api/admin/quality/feedback", group: "observability", access: "user", workspaceScope: "query",
    summary: "What members thought of the copilot's answers (message feedback): rates, tags, trend, worst workspaces",
    query: QualityQuery, rateLimit: "admin_plg",
    responses: { 200: FeedbackDashboard },
  },
  "observability.entropy": {
    method: "GET", path: "/api/admin/quality/entropy", group: "observability", access: "user", workspaceScope: "query",
    summary: "Stale sources and contradictory insights found by the latest scans, with the caller's worst workspaces",
    query: ObservabilityWorkspaceQuery, rateLimit: "admin_plg",
    responses: { 200: EntropyDashboard },
  },
  "observability.entropyIssues": {
    method: "GET", path: "/api/admin/quality/entropy/issues", group: "observability", access: "user", workspaceScope: "query",
    summary: "The workspace's active entropy issues (those of its latest scan), high severity first",
    query: EntropyIssuesQuery, rateLimit: "admin_plg",
    responses: { 200: EntropyIssueList },
  },
  "observability.entropyScan": {
    method: "POST", path: "/api/admin/quality/entropy/scan", group: "observability", access: "user", workspaceScope: "body",
    summary: "Scan the workspace for stale sources and contradictory insights now, and store the scan",
    body: EntropyScanInput, rateLimit: "admin_plg",
    errors: ["CONFLICT", "SERVICE_UNAVAILABLE"],
    responses: { 200: EntropyScanResult },
  },
} satisfies Record<string, RouteSpec>);
