import { Entity } from "electrodb";

/**
 * Billing items of one user live in the partition `bill#<user id>` (DESIGN.md section 6.3: one billing account per
 * user; the subscription covers all of the user's workspaces, spec 02 "Subscription and credits"). Sort keys:
 *
 * - `account`: the account with the monthly quota of the current period as two numbers (granted, remaining), the
 *   credits held by open reservations, lifetime counters and the period's compute use.
 * - `boost#<expires_at>#<boost id>`: one item per boost pack, with its own `remaining`. Ordered by expiry, so a
 *   range query from "now" returns exactly the usable boosts, earliest expiry first.
 * - `hold#<run id>`: an open reservation and where its credits came from; deleted when settled or released.
 * - `ledger#<key>`: immutable ledger items (ledger.entity.ts).
 *
 * Why separate items and not a map of boosts on the account: every bucket is one number that a condition
 * (`remaining >= :x`) guards in the same transaction that decrements it, and DynamoDB conditions cannot do
 * arithmetic (`granted - used >= x`), so each bucket stores `remaining` itself. A map keyed by boost id could hold
 * the same numbers, but ElectroDB maps have fixed properties, the item would grow with every pack ever bought (400 KB
 * limit), and the usable boosts could not be range-read by expiry. Boost grants then never touch the account item,
 * so buying a pack does not contend with the runs charging the quota.
 */
/** The `renewal` value of a yearly account with months left to credit (the one partition of the renewals index). */
export const RENEWAL_DUE = "due";

