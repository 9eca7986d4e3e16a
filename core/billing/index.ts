import { AppError } from "../error";
import { payerOf } from "./charge";
import { accountOf } from "./ledger";
import { PLANS, type PlanLimits } from "./plans";

export * from "./plans";

/**
 * The subscription that covers a workspace: its owner's billing account (spec 02 "Subscription and credits": the
 * subscription belongs to the user and covers all their workspaces; new workspaces inherit plan and balance), with
 * the plan's limits. A trial's end is its period end.
 */
export async function subscriptionOf(workspaceId: string) {
  const ownerId = await payerOf(workspaceId);
  const account = await accountOf(ownerId);
  return {
    owner_id: ownerId,
    plan: account.plan,
    status: account.status,
    trial_ends_at: account.status === "trialing" ? account.period_end : undefined,
    current_period_start: account.period_start,
    current_period_end: account.period_end,
    limits: PLANS[account.plan] as PlanLimits,
  };
}

/**
 * Gate for operations that need an active or trialing subscription (spec 01: "active subscription"): the owner's
 * account must be active, or trialing before its trial ends.
 * @throws AppError SUBSCRIPTION_REQUIRED (402, DESIGN.md section 5) naming the status.
 */
export async function requireActiveSubscription(workspaceId: string) {
  const sub = await subscriptionOf(workspaceId);
  const trialOver = sub.status === "trialing" && sub.trial_ends_at !== undefined && Date.parse(sub.trial_ends_at) < Date.now();
  if (!(sub.status === "active" || sub.status === "trialing") || trialOver) {
    throw new AppError("SUBSCRIPTION_REQUIRED", `An active subscription is required (status: ${trialOver ? "trial ended" : sub.status})`);
  }
  return sub;
}
