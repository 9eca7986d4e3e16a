/**
 * Count limits enforced atomically (spec 02 Limits: Plans; issue #19): every plan limit on a count is a counter
 * changed in the same DynamoDB transaction as the item it counts, with a condition on the limit, so concurrent
 * creates cannot pass it (a read-then-write check lets all of them through between the read and the write).
 *
 * | limit | counter | changed with |
 * |---|---|---|
 * | workspaces a user owns (`max_workspaces`) | `workspaces_owned` on the user's billing account | the workspace's create (core/workspace) |
 * | seats per workspace (`max_seats_per_workspace`) | `members` on the workspace's usage item | the membership's create (core/workspace) |
 * | documents a month (`max_documents`) | `documents` / `documents_period` on the workspace's usage item | the document's create (`documentCounter`) |
 * | research sources | `research_sources` on the usage item | the source's create (core/research) |
 * | trial credits (25) | `quota_granted` of a trial account | the milestone's grant (core/billing/ledger.ts `cap`) |
 *
 * A counter missing on an item older than it is started from a count of what exists, conditioned on it still being
 * missing, so two first creates cannot both start it. The route gates (core/billing/gates.ts) still answer first with
 * the figures; the transaction is what holds under concurrency.
 */
import { AppError } from "../error";
import { db } from "../db/service";
import { isConditionalFailure } from "../db/errors";
import { accountOf } from "./ledger";
import { entitlementOf } from "./entitlement";
import { payerOf } from "./charge";
import type { Plan, PlanLimits } from "./plans";

/** The count limits (the route gates' `usage` names). */
export type CountedUsage = "research_sources" | "documents" | "workspaces" | "seats";

const USAGE_NAMES: Record<CountedUsage, string> = {
  research_sources: "research sources per workspace",
  documents: "documents per month",
  workspaces: "workspaces",
  seats: "members per workspace",
};

/**
 * The error of a count limit reached (spec 02: a failed require_usage gate is 402).
 * @returns AppError USAGE_LIMIT_EXCEEDED (402) with `usage_type`, `current`, `limit` and `plan`.
 */
export function usageLimitError(usage: CountedUsage, current: number, limit: number, plan: Plan): AppError {
  return new AppError("USAGE_LIMIT_EXCEEDED", `The ${plan} plan allows ${limit} ${USAGE_NAMES[usage]} and this is at ${current}; upgrade the plan for more`, {
    usage_type: usage, current, limit, plan,
  });
}

/** The plan in effect of a user's account (`entitlementOf`), creating the account on first use. */
export async function limitsOfUser(userId: string): Promise<{ plan: Plan; limits: PlanLimits }> {
  const { plan, limits } = entitlementOf(await accountOf(userId));
  return { plan, limits };
}

/** The plan in effect of a workspace: its owner's account's. */
export async function limitsOfWorkspace(workspaceId: string): Promise<{ owner: string; plan: Plan; limits: PlanLimits }> {
  const owner = await payerOf(workspaceId);
  return { owner, ...(await limitsOfUser(owner)) };
}

/** How many times a counted create re-reads and tries again after losing a race that left room. */
export const COUNTED_TRIES = 8;

/**
 * The documents-a-month counter of a workspace for one create (spec 02 Limits: Plans, documents per month; the month
 * is the owner's billing period): what the create's transaction must write to the workspace's usage item, with its
 * condition. Call it, put `update` in the same transaction as the document's create, and on a cancellation caused by
 * it call `refused()`: a 402 when the limit is reached, else null (a concurrent create moved the counter: read again).
 *
 * - same period as the counter: `documents + 1`, conditioned on `documents < limit` and the period unchanged;
 * - a new period (or no counter yet): the counter restarts at 1 for the period, conditioned on the stored period being
 *   the one read (or absent).
 * Unlimited plans count too (no condition on the figure), so a later downgrade starts from the true count.
 * @param workspaceId the workspace the document is created in
 */
export async function documentCounter(workspaceId: string) {
  const { plan, limits } = await limitsOfWorkspace(workspaceId);
  const owner = await payerOf(workspaceId);
  const period = (await accountOf(owner)).period_start;
  const { data } = await db().entities.usage.get({ workspace_id: workspaceId }).go({ consistent: true });
  const samePeriod = data?.documents_period === period;
  const current = samePeriod ? (data?.documents ?? 0) : 0;
  const limit = limits.max_documents;
  if (limit !== null && current >= limit) throw usageLimitError("documents", current, limit, plan);
  const storedPeriod = data?.documents_period;
  return {
    plan, limit, current, period,
    /** The usage item's update, for the create's transaction (`createWriteTransaction` with the `usage` entity). */
    update: (usage: ReturnType<typeof db>["entities"]["usage"] | UsageInTransaction) =>
      samePeriod
        ? usage
            .update({ workspace_id: workspaceId })
            .add({ documents: 1 })
            .where((a, op) => `${op.eq(a.documents_period, period)}${limit === null ? "" : ` AND ${op.lt(a.documents, limit)}`}`)
        : usage
            .update({ workspace_id: workspaceId })
            .set({ documents: 1, documents_period: period })
            .where((a, op) => (storedPeriod === undefined ? op.notExists(a.documents_period) : op.eq(a.documents_period, storedPeriod))),
    /** After a cancellation on the counter: the 402 when a fresh read says the limit is reached, else null (try again). */
    refused: async (): Promise<AppError | null> => {
      const { data: now } = await db().entities.usage.get({ workspace_id: workspaceId }).go({ consistent: true });
      const count = now?.documents_period === period ? (now?.documents ?? 0) : 0;
      return limit !== null && count >= limit ? usageLimitError("documents", count, limit, plan) : null;
    },
  };
}

type UsageInTransaction = Parameters<Parameters<typeof import("electrodb").createWriteTransaction>[1]>[0] extends infer T
  ? T extends { usage: infer U }
    ? U
    : never
  : never;

/**
 * Count one document created in a workspace against the plan's documents-a-month limit, atomically, for a create path
 * that writes the document itself: the counter's conditional update alone (the create follows it). Prefer putting
 * `documentCounter(...).update` in the document's own transaction; this is for paths that cannot yet.
 * @throws AppError USAGE_LIMIT_EXCEEDED (402) when the limit is reached.
 */
export async function countDocument(workspaceId: string): Promise<void> {
  for (let i = 0; i < COUNTED_TRIES; i++) {
    const counter = await documentCounter(workspaceId);
    try {
      await counter.update(db().entities.usage).go();
      return;
    } catch (err) {
      if (!isConditionalFailure(err)) throw err;
      const refusal = await counter.refused();
      if (refusal) throw refusal;
    }
  }
  throw new AppError("SERVICE_UNAVAILABLE", "The workspace's document counter is busy; try again", { retryable: true });
}
