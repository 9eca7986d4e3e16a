/**
 * The payments webhook and `POST /api/billing/sync` (spec 02 Webhooks, Inbound webhook events, Subscription status,
 * Billing sync; DESIGN.md 6.3), through the real handlers: events signed with `Stripe.webhooks.generateTestHeaderString`
 * go to `POST /api/webhooks/payments`, which verifies, records and enqueues them; the embedded runtime's in-process
 * queue delivers them to the real payments consumer, which re-reads Stripe with the real `stripe` SDK from the
 * fetch-level fake (test/support/stripe-fake.ts). The fake's store is "Stripe's current state"; each event's own
 * snapshot may be stale, as deliveries are. The account, ledger and receipts are read back from DynamoDB Local.
 */
import Stripe from "stripe";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { db } from "../../core/db/service";
import { dynamoClient } from "../../core/db/client";
import { PLANS } from "../../core/billing/plans";
import { creditMonth, REFERRAL_CREDITS, renewYearly } from "../../core/billing/sync";
import { setQueue } from "../../core/queue";
import { PAYMENT_EVENT_RETENTION_SECONDS } from "../../core/billing/payment-event.entity";
import { boostRecordId } from "../../core/billing/boost-record";
import { localPaymentsQueue } from "../../local/events";
import { eventObject, invoiceObject, stripeId, subscriptionObject, type PriceInput } from "../../local/stripe-objects";
import { simulatedUpgradeEvent } from "../../local/simulated-upgrade";
import { call, newUser, newWorkspace } from "../support/api";
import { startStripeFake, type StripeFake } from "../support/stripe-fake";
import { expectEnvelope, withEnv } from "./_helpers";

const SECRET = "whsec_test_payments_webhook";
const KEY = "sk_test_webhooks_fake";
const PRICES = {
  STRIPE_PRICE_PRO_MONTHLY: "price_wh_pro_monthly",
  STRIPE_PRICE_PRO_YEARLY: "price_wh_pro_yearly",
  STRIPE_PRICE_GROWTH_MONTHLY: "price_wh_growth_monthly",
  STRIPE_PRICE_GROWTH_YEARLY: "price_wh_growth_yearly",
};
const PRICE: Record<string, PriceInput> = {
  pro: { id: PRICES.STRIPE_PRICE_PRO_MONTHLY, interval: "month", amount: 2900 },
  growth: { id: PRICES.STRIPE_PRICE_GROWTH_MONTHLY, interval: "month", amount: 8900 },
  growthYearly: { id: PRICES.STRIPE_PRICE_GROWTH_YEARLY, interval: "year", amount: 97900 },
};
const DAY = 86_400;

let stripe: StripeFake;

beforeAll(async () => {
  stripe = await startStripeFake();
  Object.assign(process.env, PRICES, { STRIPE_SECRET_KEY: KEY, STRIPE_API_BASE: stripe.base, STRIPE_WEBHOOK_SECRET: SECRET, APP_URL: "https://app.example.com" });
});
afterAll(async () => {
  await stripe.close();
});
beforeEach(() => stripe.reset());

// ---------------------------------------------------------------------------------------------------------------
// Helpers

/** POST a payload to the webhook, signed with `secret` (Stripe's own test header) unless a header is given. */
async function post(payload: string, opts: { signature?: string | null; secret?: string } = {}) {
  const signature = opts.signature === undefined ? Stripe.webhooks.generateTestHeaderString({ payload, secret: opts.secret ?? SECRET }) : opts.signature;
  return call("POST", "/api/webhooks/payments", {
    raw: { data: payload, contentType: "application/json" },
    headers: signature === null ? {} : { "payments-signature": signature },
  });
}

/** Deliver an event and wait until the consumer has applied it (or given up). */
async function deliver(event: Stripe.Event) {
  const res = await post(JSON.stringify(event));
  await localPaymentsQueue().idle();
  return res;
}

/** A workspace owner whose account has a Stripe customer (made by the real checkout route, on the fake). */
async function payingOwner() {
  const w = await newWorkspace("Paying");
  const res = await call("POST", "/api/billing/checkout", { token: w.owner.token, body: { workspace_id: w.workspace.id, plan: "pro", interval: "monthly" } });
  expect(res.status, res.text).toBe(200);
  const customer = (await accountRow(w.owner.id))!.stripe_customer_id!;
  expect(customer).toMatch(/^cus_fake/);
  stripe.reset();
  // Stripe's periods start after the account exists (a checkout takes the customer at least seconds).
  const t0 = Math.floor(Date.now() / 1000) + 1;
  return { ...w, customer, t0 };
}

const accountRow = async (userId: string) => (await db().entities.billingAccount.get({ user_id: userId }).go({ consistent: true })).data;
const receipt = async (eventId: string) => (await db().entities.paymentEvent.get({ event_id: eventId }).go({ consistent: true })).data;
const grants = async (userId: string) =>
  (await db().entities.creditLedger.query.byUser({ user_id: userId }).begins({ key: "grant#" }).go({ consistent: true, pages: "all" })).data;
const get = async (path: string, token: string, workspaceId: string) => {
  const res = await call("GET", `/api/billing/${path}`, { token, query: { workspace_id: workspaceId } });
  expect(res.status, res.text).toBe(200);
  return res.body;
};

interface SubState {
  customer: string;
  price?: PriceInput;
  status?: Stripe.Subscription.Status;
  start: number;
  days?: number;
  invoice?: Stripe.Invoice.Status;
  cancelAtPeriodEnd?: boolean;
  id?: string;
  userId?: string;
}

