import { randomUUID } from "node:crypto";
import { Errors } from "../error";
import { db } from "../db/service";
import { runIdFor, type AgentWrite } from "../db/agent-write";
import { requireActiveSubscription } from "../billing";
import { productContext, requireMember } from "../workspace";
import { recordRun } from "../agent";
import { reserveAlongside } from "../billing/charge";
import { model } from "../ai/select";
import { allOf } from "../insight";
import { loadInsights, toEngineInput } from "../insight/inputs";
import { toView as recommendationView } from "../recommendation";
import { documentEngine } from "./engine";
import { create, view, type DocumentItem, type DocumentWritten } from "./index";
import type { DraftInput } from "./schema";

/** Insights a draft without a recommendation or explicit ids is grounded in: the most widespread, at most this many. */
const DEFAULT_DRAFT_INSIGHTS = 10;

/**
 * `POST /api/documents/draft` (spec 01): draft a document of any type from a recommendation, its insights and their
 * quotes, plus the user's instructions; stored as a draft with an `ai_draft` revision. Without a recommendation or
 * insight ids, the workspace's most widespread insights ground it. Recorded as a `drafting` agent run.
 * For an approved pending action (`opts`, DESIGN.md 6.2) the document is created under `opts.id`, it and its
 * revision carry the action's id, and `opts.settle` commits with them (see `create`).
 * The recommendation's `addresses_insight_ids` (used when the caller sends no `insight_ids`) may name insights deleted
 * since; those are left out rather than refused.
 * @throws AppError FORBIDDEN, SUBSCRIPTION_REQUIRED (402), NOT_FOUND (recommendation), USAGE_LIMIT_EXCEEDED (402),
 *   VALIDATION_ERROR (422) for unknown ids in the caller's `insight_ids`; SettlementRefused when the executor lost the
 *   action meanwhile.
 */
export async function draft(userId: string, input: DraftInput, opts: AgentWrite<DocumentWritten> = {}) {
  await requireMember(userId, input.workspace_id);
  await requireActiveSubscription(input.workspace_id);
  if (opts.id) {
    // Under a derived id (an approved action's, a background task's step), a replay finds the first run's draft
    // before it drafts and charges again.
    const { data } = await db().entities.document.get({ workspace_id: input.workspace_id, id: opts.id }).go({ consistent: true });
    if (data) return view(data as DocumentItem);
  }
  let recommendation: ReturnType<typeof recommendationView> | undefined;
  if (input.recommendation_id) {
    const { data } = await db().entities.recommendation.get({ workspace_id: input.workspace_id, id: input.recommendation_id }).go({ consistent: true });
    if (!data) throw Errors.notFound("Recommendation");
    recommendation = recommendationView(data);
  }
  // Ids the caller names must all be insights of the workspace (422 at body.insight_ids). Ids taken from the
  // recommendation may name insights deleted since (a recommendation keeps them, docs/decisions.md): those are left
  // out, since the caller sent no insight_ids to correct.
  const ids = input.insight_ids ?? recommendation?.addresses_insight_ids;
  const skipMissing = input.insight_ids === undefined;
  const engine = documentEngine(await model());
  // The run's reservation is made while the insights and product context are read (an unknown id releases it).
  const {
    value: [insights, product],
    charge,
  } = await reserveAlongside({ workspaceId: input.workspace_id, runId: runIdFor(opts) ?? randomUUID(), engine: engine.kind }, () =>
    Promise.all([
      ids
        ? loadInsights(input.workspace_id, ids, "insight_ids", { skipMissing })
        : allOf(input.workspace_id).then((all) =>
            all
              .filter((i) => !i.is_archived)
              .sort((a, b) => b.frequency - a.frequency || b.mention_count - a.mention_count)
              .slice(0, DEFAULT_DRAFT_INSIGHTS),
          ),
      productContext(input.workspace_id),
    ]),
  );
  // The document is stored inside the run: the run is charged as a success only once its draft is stored, so a
  // create that fails (or a process that dies before it) is not charged as a draft delivered.
  return recordRun(
    { workspaceId: input.workspace_id, userId, agentType: "drafting", toolName: "draft_document", engine: engine.kind, input: { ...input }, charge },
    async (usage) => {
      const out = await engine.draft({
        document_type: input.document_type,
        recommendation: recommendation
          ? {
              id: recommendation.id,
              title: recommendation.title,
              description: recommendation.description,
              addresses_insight_ids: recommendation.addresses_insight_ids,
              rationale: recommendation.rationale ?? "",
              effort_estimate: recommendation.effort_estimate ?? "medium",
              effort_weeks: recommendation.effort_weeks ?? 2,
              impact_score: recommendation.impact_score ?? 0.5,
              success_metrics: recommendation.success_metrics,
              ...(recommendation.target_repo ? { target_repo: recommendation.target_repo } : {}),
            }
          : undefined,
        insights: insights.map(toEngineInput),
        user_instructions: input.user_instructions,
        product,
      });
      // Kept before the create: an approved action's attempt that dies from here on is still charged it, and the row's
      // `spent` write cannot race the create's transaction on the same row.
      if (out.usage) await usage.add(out.usage);
      usage.beforeWrite();
      return create(
        userId,
        {
          workspace_id: input.workspace_id,
          document_type: input.document_type,
          title: out.result.title,
          content: out.result.content,
          related_recommendation_id: recommendation?.id,
          related_insight_ids: insights.map((i) => i.id),
        },
        { changeType: "ai_draft", metadata: { drafted_by: engine.kind, ...(input.user_instructions ? { user_instructions: input.user_instructions } : {}) }, ...opts },
      );
    },
    (doc) => ({ title: doc.title, chars: doc.content.length, document_id: doc.id }),
  );
}
