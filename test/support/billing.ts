import { db } from "../../core/db/service";
import { accountOf, grant } from "../../core/billing/ledger";
import type { Plan } from "../../core/billing/plans";

/**
 * Put a user's billing account on a plan or status directly (test set-up; in the service the payments webhook does
 * it, test/http/billing-webhooks.test.ts). The account is created first if the user has none.
 */
export async function setAccount(userId: string, set: { plan?: Plan; status?: "active" | "trialing" | "past_due" | "cancelled"; period_end?: string }) {
  await accountOf(userId);
  await db().entities.billingAccount.patch({ user_id: userId }).set(set).go();
}

/** Give a user's account a boost of `credits` (test set-up for suites that run many AI operations on one account). */
export async function topUp(userId: string, credits: number, source = `test-top-up#${credits}`) {
  await grant(userId, { source, credits, bucket: "boost", expiresAt: new Date(Date.now() + 30 * 86_400_000) });
}
