/**
 * Usage that is counted, not limited: the dashboard's `integration_sync` item (spec 02 "Usage types on the
 * dashboard"). The routes that do such work declare it in the route table (`RouteSpec.counts`, functions/lib/route.ts)
 * and the HTTP layer counts each of their 2xx answers here, after the answer is made (functions/lib/http.ts), so a
 * refused request (403, 404, 424, ...) is not counted and the core operations, which the copilot's tools and the
 * queue's continuations also call, count nothing themselves.
 *
 * The count is kept on the workspace's usage item, per the owner's billing period as the documents counter is
 * (`integration_syncs` in `integration_syncs_period`; core/billing/counters.ts): the view reads it with the other
 * counters, in the same read, and a figure of an earlier period reads as 0.
 */
import { db } from "../db/service";
import { isConditionalFailure } from "../db/errors";
import { AppError } from "../error";
import { payerOf } from "./charge";
import { COUNTED_TRIES } from "./counters";
import { accountOf } from "./ledger";

/** The usage a route can count (its `counts` in the route table); each has its own attributes on the usage item. */
export type RouteCountedUsage = "integration_sync";

/**
 * Count one use in the workspace's current billing period (the owner's `period_start`): `integration_syncs + 1` when
 * the stored period is this one, else a restart at 1 for this period (conditioned on the stored period being older or
 * absent, so two first counts of a period do not both restart it, and an older period never replaces a newer one).
 * @param workspaceId the workspace the request named
 * @param usage what to count
 * @throws AppError SERVICE_UNAVAILABLE (503) when the usage item keeps changing under the count (or holds a later
 *   period than the owner's account); DynamoDB errors as they come. The caller logs them: a count never fails a request.
 */
export async function countUsage(workspaceId: string, usage: RouteCountedUsage): Promise<void> {
  const period = (await accountOf(await payerOf(workspaceId))).period_start;
  const item = db().entities.usage;
  const key = { workspace_id: workspaceId };
  for (let attempt = 0; attempt < COUNTED_TRIES; attempt++) {
    try {
      await item.update(key).add({ integration_syncs: 1 }).where((a, op) => op.eq(a.integration_syncs_period, period)).go();
      return;
    } catch (err) {
      if (!isConditionalFailure(err)) throw err;
    }
    try {
      await item
        .update(key)
        .set({ integration_syncs: 1, integration_syncs_period: period })
        .where((a, op) => `${op.notExists(a.integration_syncs_period)} OR ${op.lt(a.integration_syncs_period, period)}`)
        .go();
      return;
    } catch (err) {
      // A concurrent first count of the period set it meanwhile: the next add counts on it.
      if (!isConditionalFailure(err)) throw err;
    }
  }
  throw new AppError("SERVICE_UNAVAILABLE", `The workspace's ${usage} counter is busy`, { retryable: true });
}

/**
 * Integration syncs counted in the billing period starting `period` (0 for a count of another period, or none).
 * @param item the workspace's usage item as read
 */
export const integrationSyncsIn = (item: { integration_syncs?: number; integration_syncs_period?: string } | null | undefined, period: string): number =>
  item?.integration_syncs_period === period ? (item.integration_syncs ?? 0) : 0;