/** Stripe's current state of one subscription (and its latest invoice), put in the fake; returns the object. */
function stripeHas(s: SubState): Stripe.Subscription {
  const price = s.price ?? PRICE.pro!;
  const id = s.id ?? stripeId("sub");
  const periodEnd = s.start + (s.days ?? 30) * DAY;
  const metadata: Stripe.Metadata = s.userId ? { user_id: s.userId } : {};
  const invoice = invoiceObject({ customer: s.customer, subscription: id, status: s.invoice ?? "paid", price, periodStart: s.start, periodEnd, subscriptionMetadata: metadata });
  const sub = subscriptionObject({ id, customer: s.customer, status: s.status ?? "active", price, periodStart: s.start, periodEnd, cancelAtPeriodEnd: s.cancelAtPeriodEnd, metadata, latestInvoice: invoice });
  stripe.putSubscription(sub);
  return sub;
}

// ---------------------------------------------------------------------------------------------------------------

describe("POST /api/webhooks/payments: verification", () => {
  const payload = () => JSON.stringify(eventObject("customer.subscription.updated", subscriptionObject({ customer: "cus_x", status: "active", price: PRICE.pro!, periodStart: 1, periodEnd: 2 })));

  it("400 INVALID_SIGNATURE for a signature made with another secret, and nothing is recorded", async () => {
    const body = payload();
    const res = await post(body, { secret: "whsec_someone_else" });
    expectEnvelope(res, 400, "INVALID_SIGNATURE");
    expect(await receipt(JSON.parse(body).id)).toBeNull();
  });

  it("400 INVALID_SIGNATURE for a body changed after signing", async () => {
    const body = payload();
    const signature = Stripe.webhooks.generateTestHeaderString({ payload: body, secret: SECRET });
    expectEnvelope(await post(body.replace('"active"', '"canceled"'), { signature }), 400, "INVALID_SIGNATURE");
  });

  it("400 INVALID_SIGNATURE without the payments-signature header", async () => {
    const res = await post(payload(), { signature: null });
    expectEnvelope(res, 400, "INVALID_SIGNATURE");
    expect(res.body.detail).toMatch(/payments-signature/);
  });

  it("400 INVALID_SIGNATURE naming the setting while STRIPE_WEBHOOK_SECRET is unset", async () => {
    const res = await withEnv({ STRIPE_WEBHOOK_SECRET: undefined }, () => post(payload()));
    expectEnvelope(res, 400, "INVALID_SIGNATURE");
    expect(res.body.detail).toBe("Payments webhook secret is not configured: set STRIPE_WEBHOOK_SECRET");
  });

  it("400 BAD_REQUEST for a well-signed body that is not a Stripe event, or not JSON", async () => {
    const notEvent = await post(JSON.stringify({ id: "evt_1", object: "charge" }));
    expectEnvelope(notEvent, 400, "BAD_REQUEST");
    expect(notEvent.body.errors.map((e: { loc: string[] }) => e.loc.join("."))).toContain("body.object");
    expectEnvelope(await post("not json at all"), 400, "BAD_REQUEST");
  });

  it("acknowledges an event type it does not handle without applying it; a repeat of its id is already_processed", async () => {
    const event = eventObject("customer.created", { object: "customer" });
    const payload = JSON.stringify(event);
    const first = await post(payload);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toEqual({ status: "ok" });
    const again = await post(payload);
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual({ status: "already_processed" });
    // Its id is remembered as a handled event's is (90 days), marked ignored: it is never queued for the consumer.
    const kept = await receipt(event.id);
    expect(kept).toMatchObject({ status: "ignored", type: "customer.created" });
    expect(kept!.ttl - Math.floor(Date.now() / 1000)).toBeGreaterThan(90 * DAY - 60);
  });
});

