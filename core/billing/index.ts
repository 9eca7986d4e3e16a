import { AppError } from "../error";
import { payerOf } from "./charge";
import { accountOf } from "./ledger";
import { entitlementOf } from "./entitlement";
import type { PlanLimits } from "./plans";

export * from "./plans";

/**
 * The subscription that covers a workspace: its owner's billing account (spec 02 "Subscription and credits": the
 * subscription belongs to the user and covers all their workspaces; new workspaces inherit plan and balance), with
 * the plan in effect and its limits (`entitlementOf`: a downgrade waits for the period's end, a lapsed paid plan
 * counts as the trial). A trial's end is its period end.
 */
export async function subscriptionOf(workspaceId: string) {
  const ownerId = await payerOf(workspaceId);
  const account = await accountOf(ownerId);
  const entitled = entitlementOf(account);
  const trialOver = account.plan === "trial" && account.status === "trialing" && Date.parse(account.period_end) < Date.now();
  return {
    owner_id: ownerId,
    plan: entitled.plan,
    status: account.status,
    trial_ends_at: account.status === "trialing" ? account.period_end : undefined,
    current_period_start: account.period_start,
    current_period_end: account.period_end,
    limits: entitled.limits as PlanLimits,
    /** Whether the account may use the operations that need an active subscription now (`requireActiveSubscription`). */
    usable: account.plan === "trial" ? account.status === "active" || (account.status === "trialing" && !trialOver) : !entitled.lapsed,
    trial_over: trialOver,
  };
}

/**
 * Gate for operations that need an active subscription (spec 01: "active subscription"): the owner's trial before
 * its end, or a paid plan still in effect (`entitlementOf`): active, past_due within its grace, cancelled or
 * cancelling before the paid period's end. The same rule as every other plan reader, so a plan the billing views
 * show in effect is never refused here.
 * @throws AppError SUBSCRIPTION_REQUIRED (402, DESIGN.md section 5) naming the status.
 */
export async function requireActiveSubscription(workspaceId: string) {
  const sub = await subscriptionOf(workspaceId);
  if (!sub.usable) {
    throw new AppError("SUBSCRIPTION_REQUIRED", `An active subscription is required (status: ${sub.trial_over ? "trial ended" : sub.status})`);
  }
  return sub;
}
