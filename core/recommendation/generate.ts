import { randomUUID } from "node:crypto";
import { db } from "../db/service";
import { idFor, runIdFor, type AgentWrite } from "../db/agent-write";
import { requireActiveSubscription } from "../billing";
import { productContext, requireMember } from "../workspace";
import { recordRun } from "../agent";
import { reserveAlongside } from "../billing/charge";
import { model } from "../ai/select";
import { loadInsights, toEngineInput } from "../insight/inputs";
import { recommendationEngine } from "./engine";
import { toView, type RecommendationItem } from "./index";
import type { GenerateInput } from "./schema";

/**
 * `POST /api/recommendations/generate` (spec 01): 3 to 7 prioritized recommendations from the given insights and
 * focus areas, stored as `suggested` with their priority rank, and the prioritization summary. Needs an active or
 * trialing subscription; recorded as a `recommendation` agent run.
 */
export async function generate(userId: string, input: GenerateInput, opts: AgentWrite = {}) {
  await requireMember(userId, input.workspace_id);
  await requireActiveSubscription(input.workspace_id);
  const engine = recommendationEngine(await model());
  // The run's reservation is made while the insights and product context are read (an unknown id releases it).
  const {
    value: [insights, product],
    charge,
  } = await reserveAlongside({ workspaceId: input.workspace_id, runId: runIdFor(opts) ?? randomUUID(), engine: engine.kind }, () =>
    Promise.all([loadInsights(input.workspace_id, input.insight_ids).then((l) => l.map(toEngineInput)), productContext(input.workspace_id)]),
  );
  const { result } = await recordRun(
    { workspaceId: input.workspace_id, userId, agentType: "recommendation", toolName: "generate_recommendations", engine: engine.kind, input: { insight_ids: input.insight_ids, focus_areas: input.focus_areas }, charge },
    async (usage) => {
      const out = await engine.generate({ insights, focus_areas: input.focus_areas, product });
      if (out.usage) usage.add(out.usage);
      return out;
    },
    (out) => ({ titles: out.result.recommendations.map((r) => r.title) }),
  );
  const items = result.recommendations.map((r, i) => ({
    ...r,
    // Ids derived from an approved pending action make a replay overwrite its own items instead of adding more.
    id: opts.pendingActionId ? idFor(opts.pendingActionId, `recommendation#${i}`) : randomUUID(),
    workspace_id: input.workspace_id,
    status: "suggested" as const,
    priority_rank: i + 1,
    origin: opts.pendingActionId ? "agent" : "generate",
    created_by: userId,
    ...(opts.pendingActionId ? { pending_action_id: opts.pendingActionId } : {}),
  }));
  await db().entities.recommendation.put(items).go();
  const { data } = await db()
    .entities.recommendation.get(items.map((r) => ({ workspace_id: input.workspace_id, id: r.id })))
    .go({ consistent: true });
  const recommendations = (data as RecommendationItem[]).sort((a, b) => (a.priority_rank ?? 0) - (b.priority_rank ?? 0)).map(toView);
  return { recommendations, count: recommendations.length, prioritization_summary: result.prioritization_summary };
}
