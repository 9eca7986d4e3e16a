import * as z from "zod";

/**
 * Shapes shared by the recommendation engines (local and Bedrock) and by the document engines (spec 01,
 * Insight and Recommendation resources). The lead's entities and endpoints build on these.
 */

/** Insight types named in spec 01 (the set is not declared closed, so engines accept any string). */
export const KNOWN_INSIGHT_TYPES = [
  "pain_point",
  "opportunity",
  "feature_request",
  "behavior",
  "user_behavior",
  "feedback_theme",
] as const;

export const Severity = z.enum(["low", "medium", "high", "critical"]);
export type Severity = z.infer<typeof Severity>;

/** One verbatim quote stored on an insight (spec 01 Insight.quotes). */
export const InsightQuote = z.object({
  text: z.string().min(1),
  source_id: z.string().min(1),
  speaker: z.string().nullable(),
});
export type InsightQuote = z.infer<typeof InsightQuote>;

/**
 * What the delivery engines need of an insight. `frequency` = distinct sources (spec 01), `mention_count` = distinct
 * mentions (DESIGN.md section 5), defaulting to the number of quotes when absent.
 */
export const InsightInput = z
  .object({
    id: z.string().min(1),
    title: z.string().min(1),
    description: z.string(),
    insight_type: z.string().min(1),
    severity: Severity,
    frequency: z.int().min(0),
    mention_count: z.int().min(0).optional(),
    quotes: z.array(InsightQuote),
  })
  .meta({ id: "InsightInput" });
export type InsightInput = z.infer<typeof InsightInput>;

export const EffortEstimate = z.enum(["trivial", "small", "medium", "large", "xlarge"]);
export type EffortEstimate = z.infer<typeof EffortEstimate>;

/** `org/repo` as on the code host, at most 255 characters (spec 01 Recommendation.target_repo, Limits). */
export const TargetRepo = z
  .string()
  .max(255)
  .regex(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/, "target_repo must have the form org/repo");

/**
 * A recommendation as generated (the spec's fields without id, workspace_id, status, created_at).
 * `impact_score` is 0.0..1.0; `effort_weeks` is in engineering weeks for one small team.
 */
export const RecommendationDraft = z
  .object({
    title: z.string().min(1).max(300),
    description: z.string().min(1),
    addresses_insight_ids: z.array(z.string()).optional(),
    rationale: z.string().optional(),
    effort_estimate: EffortEstimate.optional(),
    effort_weeks: z.number().min(0).optional(),
    impact_score: z.number().min(0).max(1).optional(),
    success_metrics: z.array(z.string()).optional(),
    target_repo: TargetRepo.optional(),
  })
  .meta({ id: "RecommendationDraft" });
export type RecommendationDraft = z.infer<typeof RecommendationDraft>;

/** Optional workspace product context (spec 01 Workspace fields). */
export const ProductContext = z.object({
  product_name: z.string().nullish(),
  product_description: z.string().nullish(),
  target_users: z.string().nullish(),
  current_stage: z.string().nullish(),
});
export type ProductContext = z.infer<typeof ProductContext>;

/** Input of recommendation generation (spec 01 `POST /api/recommendations/generate`, after the insights are loaded). */
export const GenerateRecommendationsInput = z.object({
  insights: z.array(InsightInput).min(1),
  focus_areas: z.array(z.string().min(1)).optional(),
  product: ProductContext.optional(),
});
export type GenerateRecommendationsInput = z.infer<typeof GenerateRecommendationsInput>;

/** Result of generation: 3 to 7 recommendations, best first, and a text explaining the order. */
export const GenerateRecommendationsResult = z.object({
  recommendations: z.array(RecommendationDraft).min(3).max(7),
  prioritization_summary: z.string().min(1),
});
export type GenerateRecommendationsResult = z.infer<typeof GenerateRecommendationsResult>;

/** Upper bounds of each effort bucket in weeks; `xlarge` is anything above `large`. */
export const EFFORT_BUCKET_MAX_WEEKS: Record<Exclude<EffortEstimate, "xlarge">, number> = {
  trivial: 0.5,
  small: 2,
  medium: 4,
  large: 8,
};

/** The effort bucket that contains `weeks` (trivial ≤ 0.5 < small ≤ 2 < medium ≤ 4 < large ≤ 8 < xlarge). */
export function effortFromWeeks(weeks: number): EffortEstimate {
  if (weeks <= EFFORT_BUCKET_MAX_WEEKS.trivial) return "trivial";
  if (weeks <= EFFORT_BUCKET_MAX_WEEKS.small) return "small";
  if (weeks <= EFFORT_BUCKET_MAX_WEEKS.medium) return "medium";
  if (weeks <= EFFORT_BUCKET_MAX_WEEKS.large) return "large";
  return "xlarge";
}
