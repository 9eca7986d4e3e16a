/**
 * Plan gates (spec 02 Limits: Plans: "Failed gates: require_feature gives 403, require_usage gives 402"). Routes
 * declare them on the route table (`feature`, `usage` in functions/lib/route.ts); the HTTP layer calls
 * `requireFeature` / `requireUsage` after validation and membership, before the implementation, and the OpenAPI
 * document lists them per operation. A workspace's plan is its owner's account's (DESIGN.md 6.3).
 */
import { db } from "../db/service";
import { documentsOf } from "../document/listing";
import { AppError } from "../error";
import { countByPrefix } from "../db/partition";
import { accountOf } from "./ledger";
import { payerOf } from "./charge";
import { partitionOf } from "../workspace";
import { entitlementOf } from "./entitlement";
import { PLAN_ORDER, PLANS, type Plan, type PlanLimits } from "./plans";

/** Plan feature flags a route can require (spec 02 feature flags). */
export type PlanFeature = "has_integrations" | "has_codehost" | "has_skills" | "has_custom_skills" | "has_overnight_cycles" | "has_api_access" | "has_research_graph" | "has_fs_researcher";

/**
 * Plan usage limits a route can require room in (spec 02 Limits: Plans):
 * - `research_sources`: the workspace's sources (the counter the upload's own transaction also guards) < max_research_sources;
 * - `documents`: documents created in the workspace since the owner's period start < max_documents (per month);
 * - `workspaces`: workspaces the caller owns < max_workspaces of the caller's own plan;
 * - `seats`: members of the workspace < max_seats_per_workspace;
 * - `custom_skills`: custom skills the workspace authored (its counter, which the create's own transaction also guards,
 *   core/skill) < max_custom_skills.
 */
export type PlanUsage = "research_sources" | "documents" | "workspaces" | "seats" | "custom_skills";

/** Where a gate looks: the caller, and the workspace the request names (absent for workspace creation). */
export interface GateScope {
  userId: string;
  workspaceId?: string;
}

/** The lowest plan that has a feature, for the message. */
const lowestWith = (feature: PlanFeature): Plan | undefined => PLAN_ORDER.find((p) => PLANS[p][feature]);

/**
 * The plan in effect for a gate's scope: the workspace owner's account (or the caller's, for workspace creation), read
 * through `entitlementOf` (a cancelled or past-due account past its paid period or grace gets the trial's limits).
 */
export async function planOf(scope: GateScope): Promise<{ owner: string; plan: Plan; limits: PlanLimits; period_start: string }> {
  const owner = scope.workspaceId ? await payerOf(scope.workspaceId) : scope.userId;
  const account = await accountOf(owner);
  const { plan, limits } = entitlementOf(account);
  return { owner, plan, limits, period_start: account.period_start };
}

/**
 * The refusal of a plan-feature gate (spec 01 Errors: "403 FORBIDDEN … also plan-feature gate failures"): code
 * FORBIDDEN, told apart from a refused membership by its fields `feature`, `plan` and `required_plan` (the lowest
 * plan with the feature, null when none has it).
 * @param what the feature in words for the message (default: the flag's name without `has_`)
 */
export function planFeatureRequired(feature: PlanFeature, plan: Plan, what = feature.replace(/^has_/, "").replace(/_/g, " ")): AppError {
  const needed = lowestWith(feature);
  return new AppError("FORBIDDEN", `The ${plan} plan does not include ${what}${needed ? `; it needs the ${needed} plan or higher` : ""}`, {
    feature, plan, required_plan: needed ?? null,
  });
}

/** Whether `err` is a plan-feature gate's refusal ({@link planFeatureRequired}), not another 403. */
export const isPlanFeatureRefusal = (err: unknown): err is AppError => err instanceof AppError && err.code === "FORBIDDEN" && typeof err.extra.feature === "string";

/**
 * require_feature: the plan must have the flag.
 * @throws AppError FORBIDDEN (403) naming the feature, the current plan and the lowest plan with it ({@link planFeatureRequired}).
 */
