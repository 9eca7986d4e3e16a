import { defineRoutes, type RouteSpec } from "../../lib/route";
import {
  BatchInsightsInput,
  BatchInsightsResult,
  CreateInsightInput,
  Insight,
  InsightIdParam,
  InsightList,
  ListInsightsQuery,
  SearchInsightsInput,
  SearchResult,
  UpdateInsightInput,
} from "../../../core/insight/schema";

/** Insights (spec 01 Insights). */
export const insightsRoutes = defineRoutes({
  "insights.create": {
    method: "POST", path: "/api/insights", group: "insights", access: "user", workspaceScope: "body",
    summary: "Create an insight by hand",
    body: CreateInsightInput,
    responses: { 201: Insight },
  },
  "insights.list": {
    method: "GET", path: "/api/insights", group: "insights", access: "user", workspaceScope: "query",
    summary: "Insights of a workspace, newest first; archived hidden unless is_archived is given",
    query: ListInsightsQuery,
    responses: { 200: InsightList },
  },
  "insights.batch": {
    method: "POST", path: "/api/insights/batch", group: "insights", access: "user", workspaceScope: "body",
    summary: "Archive or unarchive several insights (503 with updated_count and insight_ids when the table stayed busy for some; the same request again finishes the rest)",
    body: BatchInsightsInput,
    // Writes still throttled after their retries: the 503 lists the insights that were changed.
    errors: ["SERVICE_UNAVAILABLE"],
    responses: { 200: BatchInsightsResult },
  },
  "insights.search": {
    method: "POST", path: "/api/insights/search", group: "insights", access: "user", workspaceScope: "body",
    summary: "Rank insights by semantic relevance (text matching when embeddings are unavailable); archived included",
    body: SearchInsightsInput,
    rateLimit: "insights_search",
    errors: ["SERVICE_UNAVAILABLE"],
    responses: { 200: SearchResult },
  },
  "insights.get": {
    method: "GET", path: "/api/insights/{insight_id}", group: "insights", access: "user", workspaceScope: "resource",
    summary: "One insight",
    params: InsightIdParam,
    responses: { 200: Insight },
  },
  "insights.update": {
    method: "PATCH", path: "/api/insights/{insight_id}", group: "insights", access: "user", workspaceScope: "resource",
    summary: "Change title, description, severity, is_archived, notes or rating",
    params: InsightIdParam,
    body: UpdateInsightInput,
    responses: { 200: Insight },
    // A text change whose title or description changed meanwhile (the search vector is of the text read).
    errors: ["CONFLICT"],
  },
  "insights.delete": {
    method: "DELETE", path: "/api/insights/{insight_id}", group: "insights", access: "user", workspaceScope: "resource",
    summary: "Delete an insight permanently",
    params: InsightIdParam,
    responses: { 204: null },
  },
} satisfies Record<string, RouteSpec>);
