/**
 * Stripe's state onto the billing account (DESIGN.md 6.3; spec 02 "Subscription status", "Inbound webhook events",
 * `POST /api/billing/sync`). One function, `syncAccount`, serves the payments consumer and the sync route: it reads
 * the customer's subscriptions from Stripe now and writes what they say, so deliveries in any order, repeated or
 * late, end in Stripe's current state (Stripe does not order webhook deliveries).
 *
 * - The current subscription is the customer's best one: active or trialing before past_due/unpaid/paused before
 *   canceled, newest first; `incomplete` ones (never paid) are left out.
 * - Its price gives the plan (STRIPE_PRICE_<PLAN>_<INTERVAL>), else its `metadata.plan` (set by our checkout).
 * - Status: active, trialing → same; past_due, unpaid, paused → past_due; canceled → cancelled.
 * - Credits: when the subscription is active or trialing and its latest invoice is paid, the plan's monthly credits
 *   are granted for the current month of its period (`grant#period#<start>`: the invoice and every later sync of the
 *   period find the same key, so a checkout and its invoice grant once). A yearly period is cut into months from its
 *   start; each month's credits are granted by the first sync in it, or by `renewYearly` (billing's sweeper). A year
 *   already credited as paid keeps its renewals when its latest invoice is later a void, uncollectible or open
 *   proration invoice while the subscription stays live (`renewalOfPaidYear`).
 * - The account's plan, status, `cancel_at_period_end`, subscription, price and interval are set conditionally on
 *   `stripe_synced_at`: a read that started earlier than the one already written does not overwrite it.
 *
 * Without STRIPE_SECRET_KEY (the embedded runtime's simulated upgrade, README "Simulate a paid upgrade"), the
 * consumer cannot read Stripe and applies the objects the signed event carries instead, ordered by the event's time.
 */
import type Stripe from "stripe";
import type { z } from "zod";
import { Config, stripePriceSetting } from "../config";
import { db } from "../db/service";
import { isConditionalFailure } from "../db/errors";
import { Errors } from "../error";
import { requireMember } from "../workspace";
import { BOOST_PACKS } from "./checkout";
import { referralSource } from "./boost-record";
import { accountOf, BOOST_VALIDITY_DAYS, grant, grantUpgrade, lapseQuota, revokeBoost, type BillingAccount, type GrantResult } from "./ledger";
import { RENEWAL_DUE } from "./account.entity";
import { entitlementOf, paidUntil } from "./entitlement";
import { PLANS, planRank, type Plan } from "./plans";
import type { BillingSyncResult, BillingWorkspaceQuery } from "./schema";
import { callStripe, requireStripe } from "./stripe";
import { subscriptionView } from "./views";
import { customerOf, markPaymentEventApplied, type PaymentEventType } from "./webhook";

/**
 * Boost credits a referrer earns when a user they referred pays a subscription checkout (spec 02: checkout grants
 * referral credits; the amount is ours: a fifth of Pro's monthly 100, usable 30 days like a boost pack).
 */
export const REFERRAL_CREDITS = 20;

type AccountStatus = BillingAccount["status"];

/** Stripe subscription statuses as the account's (spec 02 Subscription: active, trialing, past_due, cancelled). */
const STATUS: Record<string, AccountStatus> = {
  active: "active",
  trialing: "trialing",
  past_due: "past_due",
  unpaid: "past_due",
  paused: "past_due",
  canceled: "cancelled",
};
/** Preference among a customer's subscriptions: the live one wins over the ended one. */
const RANK: Record<AccountStatus, number> = { active: 3, trialing: 3, past_due: 2, cancelled: 1 };

/** Where the Stripe objects come from: the API now, or (offline) the signed event itself. */
export interface StripeSource {
  /** The customer's subscriptions with `latest_invoice` expanded where the source can. */
  subscriptions(customer: string): Promise<Stripe.Subscription[]>;
  checkoutSession(id: string): Promise<Stripe.Checkout.Session>;
  /** A charge as Stripe has it now (refunds). */
  charge(id: string): Promise<Stripe.Charge>;
  /** The Checkout Session that created a payment intent, if any (a boost pack's). */
  sessionOfPaymentIntent(paymentIntent: string): Promise<Stripe.Checkout.Session | undefined>;
  /** The user id a customer's metadata names (customers created by our checkout carry it). */
  customerUser(customer: string): Promise<string | undefined>;
  /** ISO 8601 time the objects are as of: reads are applied only if none later has been. */
  readAt(): string;
}