describe("the six events, each applied once", () => {
  it("customer.subscription.created: plan and period recorded, the paid period's credits granted; a replay is already_processed", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0 });
    const event = eventObject("customer.subscription.created", sub);
    const res = await deliver(event);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ status: "ok" });

    const view = await get("subscription", o.owner.token, o.workspace.id);
    expect(view).toMatchObject({
      id: sub.id, plan: "pro", status: "active", cancel_at_period_end: false, trial_ends_at: null, limits: PLANS.pro,
      current_period_start: new Date(o.t0 * 1000).toISOString(), current_period_end: new Date((o.t0 + 30 * DAY) * 1000).toISOString(),
    });
    expect(await get("credits", o.owner.token, o.workspace.id)).toMatchObject({ plan: "pro", monthly_quota: 100, monthly_remaining: 100 });
    expect(await receipt(event.id)).toMatchObject({ status: "applied", type: "customer.subscription.created", customer: o.customer });
    // The receipt expires 90 days after receipt (spec 02: stored ids are cleaned up after 90 days).
    expect((await receipt(event.id))!.ttl - Math.floor(Date.now() / 1000)).toBeGreaterThan(90 * DAY - 60);

    const replay = await deliver(event);
    expect(replay.body).toEqual({ status: "already_processed" });
    expect((await grants(o.owner.id)).filter((g) => g.bucket === "monthly")).toHaveLength(1);
    expect((await get("credits", o.owner.token, o.workspace.id)).monthly_quota).toBe(100);
    // Stripe was read for the event (the list of the customer's subscriptions with the latest invoice expanded).
    expect(stripe.to("/v1/subscriptions")[0]!.form.get("customer")).toBe(o.customer);
  });

  it("customer.subscription.updated: plan, status and cancel_at_period_end follow Stripe (growth, cancelling)", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0 });
    await deliver(eventObject("customer.subscription.created", sub));
    const updated = stripeHas({ customer: o.customer, start: o.t0, id: sub.id, price: PRICE.growth, cancelAtPeriodEnd: true });
    const event = eventObject("customer.subscription.updated", updated);
    expect((await deliver(event)).body).toEqual({ status: "ok" });
    expect(await get("subscription", o.owner.token, o.workspace.id)).toMatchObject({ plan: "growth", status: "active", cancel_at_period_end: true, limits: PLANS.growth });
    expect(await accountRow(o.owner.id)).toMatchObject({ stripe_price_id: PRICE.growth!.id, billing_interval: "monthly" });
    expect((await deliver(event)).body).toEqual({ status: "already_processed" });
    // Same period: the period's grant is not made twice; the upgrade tops the quota up to growth's once (issue #19).
    const monthly = (await grants(o.owner.id)).filter((g) => g.bucket === "monthly").map((g) => [g.key.replace(/#[^#]*Z/, "#<start>"), g.credits]);
    expect(monthly.sort()).toEqual([["grant#period#<start>", 100], ["grant#upgrade#<start>#growth", 200]]);
    expect((await get("credits", o.owner.token, o.workspace.id)).monthly_quota).toBe(300);
  });

  it("customer.subscription.deleted: cancelled", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0 });
    await deliver(eventObject("customer.subscription.created", sub));
    const deleted = stripeHas({ customer: o.customer, start: o.t0, id: sub.id, status: "canceled" });
    const event = eventObject("customer.subscription.deleted", deleted);
    expect((await deliver(event)).body).toEqual({ status: "ok" });
    expect(await get("subscription", o.owner.token, o.workspace.id)).toMatchObject({ id: sub.id, plan: "pro", status: "cancelled" });
    expect((await deliver(event)).body).toEqual({ status: "already_processed" });
    expect((await receipt(event.id))!.status).toBe("applied");
  });

  it("invoice.payment_succeeded: active and the period reset with a fresh quota, once", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0 });
    await deliver(eventObject("customer.subscription.created", sub));
    // A charge in the first period, then the renewal: Stripe moves the period and its new invoice is paid.
    const renewal = o.t0 + 30 * DAY;
    const renewed = stripeHas({ customer: o.customer, start: renewal, id: sub.id });
    const invoice = renewed.latest_invoice as Stripe.Invoice;
    const event = eventObject("invoice.payment_succeeded", invoice);
    expect((await deliver(event)).body).toEqual({ status: "ok" });
    const view = await get("subscription", o.owner.token, o.workspace.id);
    expect(view).toMatchObject({ status: "active", current_period_start: new Date(renewal * 1000).toISOString() });
    expect(await get("credits", o.owner.token, o.workspace.id)).toMatchObject({ monthly_quota: 100, monthly_remaining: 100 });
    const monthly = (await grants(o.owner.id)).filter((g) => g.bucket === "monthly");
    expect(monthly.map((g) => g.key).sort()).toEqual([`grant#period#${new Date(o.t0 * 1000).toISOString()}`, `grant#period#${new Date(renewal * 1000).toISOString()}`].sort());
    expect((await deliver(event)).body).toEqual({ status: "already_processed" });
    expect((await grants(o.owner.id)).filter((g) => g.bucket === "monthly")).toHaveLength(2);
  });

  it("invoice.payment_failed: past_due, and an unpaid renewal grants nothing", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0 });
    await deliver(eventObject("customer.subscription.created", sub));
    const failed = stripeHas({ customer: o.customer, start: o.t0 + 30 * DAY, id: sub.id, status: "past_due", invoice: "open" });
    const event = eventObject("invoice.payment_failed", failed.latest_invoice as Stripe.Invoice);
    expect((await deliver(event)).body).toEqual({ status: "ok" });
    const view = await get("subscription", o.owner.token, o.workspace.id);
    expect(view).toMatchObject({ plan: "pro", status: "past_due", current_period_start: new Date(o.t0 * 1000).toISOString() });
    expect((await grants(o.owner.id)).filter((g) => g.bucket === "monthly")).toHaveLength(1);
    expect((await deliver(event)).body).toEqual({ status: "already_processed" });
  });

  it("a failed mid-period invoice: past_due keeps the paid period's credits through the grace from that invoice; paying it restores active", async () => {
    const o = await payingOwner();
    const start = o.t0 - 20 * DAY;
    const end = start + 30 * DAY;
    // The account's trial began before the paid period (as it would have, 20 days ago).
    await db().entities.billingAccount.patch({ user_id: o.owner.id }).set({ period_start: new Date((start - DAY) * 1000).toISOString(), period_end: new Date((start + 13 * DAY) * 1000).toISOString() }).go();
    const sub = stripeHas({ customer: o.customer, start });
    await deliver(eventObject("customer.subscription.created", sub));
    expect(await get("credits", o.owner.token, o.workspace.id)).toMatchObject({ monthly_remaining: 100 });
    // A mid-period invoice (an update's proration), created now, fails: Stripe marks the subscription past_due.
    const now = Math.floor(Date.now() / 1000);
    const proration = invoiceObject({ customer: o.customer, subscription: sub.id, status: "open", price: PRICE.pro!, periodStart: start, periodEnd: end, billingReason: "subscription_update", created: now });
    stripe.putSubscription(subscriptionObject({ id: sub.id, customer: o.customer, status: "past_due", price: PRICE.pro!, periodStart: start, periodEnd: end, latestInvoice: proration }));
    await deliver(eventObject("invoice.payment_failed", proration));
    expect(await get("subscription", o.owner.token, o.workspace.id)).toMatchObject({ plan: "pro", status: "past_due" });
    expect(await get("credits", o.owner.token, o.workspace.id)).toMatchObject({ monthly_remaining: 100 });
    expect(await accountRow(o.owner.id)).toMatchObject({ past_due_since: new Date(now * 1000).toISOString() });
    // Paid: active again, the period's credits kept, the overdue mark gone.
    const paid = { ...proration, status: "paid" as const, amount_paid: proration.amount_due, amount_remaining: 0 };
    stripe.putSubscription(subscriptionObject({ id: sub.id, customer: o.customer, status: "active", price: PRICE.pro!, periodStart: start, periodEnd: end, latestInvoice: paid }));
    await deliver(eventObject("invoice.payment_succeeded", paid));
    expect(await get("credits", o.owner.token, o.workspace.id)).toMatchObject({ monthly_remaining: 100 });
    expect(await get("subscription", o.owner.token, o.workspace.id)).toMatchObject({ plan: "pro", status: "active" });
    expect((await accountRow(o.owner.id))!.past_due_since).toBeUndefined();
  });

  it("a subscription cancelled while its renewal is unpaid lapses at once, not at the end of the unpaid period", async () => {
    const o = await payingOwner();
    // Ten days into a renewal that was never paid, Stripe's dunning (or the user, in the portal) cancels it.
    const cancelled = stripeHas({ customer: o.customer, start: o.t0 - 10 * DAY, status: "canceled", invoice: "open" });
    expect((await deliver(eventObject("customer.subscription.deleted", cancelled))).body).toEqual({ status: "ok" });
    expect(await accountRow(o.owner.id)).toMatchObject({ status: "cancelled", subscription_end: new Date((o.t0 - 10 * DAY) * 1000).toISOString() });
    expect((await get("subscription", o.owner.token, o.workspace.id)).limits).toEqual(PLANS.trial);
  });

  it("checkout.session.completed (subscription): links the customer, records the plan and grants the period; its invoice grants nothing more", async () => {
    const w = await newWorkspace("Linked by checkout");
    const customer = `cus_${stripeId("new")}`;
    const t0 = Math.floor(Date.now() / 1000) + 1;
    const sub = stripeHas({ customer, start: t0 });
    const session = stripe.completedSession({ mode: "subscription", customer, subscription: sub.id, metadata: { user_id: w.owner.id, workspace_id: w.workspace.id, plan: "pro", interval: "monthly" } });
    const checkout = eventObject("checkout.session.completed", session);
    expect((await deliver(checkout)).body).toEqual({ status: "ok" });
    expect(await accountRow(w.owner.id)).toMatchObject({ stripe_customer_id: customer, stripe_subscription_id: sub.id, plan: "pro", status: "active" });
    // Stripe's invoice.payment_succeeded of the same purchase, after the checkout.
    const paid = eventObject("invoice.payment_succeeded", sub.latest_invoice as Stripe.Invoice);
    expect((await deliver(paid)).body).toEqual({ status: "ok" });
    const monthly = (await grants(w.owner.id)).filter((g) => g.bucket === "monthly");
    expect(monthly).toHaveLength(1);
    expect(await get("credits", w.owner.token, w.workspace.id)).toMatchObject({ monthly_quota: 100, total_available: 100 });
    expect((await deliver(checkout)).body).toEqual({ status: "already_processed" });
  });
});

