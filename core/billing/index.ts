import { AppError } from "../error";
import { db } from "../db/service";
import { PLANS, type PlanLimits } from "./plans";

export * from "./plans";

/** The workspace's subscription with its plan limits. @throws AppError SUBSCRIPTION_REQUIRED (402) when none exists. */
export async function subscriptionOf(workspaceId: string) {
  const { data } = await db().entities.subscription.get({ workspace_id: workspaceId }).go({ consistent: true });
  if (!data) throw new AppError("SUBSCRIPTION_REQUIRED", "This workspace has no subscription; choose a plan to continue");
  return { ...data, limits: PLANS[data.plan] as PlanLimits };
}

/**
 * Gate for operations that need an active or trialing subscription (spec 01: "active subscription").
 * An expired trial counts as absent.
 * @throws AppError SUBSCRIPTION_REQUIRED (402, DESIGN.md section 5).
 */
export async function requireActiveSubscription(workspaceId: string) {
  const sub = await subscriptionOf(workspaceId);
  const trialOver = sub.status === "trialing" && sub.trial_ends_at !== undefined && Date.parse(sub.trial_ends_at) < Date.now();
  if (!(sub.status === "active" || sub.status === "trialing") || trialOver) {
    throw new AppError("SUBSCRIPTION_REQUIRED", `An active subscription is required (status: ${trialOver ? "trial ended" : sub.status})`);
  }
  return sub;
}