export const buildBillingAccountEntity = () => new Entity({
  model: { entity: "billing_account", version: "1", service: "r2d" },
  attributes: {
    user_id: { type: "string", required: true },
    plan: { type: ["trial", "pro", "growth", "power"] as const, required: true },
    status: { type: ["active", "trialing", "past_due", "cancelled"] as const, required: true },
    /** ISO 8601 start of the current billing period (trial: account creation); monthly grants are keyed by it. */
    period_start: { type: "string", required: true },
    /** ISO 8601 end of the current billing period (trial: trial end). */
    period_end: { type: "string", required: true },
    /**
     * The plan the current credit period was paid at (its monthly grant, raised by an upgrade within it): a downgrade
     * within the period leaves it, so the higher plan applies until the period's end (core/billing/entitlement.ts).
     */
    period_plan: { type: ["trial", "pro", "growth", "power"] as const },
    /**
     * Workspaces the user owns: the counter the plan's `max_workspaces` is enforced on, changed in the same
     * transaction as the workspace is created (core/workspace `create`). Unset on accounts older than the counter:
     * the first create counts the owned workspaces.
     */
    workspaces_owned: { type: "number" },
    /** Credits granted to the monthly quota of the current period (trial: the trial milestone grants). */
    quota_granted: { type: "number", required: true, default: 0 },
    /** Quota credits neither charged nor held by an open reservation. Never negative (conditions on every decrement). */
    quota_remaining: { type: "number", required: true, default: 0 },
    /** Credits held by open reservations, from any bucket. */
    reserved: { type: "number", required: true, default: 0 },
    /** Lifetime credits charged by settlements. */
    charged: { type: "number", required: true, default: 0 },
    /** Lifetime credits a settlement could not charge because the balance was empty (recorded, not owed). */
    shortfall: { type: "number", required: true, default: 0 },
    /** Lifetime credits lost: quota left at a period reset, boosts left at expiry, returns to a closed bucket. */
    forfeited: { type: "number", required: true, default: 0 },
    /**
     * `period_start` of the quota whose rest expired because the paid plan lapsed (`lapseQuota`, ledger
     * `expire#lapse#<period>`): nothing may be returned to that quota any more, a condition of every settlement's return.
     */
    quota_lapsed_period: { type: "string" },
    /** Model tokens used in the current period (spec 02 Compute budget; reset with the period). */
    tokens_used: { type: "number", required: true, default: 0 },
    /** Model cost in USD in the current period (spec 02 Compute budget; reset with the period). */
    cost_usd: { type: "number", required: true, default: 0 },
    /** The account's Stripe customer ("cus_..."), created on the first checkout and set once (core/billing/checkout.ts). */
    stripe_customer_id: { type: "string" },
    /**
     * The Stripe subscription the account follows (the customer's current one, core/billing/sync.ts): plan, status
     * and `cancel_at_period_end` below are Stripe's as of `stripe_synced_at`. Unset until a subscription is synced.
     */
    stripe_subscription_id: { type: "string" },
    /** The subscription's price ("price_..."), from which the plan is read (STRIPE_PRICE_<PLAN>_<INTERVAL>). */
    stripe_price_id: { type: "string" },
    billing_interval: { type: ["monthly", "yearly"] as const },
    /** The subscription ends at the end of the period (spec 02 Subscription: cancel_at_period_end). */
    cancel_at_period_end: { type: "boolean" },
    /**
     * ISO 8601 time the last applied Stripe read started: a sync writes only if no later-started read has written
     * already, so concurrent syncs (webhook consumer, POST /api/billing/sync) end with the newest state.
     */
    stripe_synced_at: { type: "string" },
    /** Start and end (ISO 8601) of the synced Stripe subscription's paid period: a year for a yearly plan. */
    subscription_start: { type: "string" },
    subscription_end: { type: "string" },
    /**
     * ISO 8601 time the subscription's payment became overdue, while it is `past_due`: the open invoice's creation
     * (a renewal's is its period's start; a mid-period invoice's, its own), kept across syncs. The grace runs from it.
     */
    past_due_since: { type: "string" },
    /**
     * Set (to `RENEWAL_DUE`) while billing's sweeper has something to do for the account at `renew_at`: a yearly
     * subscription's next month to credit (Stripe sends no event between yearly invoices), or the end of a paid plan
     * that is cancelled, cancelling or past due (its remaining quota then expires), whichever comes first.
     */
    renewal: { type: "string" },
    renew_at: { type: "string" },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
    updated_at: { type: "string", required: true, default: () => new Date().toISOString(), set: () => new Date().toISOString(), watch: "*" },
  },
  indexes: {
    byUser: {
      pk: { field: "pk", composite: ["user_id"], template: "bill#${user_id}", casing: "none" },
      sk: { field: "sk", composite: [], template: "account", casing: "none" },
    },
    /** Yearly accounts whose next month's credits are due, by when (gsi3, sparse: only accounts with `renewal`). */
    renewals: {
      index: "gsi3",
      condition: (attr) => attr.renewal === RENEWAL_DUE && typeof attr.renew_at === "string",
      pk: { field: "gsi3pk", composite: ["renewal"], template: "renew#${renewal}", casing: "none" },
      sk: { field: "gsi3sk", composite: ["renew_at"], template: "${renew_at}", casing: "none" },
    },
    /**
     * The account of a Stripe customer (payments webhooks name the customer, not the user). Sparse: only accounts
     * with a customer carry the keys (the `condition`).
     */
    byStripeCustomer: {
      index: "gsi2",
      // Sparse: without it every customer-less account would share the GSI partition "stripecus#", written on every charge.
      condition: (attr) => typeof attr.stripe_customer_id === "string" && attr.stripe_customer_id.length > 0,
      pk: { field: "gsi2pk", composite: ["stripe_customer_id"], template: "stripecus#${stripe_customer_id}", casing: "none" },
      sk: { field: "gsi2sk", composite: [] },
    },
  },
});
export type BillingAccountEntity = ReturnType<typeof buildBillingAccountEntity>;

/** The `expiry` value of a pack still to close (the one partition of the `expiring` index). */
export const BOOST_EXPIRY_DUE = "due";