describe("one purchase grants once, whatever the order", () => {
  it("invoice.payment_succeeded before checkout.session.completed: still one monthly grant", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0, userId: o.owner.id });
    await deliver(eventObject("invoice.payment_succeeded", sub.latest_invoice as Stripe.Invoice));
    const session = stripe.completedSession({ mode: "subscription", customer: o.customer, subscription: sub.id, metadata: { user_id: o.owner.id } });
    await deliver(eventObject("checkout.session.completed", session));
    expect((await grants(o.owner.id)).filter((g) => g.bucket === "monthly")).toHaveLength(1);
    expect((await get("credits", o.owner.token, o.workspace.id)).monthly_quota).toBe(100);
  });

  it("a boost pack session grants its pack once (a second event for the same session too), for 30 days from the event", async () => {
    const o = await payingOwner();
    const session = stripe.completedSession({ mode: "payment", customer: o.customer, metadata: { user_id: o.owner.id, workspace_id: o.workspace.id, pack_type: "starter", credits: "40" } });
    const created = Math.floor(Date.now() / 1000);
    const first = eventObject("checkout.session.completed", session, { created });
    const again = eventObject("checkout.session.completed", session, { created: created + 5 });
    expect((await deliver(first)).body).toEqual({ status: "ok" });
    expect((await deliver(first)).body).toEqual({ status: "already_processed" });
    expect((await deliver(again)).body).toEqual({ status: "ok" });
    const { boosts } = await get("boosts", o.owner.token, o.workspace.id);
    expect(boosts).toEqual([
      expect.objectContaining({ id: boostRecordId(o.owner.id, session.id), pack_type: "starter", credits_added: 40, credits_remaining: 40, is_active: true, expires_at: new Date((created + 30 * DAY) * 1000).toISOString() }),
    ]);
    expect((await get("credits", o.owner.token, o.workspace.id)).bonus_credits).toBe(40);
  });

  it("an unpaid boost session grants nothing", async () => {
    const o = await payingOwner();
    const session = stripe.completedSession({ mode: "payment", payment_status: "unpaid", customer: o.customer, metadata: { user_id: o.owner.id, pack_type: "max" } });
    const event = eventObject("checkout.session.completed", session);
    await deliver(event);
    // Applied (not dead-lettered or left unread): the consumer read the session and chose to grant nothing.
    expect(await receipt(event.id)).toMatchObject({ status: "applied" });
    expect(stripe.to(`/v1/checkout/sessions/${session.id}`)).toHaveLength(1);
    expect((await get("boosts", o.owner.token, o.workspace.id)).boosts).toEqual([]);
    expect((await grants(o.owner.id)).filter((g) => g.bucket === "boost")).toEqual([]);
  });
});

