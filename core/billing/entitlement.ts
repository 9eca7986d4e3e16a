/**
 * What an account is entitled to now (spec 02 "Subscription status", "Limits: Plans"; DESIGN.md 6.3: entitlements
 * derived from the synced subscription state). One function, `entitlementOf`, for every reader: the plan gates, the
 * reservation of an AI run (its compute budget), the billing views and the chat history window. The account keeps
 * Stripe's plan and status as synced; what they grant is decided here, from them and the clock:
 *
 * | status | paid plan kept until | then |
 * |---|---|---|
 * | active, trialing | the period's end if `cancel_at_period_end`, else for good | trial-level limits |
 * | past_due | `PAST_DUE_GRACE_DAYS` (default 7) after the payment became overdue (`past_due_since`) | trial-level limits |
 * | cancelled | the end of the paid period | trial-level limits |
 *
 * Within a credit period the higher of the plan paid for the period (`period_plan`) and Stripe's plan applies: an
 * upgrade takes effect at once, a downgrade at the period's end (docs/decisions.md "Plan changes").
 */
import { Config } from "../config";
import type { EntityItem } from "electrodb";
import type { BillingAccountEntity } from "./account.entity";
import { PLANS, planRank, type Plan, type PlanLimits } from "./plans";

/** A stored billing account (the same type ledger.ts exports; read here from the entity, so no import runs back). */
type BillingAccount = EntityItem<BillingAccountEntity>;

/** The fields of an account the entitlement depends on. */
export type EntitlementInput = Pick<BillingAccount, "plan" | "status" | "period_end"> &
  Partial<Pick<BillingAccount, "period_plan" | "cancel_at_period_end" | "subscription_start" | "subscription_end" | "past_due_since">>;

export interface Entitlement {
  /** The plan whose limits apply now (`trial` once a paid plan has lapsed). */
  plan: Plan;
  limits: PlanLimits;
  /** True when a paid plan no longer applies (cancelled or cancelling past the period's end, past_due past grace). */
  lapsed: boolean;
  /** ISO 8601 time the paid plan stops applying, if it will (null: it will not, or it has already lapsed). */
  lapses_at: string | null;
}

const DAY_MS = 86_400_000;

/**
 * When the account's paid plan stops applying (ISO 8601), or null when it does not end: see the module's table.
 * For a yearly plan the period is the paid year (`subscription_end`), not the credit month (`period_end`).
 */
export function paidUntil(a: EntitlementInput): string | null {
  if (a.plan === "trial") return null;
  const periodEnd = a.subscription_end ?? a.period_end;
  if (a.status === "cancelled") return periodEnd;
  if (a.status === "past_due") {
    // From when the payment became overdue: a failed mid-period invoice must not take back a period already paid.
    const unpaidSince = a.past_due_since ?? a.subscription_start ?? a.period_end;
    return new Date(Date.parse(unpaidSince) + Config.pastDueGraceDays() * DAY_MS).toISOString();
  }
  return a.cancel_at_period_end ? periodEnd : null;
}

/**
 * The plan and limits that apply to an account at `now` (see the module comment).
 * @param account the billing account (or its entitlement fields)
 * @param now the clock (default: now)
 */
export function entitlementOf(account: EntitlementInput, now: Date = new Date()): Entitlement {
  const until = paidUntil(account);
  if (account.plan === "trial" || (until !== null && now.toISOString() >= until)) {
    return { plan: "trial", limits: PLANS.trial, lapsed: account.plan !== "trial", lapses_at: null };
  }
  // A downgrade waits for the period's end: the period was paid at `period_plan`.
  const periodPlan = account.period_plan && now.toISOString() < account.period_end && planRank(account.period_plan) > planRank(account.plan) ? account.period_plan : account.plan;
  return { plan: periodPlan, limits: PLANS[periodPlan], lapsed: false, lapses_at: until };
}