/** The Stripe API (the consumer with a key, and `POST /api/billing/sync`). */
export function stripeSource(stripe: Stripe): StripeSource {
  let at = new Date().toISOString();
  return {
    subscriptions: async (customer) => {
      at = new Date().toISOString();
      const list = await callStripe(() => stripe.subscriptions.list({ customer, status: "all", limit: 100, expand: ["data.latest_invoice"] }));
      return list.data;
    },
    checkoutSession: (id) => callStripe(() => stripe.checkout.sessions.retrieve(id)),
    charge: (id) => callStripe(() => stripe.charges.retrieve(id)),
    sessionOfPaymentIntent: async (paymentIntent) =>
      (await callStripe(() => stripe.checkout.sessions.list({ payment_intent: paymentIntent, limit: 1 }))).data[0],
    customerUser: async (customer) => {
      const c = await callStripe(() => stripe.customers.retrieve(customer));
      return c.deleted ? undefined : c.metadata?.user_id;
    },
    readAt: () => at,
  };
}

/**
 * The signed event's own objects (no STRIPE_SECRET_KEY: the embedded runtime): a subscription event's subscription,
 * a checkout event's session (and its subscription when expanded). Invoice events carry no subscription, so offline
 * they change nothing. As of the event's `created` time.
 */
export function carriedSource(event: Stripe.Event): StripeSource {
  const obj = event.data.object as { object: string; id?: string };
  const subs: Stripe.Subscription[] = [];
  if (obj.object === "subscription") subs.push(obj as Stripe.Subscription);
  if (obj.object === "checkout.session") {
    const s = (obj as Stripe.Checkout.Session).subscription;
    if (s && typeof s === "object") subs.push(s);
  }
  return {
    subscriptions: async (customer) => subs.filter((s) => idOf(s.customer) === customer),
    checkoutSession: async (id) => {
      if (obj.object === "checkout.session" && obj.id === id) return obj as Stripe.Checkout.Session;
      throw new Error(`Checkout session ${id} is not in event ${event.id}`);
    },
    charge: async (id) => {
      if (obj.object === "charge" && obj.id === id) return obj as Stripe.Charge;
      throw new Error(`Charge ${id} is not in event ${event.id}`);
    },
    // Offline the session cannot be looked up: a refund event changes nothing (as invoice events).
    sessionOfPaymentIntent: async () => undefined,
    customerUser: async () => undefined,
    readAt: () => new Date(event.created * 1000).toISOString(),
  };
}

/** The source the consumer reads: Stripe when a key is configured, else the event itself. */
const sourceFor = (event: Stripe.Event): StripeSource => (Config.stripeSecretKey() ? stripeSource(requireStripe()) : carriedSource(event));

const idOf = (ref: string | { id: string } | null | undefined): string | undefined => (typeof ref === "string" ? ref : ref?.id);

/** The plan of a Stripe price id among the configured ones (STRIPE_PRICE_{PRO,GROWTH}_{MONTHLY,YEARLY}). */
export function planOfPrice(priceId: string | undefined): { plan: Plan; interval: "monthly" | "yearly" } | undefined {
  if (!priceId) return undefined;
  for (const plan of ["pro", "growth"] as const) {
    for (const interval of ["monthly", "yearly"] as const) {
      if (process.env[stripePriceSetting(plan, interval)] === priceId) return { plan, interval };
    }
  }
  return undefined;
}

const PAID_PLANS = new Set<string>(["pro", "growth", "power"]);

/** A subscription's plan and interval: from its price id, else its (or its price's) `metadata.plan`. */
function planOf(sub: Stripe.Subscription): { plan: Plan; interval: "monthly" | "yearly" } | undefined {
  const price = sub.items.data[0]?.price;
  const byPrice = planOfPrice(price?.id);
  if (byPrice) return byPrice;
  const named = sub.metadata?.plan ?? price?.metadata?.plan;
  if (!named || !PAID_PLANS.has(named)) return undefined;
  const interval = price?.recurring?.interval === "year" ? "yearly" : sub.metadata?.interval === "yearly" ? "yearly" : "monthly";
  return { plan: named as Plan, interval };
}