describe("referral credits", () => {
  it("the referral code travels in the checkout's metadata; the referrer is credited once per referred account, never the payer", async () => {
    const referrer = await newUser();
    const referrerWs = (await call("POST", "/api/workspaces", { token: referrer.token, body: { name: "Referrer" } })).body;
    const code = referrer.profile.referral_code as string;
    const o = await payingOwner();
    const res = await call("POST", "/api/billing/checkout", { token: o.owner.token, body: { workspace_id: o.workspace.id, plan: "pro", interval: "monthly", referral_code: code } });
    expect(res.status, res.text).toBe(200);
    const form = stripe.posted("/v1/checkout/sessions")[0]!.form;
    expect(form.get("metadata[referral_code]")).toBe(code);
    expect(form.get("subscription_data[metadata][referral_code]")).toBe(code);

    const sub = stripeHas({ customer: o.customer, start: o.t0 });
    const metadata = { user_id: o.owner.id, workspace_id: o.workspace.id, plan: "pro", initiated_by: o.owner.id, referral_code: code };
    const session = stripe.completedSession({ mode: "subscription", customer: o.customer, subscription: sub.id, metadata });
    await deliver(eventObject("checkout.session.completed", session));
    // A later checkout of the same referred account (a resubscription) earns nothing more.
    const later = stripe.completedSession({ mode: "subscription", customer: o.customer, subscription: sub.id, metadata });
    await deliver(eventObject("checkout.session.completed", later));

    const referral = (await grants(referrer.id)).filter((g) => g.key.startsWith("grant#referral#"));
    expect(referral).toEqual([expect.objectContaining({ key: `grant#referral#${o.owner.id}`, credits: REFERRAL_CREDITS, bucket: "boost" })]);
    expect((await get("credits", referrer.token, referrerWs.id)).bonus_credits).toBe(REFERRAL_CREDITS);
    // Listed as what it is, under an id of its own (a UUID, not the grant's `referral#<user>` source).
    const [boost] = (await get("boosts", referrer.token, referrerWs.id)).boosts;
    expect(boost).toMatchObject({ pack_type: "referral", credits_added: REFERRAL_CREDITS, credits_remaining: REFERRAL_CREDITS, is_active: true });
    expect(boost.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect((await grants(o.owner.id)).filter((g) => g.bucket === "boost")).toEqual([]);
  });

  it("a checkout with the payer's own code, or an unknown one, is refused with 422 before Stripe", async () => {
    const o = await payingOwner();
    for (const code of [o.owner.profile.referral_code as string, "NOT-A-CODE"]) {
      const res = await call("POST", "/api/billing/checkout", { token: o.owner.token, body: { workspace_id: o.workspace.id, plan: "pro", interval: "monthly", referral_code: code } });
      expectEnvelope(res, 422, "VALIDATION_ERROR");
      expect(res.body.errors[0].loc).toEqual(["body", "referral_code"]);
    }
    expect(stripe.posted("/v1/checkout/sessions")).toEqual([]);
  });

  it("a session whose metadata names the payer's own code credits nobody", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0 });
    const session = stripe.completedSession({
      mode: "subscription", customer: o.customer, subscription: sub.id, metadata: { user_id: o.owner.id, referral_code: o.owner.profile.referral_code as string },
    });
    const event = eventObject("checkout.session.completed", session);
    await deliver(event);
    // The event was applied (the subscription synced), and still nobody was credited for the code.
    expect(await receipt(event.id)).toMatchObject({ status: "applied" });
    expect(await accountRow(o.owner.id)).toMatchObject({ plan: "pro", status: "active", stripe_subscription_id: sub.id });
    expect((await grants(o.owner.id)).filter((g) => g.bucket === "boost")).toEqual([]);
    const { data: referralGrants } = await db().entities.creditLedger.query.byUser({ user_id: o.owner.id }).begins({ key: "grant#referral#" }).go({ consistent: true });
    expect(referralGrants).toEqual([]);
  });
});

