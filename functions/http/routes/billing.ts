import { defineRoutes, type RouteSpec } from "../../lib/route";
import {
  Accomplishments,
  BillingSyncResult,
  BillingWorkspaceQuery,
  BoostCheckoutBody,
  BoostList,
  CheckoutBody,
  CheckoutSessionView,
  ComputeStatus,
  CreditBalanceView,
  CreditEstimate,
  EstimateQuery,
  MilestoneProgress,
  PlanList,
  PlansQuery,
  PortalBody,
  PortalSessionView,
  SubscriptionView,
  UsageView,
} from "../../../core/billing/schema";

/**
 * Billing (spec 02 Billing; DESIGN.md 6.3): a workspace's billing is its owner's account, read by any member of the
 * workspace. The Stripe-facing POSTs (checkout, portal, boost checkout) answer 503 naming STRIPE_SECRET_KEY while it is
 * unset; checkout and boost checkout need the owner or admin role, the portal the owner (core/billing/checkout.ts).
 */
export const billingRoutes = defineRoutes({
  "billing.plans": {
    method: "GET", path: "/api/billing/plans", group: "billing", access: "user", workspaceScope: "query",
    summary: "The plans with prices, limits and flags; with workspace_id, the owner's plan is current",
    query: PlansQuery,
    // The price list is shown before access is granted too.
    allowWithoutProductAccess: true,
    responses: { 200: PlanList },
  },
  "billing.subscription": {
    method: "GET", path: "/api/billing/subscription", group: "billing", access: "user", workspaceScope: "query",
    summary: "The subscription covering the workspace (its owner's account): plan, status, period, limits",
    query: BillingWorkspaceQuery,
    responses: { 200: SubscriptionView },
  },
  "billing.credits": {
    method: "GET", path: "/api/billing/credits", group: "billing", access: "user", workspaceScope: "query",
    summary: "The credit balance of the workspace owner's account",
    query: BillingWorkspaceQuery,
    responses: { 200: CreditBalanceView },
  },
  "billing.usage": {
    method: "GET", path: "/api/billing/usage", group: "billing", access: "user", workspaceScope: "query",
    summary: "Usage per usage type in the current billing period, against the plan's limits",
    query: BillingWorkspaceQuery,
    responses: { 200: UsageView },
  },
  "billing.boosts": {
    method: "GET", path: "/api/billing/boosts", group: "billing", access: "user", workspaceScope: "query",
    summary: "The owner's boost packs, newest first, with credits added, used and remaining",
    query: BillingWorkspaceQuery,
    responses: { 200: BoostList },
  },
  "billing.compute": {
    method: "GET", path: "/api/billing/compute", group: "billing", access: "user", workspaceScope: "query",
    summary: "The compute budget of the period: warning at 80 %, blocked at 100 % of the token budget or cost target",
    query: BillingWorkspaceQuery,
    responses: { 200: ComputeStatus },
  },
  "billing.estimate": {
    method: "GET", path: "/api/billing/estimate", group: "billing", access: "user", workspaceScope: "query",
    summary: "Credits a run of this model and effort would cost, and whether the balance allows it",
    query: EstimateQuery,
    responses: { 200: CreditEstimate },
  },
  "billing.milestones": {
    method: "GET", path: "/api/billing/milestones", group: "billing", access: "user", workspaceScope: "query",
    summary: "Progress of the trial milestones (signup, first_run, engagement; 5 credits each)",
    query: BillingWorkspaceQuery,
    responses: { 200: MilestoneProgress },
  },
  "billing.accomplishments": {
    method: "GET", path: "/api/billing/accomplishments", group: "billing", access: "user", workspaceScope: "query",
    summary: "What the workspace produced this billing period, runs and credits used (credit-depletion screen)",
    query: BillingWorkspaceQuery,
    responses: { 200: Accomplishments },
  },
  "billing.checkout": {
    method: "POST", path: "/api/billing/checkout", group: "billing", access: "user", workspaceScope: "body",
    summary: "Start a Stripe Checkout (subscription) for the workspace owner's account; owner or admin (409 with the portal while a subscription is live)",
    body: CheckoutBody,
    responses: { 200: CheckoutSessionView },
    errors: ["SERVICE_UNAVAILABLE", "CONFLICT"],
  },
  "billing.portal": {
    method: "POST", path: "/api/billing/portal", group: "billing", access: "user", workspaceScope: "body",
    summary: "Open the Stripe billing portal of the workspace owner's account; owner only (409 before any checkout)",
    body: PortalBody,
    responses: { 200: PortalSessionView },
    errors: ["SERVICE_UNAVAILABLE", "CONFLICT"],
  },
  "billing.sync": {
    method: "POST", path: "/api/billing/sync", group: "billing", access: "user", workspaceScope: "query",
    summary: "Sync the owner's plan and credits with Stripe now (after a checkout redirect, before the webhook); any member",
    query: BillingWorkspaceQuery,
    responses: { 200: BillingSyncResult },
    errors: ["SERVICE_UNAVAILABLE"],
  },
  "billing.boostCheckout": {
    method: "POST", path: "/api/billing/boost/checkout", group: "billing", access: "user", workspaceScope: "body",
    summary: "Start a one-time Stripe Checkout for a boost pack (starter, plus, max) for the owner's account; owner or admin",
    body: BoostCheckoutBody,
    responses: { 200: CheckoutSessionView },
    errors: ["SUBSCRIPTION_REQUIRED", "SERVICE_UNAVAILABLE"],
  },
} satisfies Record<string, RouteSpec>);
