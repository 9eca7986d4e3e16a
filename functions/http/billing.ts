import { httpGroup } from "../lib/http";
import { billingRoutes } from "./routes/billing";
import { ok } from "../lib/route";
import * as Billing from "../../core/billing/views";

// The Stripe routes load their modules (and the Stripe client) when first reached: the views are read far more often.
const Checkout = () => import("../../core/billing/checkout");
const Sync = () => import("../../core/billing/sync");

/**
 * Billing: plans, subscription, credits, usage, boosts, compute, estimate, milestones, and the Stripe checkout,
 * portal, boost checkout and sync (spec 02 Billing).
 */
export const handler = httpGroup(billingRoutes, {
  "billing.plans": async ({ user, query }) => ok(await Billing.plans(user.id, query)),
  "billing.subscription": async ({ user, query }) => ok(await Billing.subscription(user.id, query)),
  "billing.credits": async ({ user, query }) => ok(await Billing.credits(user.id, query)),
  "billing.usage": async ({ user, query }) => ok(await Billing.usage(user.id, query)),
  "billing.boosts": async ({ user, query }) => ok(await Billing.boosts(user.id, query)),
  "billing.compute": async ({ user, query }) => ok(await Billing.compute(user.id, query)),
  "billing.estimate": async ({ user, query }) => ok(await Billing.estimate(user.id, query)),
  "billing.milestones": async ({ user, query }) => ok(await Billing.milestones(user.id, query)),
  "billing.accomplishments": async ({ user, query }) => ok(await Billing.accomplishments(user.id, query)),
  "billing.checkout": async ({ user, body }) => ok(await (await Checkout()).startCheckout(user.id, body)),
  "billing.portal": async ({ user, body }) => ok(await (await Checkout()).openPortal(user.id, body)),
  "billing.boostCheckout": async ({ user, body }) => ok(await (await Checkout()).startBoostCheckout(user.id, body)),
  "billing.sync": async ({ user, query }) => ok(await (await Sync()).syncWorkspace(user.id, query)),
});