describe("out-of-order deliveries end in Stripe's current state", () => {
  it("updated (to growth) delivered before created (whose snapshot says pro): growth", async () => {
    const o = await payingOwner();
    const created = stripeHas({ customer: o.customer, start: o.t0 });
    const createdEvent = eventObject("customer.subscription.created", created, { created: o.t0 });
    const now = stripeHas({ customer: o.customer, start: o.t0, id: created.id, price: PRICE.growth });
    await deliver(eventObject("customer.subscription.updated", now, { created: o.t0 + 10 }));
    await deliver(createdEvent);
    expect(await get("subscription", o.owner.token, o.workspace.id)).toMatchObject({ plan: "growth", status: "active" });
    // Both deliveries re-read Stripe; neither applied its own snapshot.
    expect(stripe.to("/v1/subscriptions")).toHaveLength(2);
  });

  it("deleted delivered before updated (whose snapshot says active): cancelled", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0 });
    await deliver(eventObject("customer.subscription.created", sub));
    const active = stripeHas({ customer: o.customer, start: o.t0, id: sub.id, cancelAtPeriodEnd: true });
    const updatedEvent = eventObject("customer.subscription.updated", active);
    const deleted = stripeHas({ customer: o.customer, start: o.t0, id: sub.id, status: "canceled" });
    await deliver(eventObject("customer.subscription.deleted", deleted));
    await deliver(updatedEvent);
    expect(await get("subscription", o.owner.token, o.workspace.id)).toMatchObject({ status: "cancelled" });
  });

  it("payment_failed delivered after the payment that fixed it: active", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0 });
    await deliver(eventObject("customer.subscription.created", sub));
    const failedSnapshot = invoiceObject({ customer: o.customer, subscription: sub.id, status: "open", price: PRICE.pro!, periodStart: o.t0 + 30 * DAY, periodEnd: o.t0 + 60 * DAY });
    const renewed = stripeHas({ customer: o.customer, start: o.t0 + 30 * DAY, id: sub.id });
    await deliver(eventObject("invoice.payment_succeeded", renewed.latest_invoice as Stripe.Invoice));
    await deliver(eventObject("invoice.payment_failed", failedSnapshot));
    expect(await get("subscription", o.owner.token, o.workspace.id)).toMatchObject({ status: "active", current_period_start: new Date((o.t0 + 30 * DAY) * 1000).toISOString() });
  });

  it("a new subscription wins over the old one being deleted (resubscribe): the account follows the live one", async () => {
    const o = await payingOwner();
    const old = stripeHas({ customer: o.customer, start: o.t0 });
    await deliver(eventObject("customer.subscription.created", old));
    stripeHas({ customer: o.customer, start: o.t0, id: old.id, status: "canceled" });
    const fresh = subscriptionObject({ customer: o.customer, status: "active", price: PRICE.growth!, periodStart: o.t0, periodEnd: o.t0 + 30 * DAY, created: o.t0 + 5 });
    stripe.putSubscription(fresh);
    await deliver(eventObject("customer.subscription.deleted", old));
    expect(await accountRow(o.owner.id)).toMatchObject({ stripe_subscription_id: fresh.id, plan: "growth", status: "active" });
  });
});

describe("the consumer failing", () => {
  it("Stripe failing once: the queue retries and the event is applied once", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0 });
    // The SDK retries a 500 once itself (maxNetworkRetries 1); two in a row fail the consumer's first attempt.
    stripe.failNext(500, "api_error", "Injected failure", 2);
    const event = eventObject("customer.subscription.created", sub);
    expect((await deliver(event)).body).toEqual({ status: "ok" });
    expect(await receipt(event.id)).toMatchObject({ status: "applied" });
    expect((await grants(o.owner.id)).filter((g) => g.bucket === "monthly")).toHaveLength(1);
    expect(localPaymentsQueue().deadLetters.filter((d) => d.message.deduplicationId === event.id)).toEqual([]);
  });

  it("an event for a customer no account knows is retried, then dead-lettered, its receipt left received", async () => {
    const sub = subscriptionObject({ customer: "cus_unknown_anywhere", status: "active", price: PRICE.pro!, periodStart: 1, periodEnd: 2 });
    const event = eventObject("customer.subscription.updated", sub);
    expect((await deliver(event)).body).toEqual({ status: "ok" });
    const dead = localPaymentsQueue().deadLetters.filter((d) => d.message.deduplicationId === event.id);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.receiveCount).toBe(5);
    expect(await receipt(event.id)).toMatchObject({ status: "received" });
  });
});

describe("the queue failing", () => {
  /** Deliver a signed body while the payments queue refuses every message. */
  async function postWhileQueueDown(body: string) {
    setQueue("payments", { send: async () => { throw new Error("queue down"); } });
    try {
      return await post(body);
    } finally {
      setQueue("payments", localPaymentsQueue());
    }
  }

  it("an enqueue that fails answers 503 and drops the claim, so Stripe's retry is applied", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0 });
    const event = eventObject("customer.subscription.created", sub);
    expectEnvelope(await postWhileQueueDown(JSON.stringify(event)), 503, "SERVICE_UNAVAILABLE");
    expect(await receipt(event.id)).toBeNull();
    expect((await deliver(event)).body).toEqual({ status: "ok" });
    expect(await accountRow(o.owner.id)).toMatchObject({ plan: "pro", status: "active" });
  });

  it("a repeat of an event claimed but never enqueued (a crash in between) answers already_processed and applies it; 503 while the queue still fails", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0 });
    const event = eventObject("customer.subscription.created", sub);
    await db().entities.paymentEvent
      .create({ event_id: event.id, type: event.type, customer: o.customer, status: "received", ttl: Math.floor(Date.now() / 1000) + PAYMENT_EVENT_RETENTION_SECONDS })
      .go();
    // A repeat while the queue still fails is Stripe's to retry: not a 200 that would lose the event.
    expectEnvelope(await postWhileQueueDown(JSON.stringify(event)), 503, "SERVICE_UNAVAILABLE");
    expect(await receipt(event.id)).toMatchObject({ status: "received" });
    expect((await deliver(event)).body).toEqual({ status: "already_processed" });
    expect(await receipt(event.id)).toMatchObject({ status: "applied" });
    expect(await accountRow(o.owner.id)).toMatchObject({ plan: "pro", status: "active" });
  });
});