export async function requireFeature(scope: GateScope, feature: PlanFeature): Promise<void> {
  const { plan, limits } = await planOf(scope);
  if (limits[feature]) return;
  throw planFeatureRequired(feature, plan);
}

/** The current figure and the plan's limit of one usage gate (null: unlimited). */
export async function usageOf(scope: GateScope, usage: PlanUsage): Promise<{ current: number; limit: number | null; plan: Plan }> {
  const { plan, limits, period_start } = await planOf(scope);
  const ws = scope.workspaceId;
  const need = (what: string) => {
    if (!ws) throw new Error(`The ${what} gate needs a workspace`);
    return ws;
  };
  switch (usage) {
    case "research_sources": {
      const { data } = await db().entities.usage.get({ workspace_id: need(usage) }).go({ consistent: true });
      return { current: data?.research_sources ?? 0, limit: limits.max_research_sources, plan };
    }
    case "documents": {
      if (limits.max_documents === null) return { current: 0, limit: null, plan };
      const docs = await documentsOf(need(usage), { attributes: ["id"], createdSince: period_start });
      return { current: docs.length, limit: limits.max_documents, plan };
    }
    case "workspaces": {
      if (limits.max_workspaces === null) return { current: 0, limit: null, plan };
      const { data } = await db().entities.membership.query.byUser({ user_id: scope.userId }).go({ pages: "all" });
      // One whose deletion has begun is not counted (a deletion begun before the records still sits in this index).
      return { current: data.filter((m) => m.role === "owner" && !m.deleting_at).length, limit: limits.max_workspaces, plan };
    }
    case "seats": {
      if (limits.max_seats_per_workspace === null) return { current: 0, limit: null, plan };
      return { current: await countByPrefix(partitionOf(need(usage)), "member#", "membership"), limit: limits.max_seats_per_workspace, plan };
    }
    case "custom_skills": {
      const { data } = await db().entities.skillCounter.get({ workspace_id: need(usage) }).go({ consistent: true });
      return { current: data?.custom_skills ?? 0, limit: limits.max_custom_skills, plan };
    }
  }
}

const USAGE_NAMES: Record<PlanUsage, string> = {
  research_sources: "research sources per workspace",
  documents: "documents per month",
  workspaces: "workspaces",
  seats: "members per workspace",
  custom_skills: "custom skills per workspace",
};

/**
 * require_usage: there must be room for one more under the plan's limit.
 * @throws AppError USAGE_LIMIT_EXCEEDED (402) with `usage_type`, `current`, `limit` and `plan`.
 */
export async function requireUsage(scope: GateScope, usage: PlanUsage): Promise<void> {
  const { current, limit, plan } = await usageOf(scope, usage);
  if (limit === null || current < limit) return;
  throw new AppError("USAGE_LIMIT_EXCEEDED", `The ${plan} plan allows ${limit} ${USAGE_NAMES[usage]} and this is at ${current}; upgrade the plan for more`, {
    usage_type: usage, current, limit, plan,
  });
}

/**
 * Check a route's declared gates for one request (functions/lib/http.ts): membership of the named workspace first,
 * with the route's roles (403 FORBIDDEN, so a caller who may not do this learns nothing about the plan), then
 * require_feature, then require_usage.
 * @throws AppError FORBIDDEN (403: not a member, or the plan lacks the feature), USAGE_LIMIT_EXCEEDED (402).
 */
export async function checkGates(scope: GateScope, gates: { feature?: PlanFeature; usage?: PlanUsage; roles?: readonly ("owner" | "admin" | "member")[] }): Promise<void> {
  if (scope.workspaceId) {
    const { requireMember } = await import("../workspace");
    await requireMember(scope.userId, scope.workspaceId, gates.roles ? [...gates.roles] : undefined);
  }
  if (gates.feature) await requireFeature(scope, gates.feature);
  if (gates.usage) await requireUsage(scope, gates.usage);
}