const addMonths = (d: Date, months: number): Date => {
  const out = new Date(d);
  out.setUTCMonth(out.getUTCMonth() + months);
  return out;
};

/**
 * The month of a Stripe period (epoch seconds) that `now` falls in, for the monthly credits: the whole period for a
 * monthly subscription (as Stripe gives it: a period anchored on the 29th to 31st is not a calendar step from its
 * start, and cutting it would grant a second month inside one paid period), the k-th month from its start for a
 * yearly one (never past its end).
 */
export function creditMonth(startSec: number, endSec: number, now: Date, interval: "monthly" | "yearly"): { start: Date; end: Date } {
  const start = new Date(startSec * 1000);
  const end = new Date(endSec * 1000);
  if (interval === "monthly") return { start, end };
  let k = 0;
  while (addMonths(start, k + 1) <= now && addMonths(start, k + 1) < end) k++;
  const sliceEnd = addMonths(start, k + 1);
  return { start: addMonths(start, k), end: sliceEnd < end ? sliceEnd : end };
}

/** The subscription the account follows among a customer's (see the module comment). */
function currentOf(subs: Stripe.Subscription[]): Stripe.Subscription | undefined {
  return subs
    .filter((s) => STATUS[s.status] !== undefined)
    .sort((a, b) => RANK[STATUS[b.status]!] - RANK[STATUS[a.status]!] || b.created - a.created)[0];
}

/**
 * When a live yearly subscription's next month is due, if its current period was already paid and credited (the
 * account follows the same subscription and period, and holds the period's first monthly grant, which only a paid
 * invoice's sync makes): the start of the month `now` falls in while that month is not credited yet (the sweeper
 * grants it at once), else its end (the next month), none in the year's last month. Undefined for a period never
 * credited as paid.
 */
async function renewalOfPaidYear(userId: string, account: BillingAccount, subscriptionId: string, startSec: number, endSec: number): Promise<string | undefined> {
  const periodStart = new Date(startSec * 1000).toISOString();
  if (account.stripe_subscription_id !== subscriptionId || account.subscription_start !== periodStart) return undefined;
  const { data: paidGrant } = await db().entities.creditLedger.get({ user_id: userId, key: `grant#period#${periodStart}` }).go({ consistent: true });
  if (!paidGrant) return undefined;
  const month = creditMonth(startSec, endSec, new Date(), "yearly");
  if (account.period_start < month.start.toISOString()) return month.start.toISOString();
  return month.end.getTime() < endSec * 1000 ? month.end.toISOString() : undefined;
}

/** What `syncAccount` did. */
export interface SyncOutcome {
  /** False when Stripe has no subscription the account can follow (or the plan is unknown): nothing written. */
  synced: boolean;
  subscription_id?: string;
  plan?: Plan;
  status?: AccountStatus;
  /** The monthly grant, when the current period is paid (`applied: false` when an earlier sync made it). */
  grant?: GrantResult;
  /** The upgrade's top-up, when the plan rose within the period (`grantUpgrade`). */
  upgrade?: GrantResult;
  /** False when a read that started later had already been written (this one was older). */
  written?: boolean;
}

/**
 * Bring a user's billing account to the state of their Stripe customer's current subscription (see the module
 * comment: plan, status, cancel_at_period_end, the monthly grant of a paid period).
 * @param userId the account's user (partition `bill#<user id>`)
 * @param customer the user's Stripe customer ("cus_...")
 * @param source where the subscriptions are read (`stripeSource`, or `carriedSource` offline)
 * @throws AppError SERVICE_UNAVAILABLE (503) when Stripe fails (the consumer retries).
 */