describe("POST /api/billing/sync", () => {
  const sync = (token: string, workspaceId: string) => call("POST", "/api/billing/sync", { token, query: { workspace_id: workspaceId } });

  it("a member syncs the owner's account from Stripe before any webhook", async () => {
    const o = await payingOwner();
    const member = await newUser();
    expect((await call("POST", `/api/workspaces/${o.workspace.id}/members`, { token: o.owner.token, body: { email: member.email, role: "member" } })).status).toBe(201);
    const sub = stripeHas({ customer: o.customer, start: o.t0 });
    const res = await sync(member.token, o.workspace.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ synced: true, subscription: { id: sub.id, workspace_id: o.workspace.id, plan: "pro", status: "active", limits: PLANS.pro } });
    expect((await get("credits", o.owner.token, o.workspace.id)).monthly_quota).toBe(100);
    // The webhook arriving afterwards changes nothing more.
    await deliver(eventObject("customer.subscription.created", sub));
    expect((await grants(o.owner.id)).filter((g) => g.bucket === "monthly")).toHaveLength(1);
  });

  it("an account without a Stripe customer is answered as it is, without calling Stripe", async () => {
    const w = await newWorkspace("No customer");
    const res = await sync(w.owner.token, w.workspace.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ synced: false, subscription: { plan: "trial", status: "trialing" } });
    expect(stripe.requests).toEqual([]);
  });

  it("403 for a non-member", async () => {
    const o = await payingOwner();
    const outsider = await newUser();
    expectEnvelope(await sync(outsider.token, o.workspace.id), 403, "FORBIDDEN");
    expect(stripe.requests).toEqual([]);
  });

  it("503 naming STRIPE_SECRET_KEY while Stripe is not configured", async () => {
    const w = await newWorkspace("Unconfigured");
    const res = await withEnv({ STRIPE_SECRET_KEY: undefined }, () => sync(w.owner.token, w.workspace.id));
    expectEnvelope(res, 503, "SERVICE_UNAVAILABLE");
    expect(res.body.detail).toBe("Billing is not configured: set STRIPE_SECRET_KEY");
  });
});

describe("offline: the simulated upgrade (no STRIPE_SECRET_KEY)", () => {
  it("the signed event's own subscription is applied: plan pro, 100 credits, without any Stripe call", async () => {
    const w = await newWorkspace("Offline");
    const event = simulatedUpgradeEvent({ userId: w.owner.id, plan: "pro", interval: "monthly" });
    await withEnv({ STRIPE_SECRET_KEY: undefined }, async () => {
      expect((await deliver(event)).body).toEqual({ status: "ok" });
    });
    expect(stripe.requests).toEqual([]);
    expect(await get("subscription", w.owner.token, w.workspace.id)).toMatchObject({ plan: "pro", status: "active" });
    expect((await get("credits", w.owner.token, w.workspace.id)).monthly_quota).toBe(100);
    expect(await receipt(event.id)).toMatchObject({ status: "applied" });
  });

  it("older carried snapshots do not overwrite newer ones (ordered by the event's time)", async () => {
    const w = await newWorkspace("Offline order");
    const growth = simulatedUpgradeEvent({ userId: w.owner.id, plan: "growth", interval: "monthly" });
    const older = simulatedUpgradeEvent({ userId: w.owner.id, plan: "pro", interval: "monthly", now: new Date(Date.now() - 60_000) });
    await withEnv({ STRIPE_SECRET_KEY: undefined }, async () => {
      await deliver(growth);
      await deliver(older);
    });
    expect((await get("subscription", w.owner.token, w.workspace.id)).plan).toBe("growth");
  });
});

describe("creditMonth", () => {
  it("a monthly period is one month; a yearly one is cut into months from its start", () => {
    const start = Date.UTC(2026, 0, 15) / 1000;
    const monthEnd = Date.UTC(2026, 1, 15) / 1000;
    const yearEnd = Date.UTC(2027, 0, 15) / 1000;
    expect(creditMonth(start, monthEnd, new Date(Date.UTC(2026, 0, 20)), "monthly")).toEqual({ start: new Date(start * 1000), end: new Date(monthEnd * 1000) });
    expect(creditMonth(start, yearEnd, new Date(Date.UTC(2026, 3, 20)), "yearly")).toEqual({ start: new Date(Date.UTC(2026, 3, 15)), end: new Date(Date.UTC(2026, 4, 15)) });
    expect(creditMonth(start, yearEnd, new Date(Date.UTC(2026, 11, 31)), "yearly")).toEqual({ start: new Date(Date.UTC(2026, 11, 15)), end: new Date(yearEnd * 1000) });
  });

  it("a monthly period anchored on the 31st that starts in a shorter month is one period, whenever it is synced", () => {
    // Stripe's period Feb 28 → Mar 31 (anchor day 31): a calendar month from its start is Mar 28, inside the period.
    const start = Date.UTC(2026, 1, 28, 14) / 1000;
    const end = Date.UTC(2026, 2, 31, 14) / 1000;
    for (const day of [1, 27, 29, 30]) {
      expect(creditMonth(start, end, new Date(Date.UTC(2026, 2, day, 12)), "monthly")).toEqual({ start: new Date(start * 1000), end: new Date(end * 1000) });
    }
  });
});

/** The start of the `k`-th credit month of a year begun at `start` (calendar months from its day and time). */
const monthsFrom = (start: Date) => (k: number) => {
  const d = new Date(start);
  d.setUTCMonth(d.getUTCMonth() + k);
  return d;
};

