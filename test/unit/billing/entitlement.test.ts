/**
 * The entitlement table (core/billing/entitlement.ts; issue #19): which plan applies for every status, with and
 * without cancel_at_period_end, before and after the paid period's end or the past-due grace, and a downgrade
 * within the period. Exhaustive over the table's rows, as the state-machine convention asks (DESIGN.md 4.7).
 */
import { describe, expect, it } from "vitest";
import { entitlementOf, paidUntil, type EntitlementInput } from "../../../core/billing/entitlement";
import { PLANS } from "../../../core/billing/plans";
import { Config } from "../../../core/config";

const T0 = Date.UTC(2026, 2, 1);
const DAY = 86_400_000;
const at = (days: number) => new Date(T0 + days * DAY);
const iso = (days: number) => at(days).toISOString();

/** A growth account whose paid period runs from day 0 to day 30. */
const growth = (over: Partial<EntitlementInput> = {}): EntitlementInput => ({
  plan: "growth", status: "active", period_end: iso(30), subscription_start: iso(0), subscription_end: iso(30), ...over,
});

describe("entitlementOf", () => {
  const grace = Config.pastDueGraceDays();
  const rows: [string, EntitlementInput, number, "growth" | "trial"][] = [
    ["active", growth(), 10, "growth"],
    ["active, long after the period (renews)", growth(), 45, "growth"],
    ["trialing", growth({ status: "trialing" }), 10, "growth"],
    ["active, cancel_at_period_end, before the end", growth({ cancel_at_period_end: true }), 29, "growth"],
    ["active, cancel_at_period_end, at the end", growth({ cancel_at_period_end: true }), 30, "trial"],
    ["cancelled, before the period's end", growth({ status: "cancelled" }), 29, "growth"],
    ["cancelled, after the period's end", growth({ status: "cancelled" }), 31, "trial"],
    ["past_due within the grace", growth({ status: "past_due" }), grace - 0.5, "growth"],
    ["past_due past the grace", growth({ status: "past_due" }), grace, "trial"],
  ];
  it.each(rows)("%s", (_, account, day, plan) => {
    const e = entitlementOf(account, at(day));
    expect(e.plan).toBe(plan);
    expect(e.limits).toEqual(PLANS[plan]);
    expect(e.lapsed).toBe(plan === "trial");
  });

  it("a trial account is the trial, never lapsed", () => {
    expect(entitlementOf({ plan: "trial", status: "trialing", period_end: iso(14) }, at(40))).toMatchObject({ plan: "trial", lapsed: false, lapses_at: null });
  });

  it("a downgrade within the period keeps the period's plan until its end", () => {
    const down = growth({ plan: "pro", period_plan: "growth" });
    expect(entitlementOf(down, at(29)).plan).toBe("growth");
    expect(entitlementOf(down, at(30)).plan).toBe("pro");
    // An upgrade applies at once (period_plan is raised by the upgrade's grant; Stripe's plan is already higher).
    expect(entitlementOf(growth({ plan: "power", period_plan: "growth" }), at(1)).plan).toBe("power");
  });

  it("paidUntil: when the paid plan stops applying", () => {
    expect(paidUntil(growth())).toBeNull();
    expect(paidUntil(growth({ cancel_at_period_end: true }))).toBe(iso(30));
    expect(paidUntil(growth({ status: "cancelled" }))).toBe(iso(30));
    expect(paidUntil(growth({ status: "past_due" }))).toBe(iso(grace));
  });
});
