import { randomUUID } from "node:crypto";
import { db } from "../db/service";
import { getAll } from "../db/bulk";
import { asWrite, commitWrites, idFor, runIdFor, tagOf, type AgentWrite } from "../db/agent-write";
import { requireActiveSubscription } from "../billing";
import { productContext, requireMember } from "../workspace";
import { recordRun } from "../agent";
import { reserveAlongside } from "../billing/charge";
import { model } from "../ai/select";
import { loadInsights, toEngineInput } from "../insight/inputs";
import { recommendationEngine, type GenerateRecommendationsResult } from "./engine";
import { toView, type RecommendationItem } from "./index";
import type { GenerateInput } from "./schema";

/** Most recommendations one generation makes (the engines' output schema: 3 to 7). */
const MAX_GENERATED = 7;

/** What a generation hands its settlement (AgentWrite.settle): the run's result as the tool reports it. */
export interface GenerationWritten {
  recommendation_ids: string[];
  count: number;
  prioritization_summary: string;
}

/** The recommendations of a generation, by rank (strongly consistent). */
async function readSet(workspaceId: string, ids: string[]) {
  const data = await getAll(ids.map((id) => ({ workspace_id: workspaceId, id })), (keys) => db().entities.recommendation.get(keys).go({ consistent: true }));
  return (data as RecommendationItem[]).sort((a, b) => (a.priority_rank ?? 0) - (b.priority_rank ?? 0)).map(toView);
}

/**
 * `POST /api/recommendations/generate` (spec 01): 3 to 7 prioritized recommendations from the given insights and
 * focus areas, stored as `suggested` with their priority rank, and the prioritization summary. Needs an active or
 * trialing subscription; recorded as a `recommendation` agent run. The set is written whole or not at all (one
 * transaction of creates).
 *
 * For an approved pending action (`opts`, DESIGN.md 6.2): the i-th recommendation's id is derived from the action
 * (`recommendation#<i>`), each carries the action's id (origin `agent`) in its own create, and `opts.settle` commits
 * in the same transaction, so a crash leaves no recommendation of the run or the action executed. Should the set of
 * this action exist all the same (a run outside the executor), it is the answer: the model is not called again and
 * nothing is written (its `prioritization_summary` is then not known: "").
 * The set commits inside the run and its settle follows: a generation is charged as a success (spec 02 Credits) only
 * once its set is stored; one whose commit fails is charged as failed, or, for an approved action that will be
 * retried, not yet (the retry's one settle covers both attempts' model use).
 * With `opts.id` instead (a background task's step), the ids derive from it the same way and a set that exists is the
 * answer likewise: an attempt resumed after a crash finds what the first wrote.
 * @throws AppError FORBIDDEN, SUBSCRIPTION_REQUIRED (402), USAGE_LIMIT_EXCEEDED (402), VALIDATION_ERROR (422) for
 *   unknown insight ids; SettlementRefused when the executor lost the action meanwhile (nothing written).
 */
export async function generate(userId: string, input: GenerateInput, opts: AgentWrite<GenerationWritten> = {}) {
  await requireMember(userId, input.workspace_id);
  await requireActiveSubscription(input.workspace_id);
  const actionId = opts.pendingActionId;
  // The set's ids derive from the pending action, or from `opts.id` (a background task's step): a replay finds them.
  const seed = actionId ?? opts.id;
  const idOf = (i: number) => (seed ? idFor(seed, `recommendation#${i}`) : randomUUID());
  if (seed) {
    const earlier = await readSet(input.workspace_id, Array.from({ length: MAX_GENERATED }, (_, i) => idOf(i)));
    if (earlier.length) return { recommendations: earlier, count: earlier.length, prioritization_summary: "" };
  }
  const engine = recommendationEngine(await model());
  // The run's reservation is made while the insights and product context are read (an unknown id releases it).
  const {
    value: [insights, product],
    charge,
  } = await reserveAlongside({ workspaceId: input.workspace_id, runId: runIdFor(opts) ?? randomUUID(), engine: engine.kind }, () =>
    Promise.all([loadInsights(input.workspace_id, input.insight_ids).then((l) => l.map(toEngineInput)), productContext(input.workspace_id)]),
  );
  /**
   * Write a generation's set: its creates in one transaction with the action's settlement (when given). Called inside
   * the run, before its settle: the run is charged as a success only once its set is stored, and an approved action's
   * attempt whose commit fails keeps its hold and its use for the retry (core/billing `Charge.keepsHoldAfter`), so the
   * run's one settle covers every attempt's model use.
   */
  const store = async (result: GenerateRecommendationsResult) => {
    // One creation time for the whole set: the list orders newest first, then by priority_rank within a time, so a
    // set written over two milliseconds would list its lowest priority first.
    const createdAt = new Date().toISOString();
    const items = result.recommendations.slice(0, MAX_GENERATED).map((r, i) => ({
      ...r,
      id: idOf(i),
      created_at: createdAt,
      workspace_id: input.workspace_id,
      status: "suggested" as const,
      priority_rank: i + 1,
      origin: actionId ? "agent" : "generate",
      created_by: userId,
      ...tagOf(opts),
    }));
    const ids = items.map((r) => r.id);
    const settlement = opts.settle?.({ recommendation_ids: ids, count: ids.length, prioritization_summary: result.prioritization_summary });
    // Creates, not puts: a write never replaces a recommendation (of an earlier run, or changed since by a member).
    const refused = await commitWrites(
      ["recommendation"],
      items.map((r) => asWrite(db().entities.recommendation.create(r))),
      settlement,
    );
    return { ids, refused };
  };
  const { result, stored } = await recordRun(
    { workspaceId: input.workspace_id, userId, agentType: "recommendation", toolName: "generate_recommendations", engine: engine.kind, input: { insight_ids: input.insight_ids, focus_areas: input.focus_areas }, charge },
    async (usage) => {
      const out = await engine.generate({ insights, focus_areas: input.focus_areas, product });
      // Kept before the run goes on: an approved action's attempt that dies from here on is still charged it.
      if (out.usage) await usage.add(out.usage);
      usage.beforeWrite();
      return { result: out.result, stored: await store(out.result) };
    },
    (out) => ({ titles: out.result.recommendations.map((r) => r.title) }),
  );
  const recommendations = await readSet(input.workspace_id, stored.ids);
  // Refused only when this action's set exists already (a concurrent run of it wrote the same ids first).
  if (stored.refused && recommendations.length !== stored.ids.length) throw new Error(`recommendations of this run were refused: ${stored.refused.join(", ")}`);
  return { recommendations, count: recommendations.length, prioritization_summary: result.prioritization_summary };
}