describe("yearly subscriptions: each month's credits without an event from Stripe", () => {
  it("the paid year's first month is granted by the sync; the sweeper grants each next month once, and stops after the year", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0, price: PRICE.growthYearly, days: 365 });
    await deliver(eventObject("customer.subscription.created", sub));
    const start = new Date(o.t0 * 1000);
    const month = monthsFrom(start);
    expect(await accountRow(o.owner.id)).toMatchObject({ billing_interval: "yearly", renewal: "due", renew_at: month(1).toISOString(), plan: "growth" });
    expect((await get("credits", o.owner.token, o.workspace.id)).monthly_quota).toBe(300);
    // The subscription's period is the paid year, as Stripe bills it; the credit month is the credits' own.
    expect(await get("subscription", o.owner.token, o.workspace.id)).toMatchObject({ current_period_start: start.toISOString(), current_period_end: new Date((o.t0 + 365 * 86_400) * 1000).toISOString() });

    // Nothing is due before the month ends.
    expect((await renewYearly(new Date(month(1).getTime() - 60_000))).granted).toBe(0);
    // A month and a day later: month 2 is granted once, however often the sweeper runs.
    const later = new Date(month(1).getTime() + 86_400_000);
    const first = await renewYearly(later);
    expect(first.errors).toEqual([]);
    expect(first.granted).toBeGreaterThanOrEqual(1);
    await renewYearly(later);
    const monthly = (await grants(o.owner.id)).filter((g) => g.bucket === "monthly").map((g) => g.period_start);
    expect(monthly).toEqual([start.toISOString(), month(1).toISOString()]);
    expect(await accountRow(o.owner.id)).toMatchObject({ period_start: month(1).toISOString(), period_end: month(2).toISOString(), quota_remaining: 300, renew_at: month(2).toISOString() });

    // In the year's last month there is nothing more to renew; a cancelled account is cleared without a grant.
    await renewYearly(new Date(month(11).getTime() + 86_400_000));
    const last = await accountRow(o.owner.id);
    expect(last!.renewal).toBeUndefined();
    expect(last!.period_start).toBe(month(11).toISOString());
    expect((await renewYearly(new Date(month(13).getTime()))).granted).toBe(0);
  });

  it("a paid year whose latest invoice later becomes a void proration invoice (still active) keeps its monthly credits", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0, price: PRICE.growthYearly, days: 365 });
    await deliver(eventObject("customer.subscription.created", sub));
    const start = new Date(o.t0 * 1000);
    const month = monthsFrom(start);
    const monthly = async () => (await grants(o.owner.id)).filter((g) => g.bucket === "monthly").map((g) => g.period_start);
    // The same subscription and paid year; its latest invoice is now a voided mid-year proration.
    const voided = eventObject("customer.subscription.updated", stripeHas({ customer: o.customer, start: o.t0, price: PRICE.growthYearly, days: 365, id: sub.id, invoice: "void" }));
    await deliver(voided);
    expect(await receipt(voided.id)).toMatchObject({ status: "applied" });
    expect(await accountRow(o.owner.id)).toMatchObject({ plan: "growth", status: "active", billing_interval: "yearly", renewal: "due", renew_at: month(1).toISOString() });
    expect(await monthly()).toEqual([start.toISOString()]);

    // The credit sweeper a month and a minute later grants month 2 (and keeps the account due for month 3).
    const report = await renewYearly(new Date(month(1).getTime() + 60_000));
    expect(report.errors).toEqual([]);
    expect(await monthly()).toEqual([start.toISOString(), month(1).toISOString()]);
    expect(await accountRow(o.owner.id)).toMatchObject({ period_start: month(1).toISOString(), quota_remaining: 300, renew_at: month(2).toISOString() });
    expect((await get("credits", o.owner.token, o.workspace.id)).monthly_quota).toBe(300);
  });

  it("a yearly period never paid (its latest invoice void from the start) is not made due and grants nothing", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0, price: PRICE.growthYearly, days: 365, invoice: "void" });
    await deliver(eventObject("customer.subscription.created", sub));
    const row = await accountRow(o.owner.id);
    expect(row).toMatchObject({ plan: "growth", billing_interval: "yearly" });
    expect(row!.renewal).toBeUndefined();
    expect((await grants(o.owner.id)).filter((g) => g.bucket === "monthly")).toEqual([]);
  });

  it("a sweep that read the due index before a sync moved the account on decides on the account as it is now: the sync's due time stays", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0, price: PRICE.growthYearly, days: 365 });
    await deliver(eventObject("customer.subscription.created", sub));
    const due = (await accountRow(o.owner.id))!.renew_at!;
    // The index copy the sweep reads says "past_due and lapsed"; a paid retry's sync has meanwhile made the account
    // active and due later (written just after the sweep's Query, as an index lagging behind the table would show it).
    await db().entities.billingAccount.patch({ user_id: o.owner.id }).set({ status: "past_due", past_due_since: new Date((o.t0 - 30 * DAY) * 1000).toISOString() }).go();
    const moved = new Date(Date.parse(due) + 20 * DAY * 1000).toISOString();
    const name = `syncAfterSweepRead-${o.owner.id}`;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        if (context.commandName === "QueryCommand" && JSON.stringify(args.input).includes("renew#due")) {
          dynamoClient().middlewareStack.remove(name);
          await db().entities.billingAccount.patch({ user_id: o.owner.id }).set({ status: "active", renewal: "due", renew_at: moved }).remove(["past_due_since"]).go();
        }
        return out;
      },
      { step: "initialize", name },
    );
    try {
      const report = await renewYearly(new Date(Date.parse(due) + 60_000));
      expect(report.errors).toEqual([]);
      expect(report.lapsed).toBe(0);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(await accountRow(o.owner.id)).toMatchObject({ status: "active", renewal: "due", renew_at: moved });
  });

  it("a cancelled yearly account gets no more months; it stays due only for the end of its paid year", async () => {
    const o = await payingOwner();
    const sub = stripeHas({ customer: o.customer, start: o.t0, price: PRICE.growthYearly, days: 365 });
    await deliver(eventObject("customer.subscription.created", sub));
    await db().entities.billingAccount.patch({ user_id: o.owner.id }).set({ status: "cancelled" }).go();
    const before = (await grants(o.owner.id)).length;
    await renewYearly(new Date((o.t0 + 40 * DAY) * 1000));
    expect((await grants(o.owner.id)).length).toBe(before);
    // Due again when the paid year ends (its quota then expires: test/http/billing-lifecycle.test.ts).
    expect(await accountRow(o.owner.id)).toMatchObject({ renewal: "due", renew_at: new Date((o.t0 + 365 * DAY) * 1000).toISOString() });
  });
});

