import * as z from "zod";

/**
 * Insight types: the values the spec lists. We treat the set as closed (decision in docs/decisions.md) so
 * clients can rely on it; `user_behavior` is accepted as the spec lists it.
 */
export const InsightType = z.enum(["pain_point", "opportunity", "feature_request", "behavior", "user_behavior", "feedback_theme"]);
export const Severity = z.enum(["low", "medium", "high", "critical"]);

export const Quote = z.object({
  text: z.string().min(1).max(5000),
  source_id: z.uuid(),
  speaker: z.string().max(200).nullable().default(null),
});
export type Quote = z.infer<typeof Quote>;

export const Insight = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    insight_type: InsightType,
    title: z.string(),
    description: z.string(),
    source_ids: z.array(z.uuid()),
    quotes: z.array(Quote),
    frequency: z.int().describe("number of distinct sources mentioning it"),
    mention_count: z.int().describe("number of distinct mentions (survey responses, transcript turns, ...)"),
    severity: Severity,
    impact: z.string().nullable(),
    is_archived: z.boolean(),
    notes: z.string().nullable(),
    rating: z.int().min(1).max(5).nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: "Insight" });
export type Insight = z.infer<typeof Insight>;

/**
 * Largest insight a request may create, in UTF-8 bytes of its JSON (well under DynamoDB's 400 KB item limit). Each
 * field's own maximum allows more (100 quotes of 5,000 characters), so core/insight `create` checks the whole.
 */
export const MAX_INSIGHT_BYTES = 200 * 1024;

export const CreateInsightInput = z
  .object({
    workspace_id: z.uuid(),
    insight_type: InsightType,
    title: z.string().trim().min(1).max(300),
    description: z.string().trim().min(1).max(10_000),
    source_ids: z.array(z.uuid()).max(500).default([]),
    quotes: z.array(Quote).max(100).default([]),
    frequency: z.int().min(1).optional(),
    severity: Severity.default("medium"),
    impact: z.string().max(5000).optional(),
  })
  .strict()
  .meta({ id: "CreateInsightInput" });
export type CreateInsightInput = z.infer<typeof CreateInsightInput>;

/** PATCH: title, description, severity, is_archived (spec), notes and rating 1-5 (DESIGN.md section 5). */
export const UpdateInsightInput = z
  .object({
    title: z.string().trim().min(1).max(300).optional(),
    description: z.string().trim().min(1).max(10_000).optional(),
    severity: Severity.optional(),
    is_archived: z.boolean().optional(),
    notes: z.string().max(10_000).nullable().optional(),
    rating: z.int().min(1).max(5).nullable().optional(),
  })
  .strict()
  .meta({ id: "UpdateInsightInput" });
export type UpdateInsightInput = z.infer<typeof UpdateInsightInput>;

export const ListInsightsQuery = z.object({
  workspace_id: z.uuid(),
  insight_type: InsightType.optional(),
  severity: Severity.optional(),
  is_archived: z.stringbool().optional(),
  min_frequency: z.coerce.number().int().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(200),
  offset: z.coerce.number().int().min(0).default(0),
});
export type ListInsightsQuery = z.infer<typeof ListInsightsQuery>;

export const InsightList = z.object({ insights: z.array(Insight), total: z.int() }).meta({ id: "InsightList" });

export const SearchInsightsInput = z
  .object({
    workspace_id: z.uuid(),
    query: z.string().trim().min(1).max(1000),
    insight_type: InsightType.optional(),
    severity: Severity.optional(),
    min_frequency: z.int().min(1).optional(),
    limit: z.int().min(1).max(100).default(10),
  })
  .strict()
  .meta({ id: "SearchInsightsInput" });
export type SearchInsightsInput = z.infer<typeof SearchInsightsInput>;

export const SearchResult = z
  .object({
    insights: z.array(Insight.extend({ score: z.number().describe("relevance, higher is better") })),
    total: z.int(),
    query: z.string(),
    mode: z.enum(["semantic", "text"]).describe("semantic ranking, or the text fallback when embeddings are unavailable"),
  })
  .meta({ id: "InsightSearchResult" });

export const BatchInsightsInput = z
  .object({
    workspace_id: z.uuid(),
    insight_ids: z.array(z.uuid()).min(1).max(500),
    action: z.enum(["archive", "unarchive"]),
  })
  .strict()
  .meta({ id: "BatchInsightsInput" });
export type BatchInsightsInput = z.infer<typeof BatchInsightsInput>;

export const BatchInsightsResult = z.object({ updated_count: z.int(), insight_ids: z.array(z.uuid()) }).meta({ id: "BatchInsightsResult" });

export const InsightIdParam = z.object({ insight_id: z.uuid() });

export const SynthesizeInput = z
  .object({
    workspace_id: z.uuid(),
    source_ids: z.array(z.uuid()).min(1).max(200),
    synthesis_type: z.enum(["comprehensive", "quick"]).default("comprehensive"),
  })
  .strict()
  .meta({ id: "SynthesizeInput" });
export type SynthesizeInput = z.infer<typeof SynthesizeInput>;

export const SynthesizeResult = z
  .object({
    insights: z.array(Insight),
    insight_ids: z.array(z.uuid()),
    summary: z.string(),
    created_ids: z.array(z.uuid()),
    merged: z.array(z.object({ insight_id: z.uuid(), title: z.string() })).describe("existing insights the new findings were merged into"),
    engine: z.enum(["local", "bedrock", "openai-compatible"]),
  })
  .meta({ id: "SynthesizeResult" });