export async function syncAccount(userId: string, customer: string, source: StripeSource): Promise<SyncOutcome> {
  const subs = await source.subscriptions(customer);
  const readAt = source.readAt();
  const sub = currentOf(subs);
  if (!sub) return { synced: false };
  const plan = planOf(sub);
  if (!plan) return { synced: false, subscription_id: sub.id };
  const status = STATUS[sub.status]!;
  const item = sub.items.data[0];
  const invoice = sub.latest_invoice;
  const paid = typeof invoice === "object" && invoice !== null && invoice.status === "paid";
  let granted: GrantResult | undefined;
  let upgraded: GrantResult | undefined;
  // A paid yearly period has later months to credit: the credit sweeper grants each at `renew_at` (renewYearly).
  let renewAt: string | undefined;
  const before = await accountOf(userId);
  if (item && paid && (status === "active" || status === "trialing")) {
    const period = creditMonth(item.current_period_start, item.current_period_end, new Date(), plan.interval);
    granted = await grant(userId, { bucket: "monthly", source: invoice.id, credits: PLANS[plan.plan].monthly_credits, period, periodPlan: plan.plan });
    if (plan.interval === "yearly" && period.end.getTime() < item.current_period_end * 1000) renewAt = period.end.toISOString();
    // An upgrade within the period (docs/decisions.md "Plan changes"): the period was paid at a lower plan, so its
    // quota rises to the new plan's at once, once per period and plan. A downgrade changes nothing until the next
    // period's grant (the entitlement keeps the period's plan until then).
    const now = await accountOf(userId);
    const paidAt = now.period_plan ?? before.plan;
    if (now.period_start === period.start.toISOString() && paidAt !== "trial" && planRank(plan.plan) > planRank(paidAt)) {
      upgraded = await grantUpgrade(userId, { periodStart: now.period_start, from: paidAt, to: plan.plan });
    }
  } else if (item && plan.interval === "yearly" && (status === "active" || status === "trialing")) {
    // The latest invoice is not the year's (a later proration invoice voided, uncollectible or open) while the
    // subscription stays live: a year this account was already credited for as paid (same subscription and period,
    // its first month's paid grant on the ledger) keeps its monthly renewals. Nothing is granted here.
    // Not for a plan above the one the year was paid at (an upgrade whose proration is unpaid): the sweeper grants the
    // account's plan's credits, and that plan is not paid for.
    const paidPlan = (before.period_plan ?? before.plan) as Plan;
    if (planRank(plan.plan) <= planRank(paidPlan)) renewAt = await renewalOfPaidYear(userId, before, sub.id, item.current_period_start, item.current_period_end);
  }
  // The subscription's period as paid: a subscription cancelled while its renewal was unpaid (Stripe's dunning, or a
  // cancel within the past-due grace) was paid up to the start of its current period only, not to its end.
  const subscriptionPeriod = item
    ? {
        subscription_start: new Date(item.current_period_start * 1000).toISOString(),
        subscription_end: new Date((status === "cancelled" && !paid ? item.current_period_start : item.current_period_end) * 1000).toISOString(),
      }
    : {};
  // When the payment became overdue: kept while past_due, else the open invoice's creation (a renewal's is its
  // period's start; a failed mid-period invoice's is its own, so the period already paid keeps its grace from then).
  const open = typeof invoice === "object" && invoice !== null && invoice.status === "open" ? invoice : undefined;
  const past_due_since =
    status !== "past_due" ? undefined : before.status === "past_due" && before.past_due_since ? before.past_due_since : open ? new Date(open.created * 1000).toISOString() : readAt;
  // When the paid plan stops applying (cancelled, cancelling, past due): the sweeper expires the quota then.
  const lapseAt = paidUntil({ plan: plan.plan, status, period_end: before.period_end, cancel_at_period_end: sub.cancel_at_period_end, ...subscriptionPeriod, past_due_since });
  const dueAt = [renewAt, lapseAt ?? undefined].filter((x): x is string => !!x).sort()[0];
  let written = true;
  try {
    const patch = db()
      .entities.billingAccount.patch({ user_id: userId })
      .set({
        plan: plan.plan,
        status,
        cancel_at_period_end: sub.cancel_at_period_end,
        stripe_subscription_id: sub.id,
        ...(item ? { stripe_price_id: item.price.id } : {}),
        billing_interval: plan.interval,
        stripe_synced_at: readAt,
        ...subscriptionPeriod,
        ...(past_due_since ? { past_due_since } : {}),
        ...(dueAt ? { renewal: RENEWAL_DUE, renew_at: dueAt } : {}),
      });
    // A monthly plan that renews, the last month of a year, an unpaid renewal: nothing for the sweeper to do.
    await patch
      .remove([...(dueAt ? [] : (["renewal", "renew_at"] as const)), ...(past_due_since ? [] : (["past_due_since"] as const))])
      .where((a, op) => `${op.notExists(a.stripe_synced_at)} OR ${op.lte(a.stripe_synced_at, readAt)}`)
      .go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
    written = false;
  }
  return { synced: true, subscription_id: sub.id, plan: plan.plan, status, grant: granted, upgrade: upgraded, written };
}

