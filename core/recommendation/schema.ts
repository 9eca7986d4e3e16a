import * as z from "zod";
import { RecommendationStatus } from "./status";
import { EffortEstimate, TargetRepo } from "./engine/types";

export { RecommendationStatus, EffortEstimate, TargetRepo };

export const Recommendation = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    title: z.string(),
    description: z.string(),
    addresses_insight_ids: z.array(z.uuid()),
    rationale: z.string().nullable(),
    effort_estimate: EffortEstimate.nullable(),
    effort_weeks: z.number().nullable(),
    impact_score: z.number().min(0).max(1).nullable(),
    success_metrics: z.array(z.string()),
    target_repo: z.string().nullable(),
    status: RecommendationStatus,
    user_notes: z.string().nullable(),
    priority_rank: z.int().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: "Recommendation" });
export type Recommendation = z.infer<typeof Recommendation>;

const fields = {
  title: z.string().trim().min(1).max(300),
  description: z.string().trim().min(1).max(20_000),
  addresses_insight_ids: z.array(z.uuid()).max(200),
  rationale: z.string().max(20_000),
  effort_estimate: EffortEstimate,
  effort_weeks: z.number().min(0).max(520),
  impact_score: z.number().min(0).max(1),
  success_metrics: z.array(z.string().trim().min(1).max(1000)).max(50),
  target_repo: TargetRepo,
};

export const CreateRecommendationInput = z
  .object({
    workspace_id: z.uuid(),
    title: fields.title,
    description: fields.description,
    addresses_insight_ids: fields.addresses_insight_ids.default([]),
    rationale: fields.rationale.optional(),
    effort_estimate: fields.effort_estimate.optional(),
    effort_weeks: fields.effort_weeks.optional(),
    impact_score: fields.impact_score.optional(),
    success_metrics: fields.success_metrics.default([]),
    target_repo: fields.target_repo.optional(),
  })
  .strict()
  .meta({ id: "CreateRecommendationInput" });
export type CreateRecommendationInput = z.infer<typeof CreateRecommendationInput>;

/** PATCH body (not shown by the spec): any resource field except status, which has its own endpoint. null clears. */
export const UpdateRecommendationInput = z
  .object({
    title: fields.title.optional(),
    description: fields.description.optional(),
    addresses_insight_ids: fields.addresses_insight_ids.optional(),
    rationale: fields.rationale.nullable().optional(),
    effort_estimate: fields.effort_estimate.nullable().optional(),
    effort_weeks: fields.effort_weeks.nullable().optional(),
    impact_score: fields.impact_score.nullable().optional(),
    success_metrics: fields.success_metrics.optional(),
    target_repo: fields.target_repo.nullable().optional(),
  })
  .strict()
  .meta({ id: "UpdateRecommendationInput" });
export type UpdateRecommendationInput = z.infer<typeof UpdateRecommendationInput>;

export const StatusChangeInput = z
  .object({ status: RecommendationStatus, user_notes: z.string().max(5000).optional() })
  .strict()
  .meta({ id: "RecommendationStatusChange" });
export type StatusChangeInput = z.infer<typeof StatusChangeInput>;

export const BatchStatusInput = z
  .object({
    workspace_id: z.uuid(),
    recommendation_ids: z.array(z.uuid()).min(1).max(200),
    status: RecommendationStatus,
    user_notes: z.string().max(5000).optional(),
  })
  .strict()
  .meta({ id: "RecommendationBatchStatus" });
export type BatchStatusInput = z.infer<typeof BatchStatusInput>;

export const BatchStatusResult = z
  .object({
    updated_count: z.int(),
    failed_count: z.int(),
    errors: z.array(
      z.object({ recommendation_id: z.uuid(), error: z.string(), valid_transitions: z.array(RecommendationStatus) }),
    ),
  })
  .meta({ id: "RecommendationBatchStatusResult" });

export const ListRecommendationsQuery = z.object({
  workspace_id: z.uuid(),
  status: RecommendationStatus.optional(),
  min_impact: z.coerce.number().min(0).max(1).optional(),
  effort_estimate: EffortEstimate.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(200),
  offset: z.coerce.number().int().min(0).default(0),
});
export type ListRecommendationsQuery = z.infer<typeof ListRecommendationsQuery>;

export const RecommendationList = z
  .object({ recommendations: z.array(Recommendation), total: z.int() })
  .meta({ id: "RecommendationList" });

export const GenerateInput = z
  .object({
    workspace_id: z.uuid(),
    insight_ids: z.array(z.uuid()).min(1).max(200),
    focus_areas: z.array(z.string().trim().min(1).max(200)).max(10).default([]),
  })
  .strict()
  .meta({ id: "GenerateRecommendationsInput" });
export type GenerateInput = z.infer<typeof GenerateInput>;

export const GenerateResult = z
  .object({ recommendations: z.array(Recommendation), count: z.int(), prioritization_summary: z.string() })
  .meta({ id: "GenerateRecommendationsResult" });

export const RecommendationIdParam = z.object({ recommendation_id: z.uuid() });
