import { isConditionalFailure } from "../db/errors";
import { randomUUID } from "node:crypto";
import type { EntityItem } from "electrodb";
import { AppError, Errors } from "../error";
import { db } from "../db/service";
import { getAll } from "../db/bulk";
import { fitResponse } from "../response-size";
import { requireMember, requireResourceById } from "../workspace";
import { loadInsights } from "../insight/inputs";
import { asWrite, commitWrites, createOnce, tagOf, type AgentWrite } from "../db/agent-write";
import { assertTransition, checkBatchTransition } from "./status";
import type { RecommendationEntity } from "./recommendation.entity";
import type {
  BatchStatusInput,
  CreateRecommendationInput,
  ListRecommendationsQuery,
  Recommendation as RecommendationView,
  StatusChangeInput,
  UpdateRecommendationInput,
} from "./schema";

export * from "./schema";

export type RecommendationItem = EntityItem<RecommendationEntity>;

export const toView = (r: RecommendationItem): RecommendationView => ({
  id: r.id,
  workspace_id: r.workspace_id,
  title: r.title,
  description: r.description,
  addresses_insight_ids: r.addresses_insight_ids ?? [],
  rationale: r.rationale ?? null,
  effort_estimate: r.effort_estimate ?? null,
  effort_weeks: r.effort_weeks ?? null,
  impact_score: r.impact_score ?? null,
  success_metrics: r.success_metrics ?? [],
  target_repo: r.target_repo ?? null,
  status: r.status,
  user_notes: r.user_notes ?? null,
  priority_rank: r.priority_rank ?? null,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

/**
 * Resolve a recommendation fetched by id alone and check membership of its workspace.
 * @throws AppError NOT_FOUND (404), also when the caller is not a member of its workspace (its existence is not revealed).
 */
export async function requireRecommendation(userId: string, id: string): Promise<RecommendationItem> {
  // One round trip once the container knows the id's workspace (core/workspace requireResourceById).
  return requireResourceById<RecommendationItem>(userId, {
    kind: "recommendation",
    id,
    what: "Recommendation",
    entity: db().entities.recommendation,
    locate: async () => {
      const { data } = await db().entities.recommendation.query.byId({ id }).go({ limit: 1, attributes: ["workspace_id"] });
      return data[0] && { workspace_id: data[0].workspace_id, id };
    },
  });
}

/** Insights referenced must belong to the workspace. @throws AppError VALIDATION_ERROR naming the unknown ids. */
export async function checkInsightIds(workspaceId: string, ids: string[]): Promise<void> {
  await loadInsights(workspaceId, ids, "addresses_insight_ids");
}

/** What a recommendation write hands its settlement (AgentWrite.settle): the recommendation as written. */
export interface RecommendationWritten {
  id: string;
  title: string;
  status: RecommendationItem["status"];
}

/**
 * `POST /api/recommendations`: a manual recommendation, status suggested. For an approved pending action (`opts`,
 * DESIGN.md 6.2) it is created under `opts.id`, tagged (origin `agent`, the action's id) in the same write, and
 * committed together with `opts.settle`; one already under `opts.id` (an earlier run's) is the answer.
 * @throws AppError FORBIDDEN; VALIDATION_ERROR (422) for insight ids that are not the workspace's; SettlementRefused
 *   when the executor lost the action meanwhile (nothing written).
 */
export async function create(
  userId: string,
  input: CreateRecommendationInput,
  extra: Partial<RecommendationItem> = {},
  opts: AgentWrite<RecommendationWritten> = {},
): Promise<RecommendationView> {
  await requireMember(userId, input.workspace_id);
  await checkInsightIds(input.workspace_id, input.addresses_insight_ids);
  const id = opts.id ?? randomUUID();
  const tag = opts.pendingActionId ? { ...tagOf(opts), origin: "agent" } : {};
  const write = db().entities.recommendation.create({ ...input, ...extra, ...tag, id, status: "suggested", created_by: userId });
  const stored = async () => (await db().entities.recommendation.get({ workspace_id: input.workspace_id, id }).go({ consistent: true })).data;
  if (opts.settle) {
    // A refused create (its only condition) means an earlier run wrote it: that item is the answer.
    await commitWrites(["recommendation"], [asWrite(write)], opts.settle({ id, title: input.title, status: "suggested" }));
    const data = await stored();
    if (!data) throw new Error(`recommendation ${id} is missing after its write`);
    return toView(data);
  }
  return toView(await createOnce(opts, async () => (await write.go()).data as RecommendationItem, stored));
}

/** `GET /api/recommendations`: filtered, by priority (impact) then newest, paginated (limit 200, max 500). */
export async function list(userId: string, q: ListRecommendationsQuery): Promise<{ recommendations: RecommendationView[]; total: number }> {
  await requireMember(userId, q.workspace_id);
  const { data } = await db().entities.recommendation.query.byWorkspace({ workspace_id: q.workspace_id }).go({ pages: "all", consistent: true });
  const matching = data
    .filter(
      (r) =>
        (!q.status || r.status === q.status) &&
        (q.min_impact === undefined || (r.impact_score ?? 0) >= q.min_impact) &&
        (!q.effort_estimate || r.effort_estimate === q.effort_estimate),
    )
    .sort((a, b) => b.created_at.localeCompare(a.created_at) || (a.priority_rank ?? 99) - (b.priority_rank ?? 99) || a.id.localeCompare(b.id));
  // At most LIST_RESPONSE_BYTES: a page of big recommendations ends early (the next starts at offset + those given).
  return { recommendations: fitResponse(matching.slice(q.offset, q.offset + q.limit).map(toView)), total: matching.length };
}

export async function get(userId: string, id: string): Promise<RecommendationView> {
  return toView(await requireRecommendation(userId, id));
}

/**
 * `PATCH /api/recommendations/{id}`: resource fields only; null clears an optional field. A body with no field answers
 * the recommendation as it is, unwritten (`updated_at` stays). Of `addresses_insight_ids`, only the ids the
 * recommendation does not already hold must be insights of the workspace: an insight deleted since stays in the list
 * (DELETE /api/insights leaves it), and a client sending back the list it read must not be refused.
 * `opts.expectedUpdatedAt`: write only over the recommendation as it was at that `updated_at` (the harness's quality
 * repair judged an earlier read, and must not overwrite a member's change made since).
 * @throws AppError NOT_FOUND (404) when it is gone; CONFLICT (409) when it is no longer at `opts.expectedUpdatedAt`;
 *   VALIDATION_ERROR (422) naming added insight ids that are not the workspace's.
 */
export async function update(userId: string, id: string, input: UpdateRecommendationInput, opts: { expectedUpdatedAt?: string } = {}): Promise<RecommendationView> {
  const item = await requireRecommendation(userId, id);
  const changed = () => new AppError("CONFLICT", "The recommendation changed meanwhile; reload and retry");
  if (opts.expectedUpdatedAt !== undefined && item.updated_at !== opts.expectedUpdatedAt) throw changed();
  if (Object.values(input).every((v) => v === undefined)) return toView(item);
  if (input.addresses_insight_ids) {
    const held = new Set(item.addresses_insight_ids ?? []);
    await checkInsightIds(item.workspace_id, input.addresses_insight_ids.filter((i) => !held.has(i)));
  }
  const set: Record<string, unknown> = {};
  const removals: string[] = [];
  for (const [k, v] of Object.entries(input)) {
    if (v === null) removals.push(k);
    else if (v !== undefined) set[k] = v;
  }
  try {
    const { data } = await db()
      .entities.recommendation.patch({ workspace_id: item.workspace_id, id })
      .set(set)
      .remove(removals as never)
      .where((a, op) => (opts.expectedUpdatedAt !== undefined ? op.eq(a.updated_at, opts.expectedUpdatedAt) : ""))
      .go({ response: "all_new" });
    return toView(data as RecommendationItem);
  } catch (err) {
    // Deleted between the read and the write (the patch is conditioned on the item being there), or changed since
    // `expectedUpdatedAt`: a read says which.
    if (isConditionalFailure(err)) {
      if (opts.expectedUpdatedAt === undefined) throw Errors.notFound("Recommendation");
      const { data: now } = await db().entities.recommendation.get({ workspace_id: item.workspace_id, id }).go({ consistent: true });
      throw now ? changed() : Errors.notFound("Recommendation");
    }
    throw err;
  }
}

export async function remove(userId: string, id: string): Promise<void> {
  const item = await requireRecommendation(userId, id);
  await db().entities.recommendation.delete({ workspace_id: item.workspace_id, id }).go();
}


/**
 * Move one recommendation's status by the transition table, guarded by a conditional write on the status it was
 * read with (spec 01 Recommendation status). For a pending action the write carries its id, and commits together
 * with `opts.settle`.
 * @throws AppError INVALID_TRANSITION (422, with valid_transitions); CONFLICT (409) when it changed meanwhile; NOT_FOUND (404) when deleted meanwhile;
 *   SettlementRefused when the executor lost the action meanwhile (nothing written).
 */
async function transition(
  item: RecommendationItem,
  to: RecommendationItem["status"],
  notes: string | undefined,
  opts: AgentWrite<RecommendationWritten> = {},
): Promise<RecommendationItem> {
  assertTransition(item.status, to);
  const key = { workspace_id: item.workspace_id, id: item.id };
  // A refused condition: the status moved (409), or the recommendation was deleted meanwhile (404, as a read now says).
  const conflict = async () => {
    const { data } = await db().entities.recommendation.get(key).go({ consistent: true });
    return data ? new AppError("CONFLICT", "The recommendation's status changed meanwhile; reload and retry") : Errors.notFound("Recommendation");
  };
  const write = db()
    .entities.recommendation.patch(key)
    .set({ status: to, status_changed_at: new Date().toISOString(), ...(notes !== undefined ? { user_notes: notes } : {}), ...tagOf(opts) })
    .where((attr, op) => op.eq(attr.status, item.status));
  if (opts.settle) {
    if (await commitWrites(["recommendation"], [asWrite(write)], opts.settle({ id: item.id, title: item.title, status: to }))) throw await conflict();
    const { data } = await db().entities.recommendation.get(key).go({ consistent: true });
    if (!data) throw Errors.notFound("Recommendation");
    return data;
  }
  try {
    const { data } = await write.go({ response: "all_new" });
    return data as RecommendationItem;
  } catch (err) {
    if (isConditionalFailure(err)) throw await conflict();
    throw err;
  }
}

/**
 * `PATCH /api/recommendations/{id}/status`. `opts` as for `transition` (an approved pending action's write).
 * @throws AppError NOT_FOUND (404); INVALID_TRANSITION (422); CONFLICT (409); SettlementRefused.
 */
export async function changeStatus(userId: string, id: string, input: StatusChangeInput, opts: AgentWrite<RecommendationWritten> = {}): Promise<RecommendationView> {
  const item = await requireRecommendation(userId, id);
  return toView(await transition(item, input.status, input.user_notes, opts));
}

/**
 * `PATCH /api/recommendations/batch/status`: each item moves independently; an invalid transition (or an id that
 * is not a recommendation of the workspace) is reported in `errors` and does not block the others.
 */
export async function batchStatus(userId: string, input: BatchStatusInput) {
  await requireMember(userId, input.workspace_id);
  const ids = [...new Set(input.recommendation_ids)];
  const data = await getAll(ids.map((id) => ({ workspace_id: input.workspace_id, id })), (keys) => db().entities.recommendation.get(keys).go({ consistent: true }));
  const byId = new Map(data.map((r) => [r.id, r]));
  const errors: { recommendation_id: string; error: string; valid_transitions: RecommendationItem["status"][] }[] = [];
  let updated = 0;
  for (const id of ids) {
    const item = byId.get(id);
    if (!item) {
      errors.push({ recommendation_id: id, error: "not_found", valid_transitions: [] });
      continue;
    }
    const invalid = checkBatchTransition(item.status, input.status);
    if (invalid) {
      errors.push({ recommendation_id: id, ...invalid });
      continue;
    }
    try {
      await transition(item, input.status, input.user_notes);
      updated++;
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      errors.push({ recommendation_id: id, error: err.code === "NOT_FOUND" ? "not_found" : "conflict: status changed meanwhile", valid_transitions: [] });
    }
  }
  return { updated_count: updated, failed_count: errors.length, errors };
}