/** One boost pack (spec 02 "Boost pack"): usable until `expires_at` (30 days after purchase), earliest first. */
export const buildCreditBoostEntity = () => new Entity({
  model: { entity: "credit_boost", version: "1", service: "r2d" },
  attributes: {
    user_id: { type: "string", required: true },
    /** The grant's source (checkout session id, referral, ...): one pack per source. */
    boost_id: { type: "string", required: true },
    /** ISO 8601 (always `toISOString()`, so the sort key orders by time). */
    expires_at: { type: "string", required: true },
    granted: { type: "number", required: true },
    /** Credits neither charged nor held. Never negative (conditions on every decrement). */
    remaining: { type: "number", required: true },
    /** Set once by `expireBoosts`: the remainder was forfeited and nothing may be returned to the pack any more. */
    expired_at: { type: "string" },
    /** Credits refunds have revoked so far (`revokeBoost`): a later partial refund revokes only its own share. */
    refund_revoked: { type: "number" },
    /**
     * `BOOST_EXPIRY_DUE` until the pack is closed (expired or revoked): puts it in the `expiring` index the credit
     * sweeper reads; removed when it closes, so the index holds only packs still to close.
     */
    expiry: { type: "string" },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
  },
  indexes: {
    byUser: {
      pk: { field: "pk", composite: ["user_id"], template: "bill#${user_id}", casing: "none" },
      sk: { field: "sk", composite: ["expires_at", "boost_id"], template: "boost#${expires_at}#${boost_id}", casing: "none" },
    },
    /**
     * Every open pack of every account by expiry (gsi3, one partition `boostexp#due`, sparse: only packs with `expiry`):
     * the sweeper reads the packs whose expiry has passed instead of scanning (core/billing/sweeper.ts).
     */
    expiring: {
      index: "gsi3",
      condition: (attr) => attr.expiry === BOOST_EXPIRY_DUE,
      pk: { field: "gsi3pk", composite: ["expiry"], template: "boostexp#${expiry}", casing: "none" },
      sk: { field: "gsi3sk", composite: ["expires_at", "user_id", "boost_id"], template: "${expires_at}#${user_id}#${boost_id}", casing: "none" },
    },
  },
});
export type CreditBoostEntity = ReturnType<typeof buildCreditBoostEntity>;

const portion = {
  type: "map",
  properties: {
    boost_id: { type: "string", required: true },
    expires_at: { type: "string", required: true },
    credits: { type: "number", required: true },
  },
} as const;

/** The `sweep` value of every hold: the one partition of the open-holds index. */
export const OPEN_HOLDS = "open";

/** An open reservation of an AI run: what it holds and from which buckets, so settle and release can give back. */
export const buildCreditHoldEntity = () => new Entity({
  model: { entity: "credit_hold", version: "1", service: "r2d" },
  attributes: {
    user_id: { type: "string", required: true },
    run_id: { type: "string", required: true },
    /** Total credits held. */
    credits: { type: "number", required: true },
    /** Credits held from the monthly quota. */
    quota: { type: "number", required: true },
    /** `period_start` of the quota they came from: a return after a period reset is forfeited, not added. */
    quota_period: { type: "string", required: true },
    /** Credits held from each boost, earliest expiry first. */
    boosts: { type: "list", items: portion, required: true },
    /**
     * The approved pending action whose execution this run is (core/pending-action/executor.ts), absent for any other
     * run. Its flip to executed records what the run owes (`charge` on the row) before the run settles, so the
     * stale-reservation sweeper settles such a hold for that amount instead of releasing it (core/billing/sweeper.ts).
     */
    action_workspace_id: { type: "string" },
    action_id: { type: "string" },
    /** The constant partition of the `open` index (ElectroDB keys are built from attributes). */
    sweep: { type: "string", required: true, readOnly: true, default: () => OPEN_HOLDS },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
  },
  indexes: {
    byUser: {
      pk: { field: "pk", composite: ["user_id"], template: "bill#${user_id}", casing: "none" },
      sk: { field: "sk", composite: ["run_id"], template: "hold#${run_id}", casing: "none" },
    },
    /**
     * Every open reservation of every account, oldest first (gsi3, one partition `hold#open`): the stale-reservation
     * sweeper (core/billing/sweeper.ts) reads the old end of it instead of scanning. A hold leaves it when it is
     * settled or released (the item is deleted), so the partition holds only runs in progress.
     */
    open: {
      index: "gsi3",
      pk: { field: "gsi3pk", composite: ["sweep"], template: "hold#${sweep}", casing: "none" },
      sk: { field: "gsi3sk", composite: ["created_at", "user_id", "run_id"], template: "${created_at}#${user_id}#${run_id}", casing: "none" },
    },
  },
});
export type CreditHoldEntity = ReturnType<typeof buildCreditHoldEntity>;

/** The shape of one boost's share in a hold or a ledger item (credits signed in the ledger). */
export const BOOST_PORTION = portion;