/** Record the customer on the account unless it has one (checkout.ts writes it first; this covers the rest). */
async function linkCustomer(userId: string, customer: string): Promise<void> {
  await accountOf(userId);
  try {
    await db()
      .entities.billingAccount.patch({ user_id: userId })
      .set({ stripe_customer_id: customer })
      .where((a, op) => op.notExists(a.stripe_customer_id))
      .go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
  }
}

/**
 * The user whose account a Stripe customer is: the account holding it (written at the first checkout), else the
 * `user_id` metadata our checkout put on the object or the customer (then the account is linked to it).
 * @throws Error when none is found (the consumer's retries, then the dead-letter queue, keep the event).
 */
async function userOfCustomer(customer: string, hint: string | null | undefined, source: StripeSource): Promise<string> {
  const { data } = await db().entities.billingAccount.query.byStripeCustomer({ stripe_customer_id: customer }).go();
  if (data[0]) return data[0].user_id;
  const userId = hint ?? (await source.customerUser(customer));
  if (!userId) throw new Error(`No billing account for Stripe customer ${customer}`);
  await linkCustomer(userId, customer);
  return userId;
}

/** The `user_id` metadata of an event's object: a subscription's own, an invoice's subscription's. */
function metadataUser(obj: Stripe.Event.Data.Object): string | undefined {
  const o = obj as { metadata?: Stripe.Metadata | null; parent?: Stripe.Invoice.Parent | null };
  return o.metadata?.user_id ?? o.parent?.subscription_details?.metadata?.user_id ?? undefined;
}

/**
 * checkout.session.completed (spec 02: links the customer; provisions boost packs; grants referral credits), from
 * the session as the source has it now:
 * - the session's customer is linked to the account of its `user_id` (our checkout's metadata);
 * - a paid boost pack session (`pack_type`) grants the pack's credits once (`grant#<session id>`), for 30 days from
 *   the event (spec 02 Boost pack);
 * - a subscription session syncs the account (plan, status, the first month's credits) and, when paid with another
 *   user's `referral_code`, grants that user REFERRAL_CREDITS once per referred account (`grant#referral#<user id>`),
 *   never to the payer or the member who started the checkout.
 */
async function applyCheckoutCompleted(event: Stripe.Event, source: StripeSource): Promise<void> {
  const given = event.data.object as Stripe.Checkout.Session;
  const session = await source.checkoutSession(given.id);
  if (session.status !== "complete") return;
  const customer = idOf(session.customer);
  const userId = session.metadata?.user_id ?? session.client_reference_id ?? (customer ? await userOfCustomer(customer, undefined, source) : undefined);
  if (!userId) throw new Error(`Checkout session ${session.id} names no user`);
  if (customer) await linkCustomer(userId, customer);
  const paid = session.payment_status === "paid";
  const expiresAt = new Date((event.created + BOOST_VALIDITY_DAYS * 86_400) * 1000);
  const pack = session.metadata?.pack_type;
  if (session.mode === "payment" && paid && pack && Object.hasOwn(BOOST_PACKS, pack)) await grantPack(userId, session.id, pack, expiresAt);
  if (session.mode !== "subscription") return;
  if (customer) await syncAccount(userId, customer, source);
  const code = session.metadata?.referral_code;
  if (!paid || !code) return;
  const { data: ref } = await db().entities.referralCode.get({ code }).go();
  if (!ref || ref.user_id === userId || ref.user_id === session.metadata?.initiated_by) return;
  await grant(ref.user_id, { bucket: "boost", source: referralSource(userId), credits: REFERRAL_CREDITS, expiresAt });
}

