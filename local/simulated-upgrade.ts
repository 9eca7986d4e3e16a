/**
 * The Stripe event of a simulated paid upgrade (`npm run billing:simulate`, local/simulate-upgrade.ts): a
 * `customer.subscription.created` whose subscription is active on the plan's price, carries our checkout's metadata
 * (user_id, plan, interval) and its latest invoice, expanded and paid. Without STRIPE_SECRET_KEY the payments consumer
 * applies the objects a signed event carries (core/billing/sync.ts `carriedSource`), so this one event changes the
 * account's plan and grants the period's credits, exactly as the consumer would after re-reading Stripe.
 */
import type Stripe from "stripe";
import { stripePriceSetting } from "../core/config";
import { PLAN_PRICES } from "../core/billing/views";
import { eventObject, invoiceObject, stripeId, subscriptionObject } from "./stripe-objects";

export type SimulatedPlan = "pro" | "growth" | "power";
export type SimulatedInterval = "monthly" | "yearly";

/**
 * @param userId the user whose account upgrades (the owner of the workspaces that should change plan)
 * @param now the upgrade's time (default now); the period starts one second later, after any account creation
 */
export function simulatedUpgradeEvent(opts: { userId: string; plan: SimulatedPlan; interval: SimulatedInterval; now?: Date }): Stripe.Event {
  const { userId, plan, interval } = opts;
  const start = Math.floor((opts.now ?? new Date()).getTime() / 1000) + 1;
  const end = new Date(start * 1000);
  if (interval === "yearly") end.setUTCFullYear(end.getUTCFullYear() + 1);
  else end.setUTCMonth(end.getUTCMonth() + 1);
  const periodEnd = Math.floor(end.getTime() / 1000);
  const customer = `cus_local_${userId.replace(/-/g, "").slice(0, 16)}`;
  const subscription = stripeId("sub_local");
  const usd = interval === "yearly" ? PLAN_PRICES[plan].price_yearly : PLAN_PRICES[plan].price_monthly;
  // The configured price id when there is one, so the plan is read from the price as with real Stripe.
  const configured = plan === "power" ? undefined : process.env[stripePriceSetting(plan, interval)];
  const price = { id: configured ?? `price_local_${plan}_${interval}`, interval: interval === "yearly" ? ("year" as const) : ("month" as const), amount: usd * 100 };
  const metadata = { user_id: userId, plan, interval, simulated: "true" };
  const invoice = invoiceObject({ customer, subscription, status: "paid", price, periodStart: start, periodEnd, subscriptionMetadata: metadata });
  const sub = subscriptionObject({ id: subscription, customer, status: "active", price, periodStart: start, periodEnd, metadata, latestInvoice: invoice });
  return eventObject("customer.subscription.created", sub, { created: start });
}