/**
 * charge.refunded: a refunded boost pack's unused credits are revoked, once per refund (`revokeBoost`). The charge is
 * re-read; its payment intent names the pack's Checkout Session (our boost checkout's metadata: user_id, pack_type).
 * A full refund revokes everything the pack has left; a partial one the refunded share of the pack's credits (Stripe's
 * `amount_refunded` is cumulative: the share less what earlier refunds revoked, rounded up to 0.25), at most what is
 * left. Credits already spent stay spent. A refund of anything else (a subscription invoice) changes no credits.
 */
async function applyRefund(event: Stripe.Event, source: StripeSource): Promise<void> {
  const given = event.data.object as Stripe.Charge;
  const charge = await source.charge(given.id);
  const paymentIntent = idOf(charge.payment_intent);
  if (!paymentIntent || charge.amount_refunded <= 0) return;
  const session = await source.sessionOfPaymentIntent(paymentIntent);
  const pack = session?.metadata?.pack_type;
  const userId = session?.metadata?.user_id;
  if (!session || session.mode !== "payment" || !pack || !userId || !Object.hasOwn(BOOST_PACKS, pack)) return;
  const credits = BOOST_PACKS[pack as keyof typeof BOOST_PACKS].credits;
  const share = charge.refunded || charge.amount <= 0 ? undefined : (credits * charge.amount_refunded) / charge.amount;
  // Stripe does not order deliveries: a refund applied before its checkout.session.completed would revoke nothing and
  // the pack would then be granted whole. The charge proves the session paid, so the pack is granted here (the grant
  // is keyed by the session: the checkout event's later grant finds it made) and then revoked.
  await grantPack(userId, session.id, pack, new Date(((session.created ?? charge.created) + BOOST_VALIDITY_DAYS * 86_400) * 1000));
  await revokeBoost(userId, session.id, share);
}

/** Grant a paid boost pack's credits, once per Checkout Session (`grant#<session id>`), valid until `expiresAt`. */
async function grantPack(userId: string, sessionId: string, pack: string, expiresAt: Date): Promise<void> {
  await grant(userId, { bucket: "boost", source: sessionId, credits: BOOST_PACKS[pack as keyof typeof BOOST_PACKS].credits, expiresAt });
}

/**
 * Apply one verified payment event (the payments consumer, functions/events/payments-consumer.ts; spec 02 Inbound
 * webhook events), then mark its receipt applied. Subscription and invoice events all sync the customer's account to
 * Stripe's current state (`syncAccount`: created/updated → plan, status, period; deleted → cancelled;
 * payment_succeeded → active and the period's credits; payment_failed → past_due), so the event's own snapshot, which
 * may be stale, only names the customer. Idempotent: applying an event again changes nothing.
 * @throws AppError SERVICE_UNAVAILABLE when Stripe fails; Error when the customer has no account (both retried by the
 *   queue, then dead-lettered).
 */
export async function applyPaymentEvent(event: Stripe.Event): Promise<void> {
  const source = sourceFor(event);
  const type = event.type as PaymentEventType;
  if (type === "checkout.session.completed" || type === "checkout.session.async_payment_succeeded" || type === "checkout.session.async_payment_failed") {
    // The session is re-read: a delayed payment that succeeded reads paid (its pack is granted, once per session), one
    // that failed reads unpaid (nothing granted; a subscription session syncs the account to Stripe's state).
    await applyCheckoutCompleted(event, source);
  } else if (type === "charge.refunded") {
    await applyRefund(event, source);
  } else {
    const customer = customerOf(event);
    if (!customer) throw new Error(`Event ${event.id} (${event.type}) names no customer`);
    const userId = await userOfCustomer(customer, metadataUser(event.data.object), source);
    await syncAccount(userId, customer, source);
  }
  await markPaymentEventApplied(event.id);
}

/**
 * `POST /api/billing/sync?workspace_id=` (spec 02 Billing: sync after a checkout redirect, before the webhook): the
 * workspace owner's account is synced with Stripe now (`syncAccount`). Any member may ask; an account without a
 * Stripe customer (no checkout yet) is answered as it is, `synced: false`.
 * @returns `{synced, subscription}` with the Subscription of `GET /api/billing/subscription` after the sync
 * @throws AppError SERVICE_UNAVAILABLE (503) without STRIPE_SECRET_KEY (checked first, as checkout does) or when
 *   Stripe fails; FORBIDDEN (403) for a non-member.
 */
export async function syncWorkspace(userId: string, q: BillingWorkspaceQuery): Promise<z.output<typeof BillingSyncResult>> {
  const stripe = requireStripe();
  await requireMember(userId, q.workspace_id);
  const { data: ws } = await db().entities.workspace.get({ id: q.workspace_id }).go({ consistent: true });
  if (!ws) throw Errors.forbidden();
  const before = await accountOf(ws.owner_id);
  if (!before.stripe_customer_id) return { synced: false, subscription: await subscriptionView(q.workspace_id, before) };
  const outcome = await syncAccount(ws.owner_id, before.stripe_customer_id, stripeSource(stripe));
  return { synced: outcome.synced, subscription: await subscriptionView(q.workspace_id, await accountOf(ws.owner_id)) };
}

/** What one renewal sweep did. */
export interface RenewalReport {
  due: number;
  /** Monthly grants made (a grant already made by a sync of the same month counts as done, not here). */
  granted: number;
  /** Accounts whose paid plan lapsed and whose remaining quota this sweep expired. */
  lapsed: number;
  errors: unknown[];
}

/**
 * Billing's due accounts (the sparse `renewals` index, accounts whose `renew_at` has passed; never a scan):
 * - a paid plan that has lapsed (core/billing/entitlement.ts: cancelled or cancelling past the period's end, past_due
 *   past its grace): what is left of its monthly quota expires, once (`lapseQuota`, ledger `expire#lapse#<period>`),
 *   and the account leaves the index (its next paid invoice syncs it again);
 * - a live yearly subscription (Stripe invoices it once a year and sends nothing in between): the plan's monthly
 *   credits for the month of its paid period that `now` falls in (the same `grant#period#<start>` key a sync would
 *   use, so nothing is granted twice);
 * then `renew_at` moves to the next thing due (the month's end while months are left, or the plan's lapse), or the
 * account leaves the index. Errors are collected, not thrown.
 * @param now the sweep's clock (tests pass a later time)
 */
export async function renewYearly(now: Date = new Date()): Promise<RenewalReport> {
  const { data } = await db()
    .entities.billingAccount.query.renewals({ renewal: RENEWAL_DUE })
    .lte({ renew_at: now.toISOString() })
    .go({ limit: 200 });
  const report: RenewalReport = { due: data.length, granted: 0, lapsed: 0, errors: [] };
  for (const listed of data) {
    try {
      // The index is eventually consistent, and a sync may have written since it was read (a paid retry that moved
      // `renew_at`, a cancellation): the decision is made on the account as it is now, and skipped when another
      // writer moved its due time.
      const { data: account } = await db().entities.billingAccount.get({ user_id: listed.user_id }).go({ consistent: true });
      if (!account || account.renew_at !== listed.renew_at) continue;
      const entitled = entitlementOf(account, now);
      let next: string | undefined;
      if (entitled.lapsed) {
        if ((await lapseQuota(account.user_id, now)) > 0) report.lapsed += 1;
      } else {
        const live = account.status === "active" || account.status === "trialing";
        if (live && account.billing_interval === "yearly" && account.subscription_start && account.subscription_end) {
          const start = Date.parse(account.subscription_start) / 1000;
          const end = Date.parse(account.subscription_end) / 1000;
          const month = creditMonth(start, end, now, "yearly");
          const result = await grant(account.user_id, {
            bucket: "monthly", source: `renewal#${month.start.toISOString()}`, credits: PLANS[account.plan].monthly_credits, period: month, periodPlan: account.plan,
          });
          if (result.applied) report.granted += 1;
          if (month.end.getTime() < end * 1000) next = month.end.toISOString();
        }
        if (entitled.lapses_at && (!next || entitled.lapses_at < next)) next = entitled.lapses_at;
      }
      const patch = db().entities.billingAccount.patch({ user_id: account.user_id });
      // Only while the due time is the one decided on: a sync that wrote meanwhile keeps its own.
      const read = account.renew_at;
      try {
        await (next ? patch.set({ renewal: RENEWAL_DUE, renew_at: next }) : patch.remove(["renewal", "renew_at"])).where((a, op) => op.eq(a.renew_at, read!)).go();
      } catch (err) {
        if (!isConditionalFailure(err)) throw err;
      }
    } catch (err) {
      report.errors.push(err);
    }
  }
  return report;
}
