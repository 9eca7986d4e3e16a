/**
 * A subscription's whole life (issue #19; spec 02 Subscription status, Boost pack, Limits: Plans; DESIGN.md 6.3)
 * through the real handlers, the real `stripe` SDK on the fetch-level fake, and DynamoDB Local: an upgrade within a
 * period, a second checkout, cancellation and past_due reaching trial-level limits, boost packs expiring through the
 * scheduled sweeper, refunds and delayed payments, and every count limit under 20 concurrent creates.
 */
import Stripe from "stripe";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { db } from "../../core/db/service";
import { PLANS } from "../../core/billing/plans";
import { renewYearly } from "../../core/billing/sync";
import { sweepExpiredBoosts } from "../../core/billing/sweeper";
import { countDocument } from "../../core/billing/counters";
import { boostRecordId } from "../../core/billing/boost-record";
import { balanceOf, release, reserve, settle } from "../../core/billing/ledger";
import { Config } from "../../core/config";
import { localPaymentsQueue } from "../../local/events";
import { eventObject, invoiceObject, stripeId, subscriptionObject, type PriceInput } from "../../local/stripe-objects";
import { handler as creditSweeper } from "../../functions/events/credit-sweeper";
import { call, newUser, newWorkspace } from "../support/api";
import { setAccount } from "../support/billing";
import { conflictTransactions } from "../support/throttle";
import { chargeObject, startStripeFake, type StripeFake } from "../support/stripe-fake";
import { expectEnvelope } from "./_helpers";

const SECRET = "whsec_test_lifecycle";
const PRICES = {
  STRIPE_PRICE_PRO_MONTHLY: "price_lc_pro_monthly",
  STRIPE_PRICE_PRO_YEARLY: "price_lc_pro_yearly",
  STRIPE_PRICE_GROWTH_MONTHLY: "price_lc_growth_monthly",
  STRIPE_PRICE_GROWTH_YEARLY: "price_lc_growth_yearly",
};
const PRICE: Record<"pro" | "growth", PriceInput> = {
  pro: { id: PRICES.STRIPE_PRICE_PRO_MONTHLY, interval: "month", amount: 2900 },
  growth: { id: PRICES.STRIPE_PRICE_GROWTH_MONTHLY, interval: "month", amount: 8900 },
};
const DAY = 86_400;

let stripe: StripeFake;
beforeAll(async () => {
  stripe = await startStripeFake();
  Object.assign(process.env, PRICES, { STRIPE_SECRET_KEY: "sk_test_lifecycle", STRIPE_API_BASE: stripe.base, STRIPE_WEBHOOK_SECRET: SECRET, APP_URL: "https://app.example.com" });
});
afterAll(async () => stripe.close());
beforeEach(() => stripe.reset());

async function deliver(event: Stripe.Event) {
  const payload = JSON.stringify(event);
  const res = await call("POST", "/api/webhooks/payments", {
    raw: { data: payload, contentType: "application/json" },
    headers: { "payments-signature": Stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET }) },
  });
  expect(res.status, res.text).toBe(200);
  await localPaymentsQueue().idle();
  return res;
}
const receipt = async (id: string) => (await db().entities.paymentEvent.get({ event_id: id }).go({ consistent: true })).data;
const accountRow = async (userId: string) => (await db().entities.billingAccount.get({ user_id: userId }).go({ consistent: true })).data!;
const ledger = async (userId: string) => (await db().entities.creditLedger.query.byUser({ user_id: userId }).go({ consistent: true, pages: "all" })).data;
const get = async (path: string, token: string, workspaceId: string) => {
  const res = await call("GET", `/api/billing/${path}`, { token, query: { workspace_id: workspaceId } });
  expect(res.status, res.text).toBe(200);
  return res.body;
};

/** A workspace owner with a Stripe customer (made by the real checkout route). */
async function customerOwner() {
  const w = await newWorkspace("Lifecycle");
  const res = await call("POST", "/api/billing/checkout", { token: w.owner.token, body: { workspace_id: w.workspace.id, plan: "pro", interval: "monthly" } });
  expect(res.status, res.text).toBe(200);
  const customer = (await accountRow(w.owner.id)).stripe_customer_id!;
  stripe.reset();
  // Stripe's periods start after the account exists (a checkout takes the customer at least seconds).
  return { ...w, customer, t0: Math.floor(Date.now() / 1000) + 1 };
}

/** Stripe's state of one subscription with its paid (or open) latest invoice. */
function stripeHas(s: { customer: string; plan: "pro" | "growth"; start: number; id?: string; status?: Stripe.Subscription.Status; cancel?: boolean; invoice?: Stripe.Invoice.Status }) {
  const id = s.id ?? stripeId("sub");
  const end = s.start + 30 * DAY;
  const invoice = invoiceObject({ customer: s.customer, subscription: id, status: s.invoice ?? "paid", price: PRICE[s.plan], periodStart: s.start, periodEnd: end });
  const sub = subscriptionObject({ id, customer: s.customer, status: s.status ?? "active", price: PRICE[s.plan], periodStart: s.start, periodEnd: end, cancelAtPeriodEnd: s.cancel, latestInvoice: invoice });
  stripe.putSubscription(sub);
  return sub;
}

describe("plan changes within a period (deliverable 1)", () => {
  it("pro → growth mid-period: the quota becomes growth's at once (100 granted, 60 used → 300 granted, 240 left), once", async () => {
    const o = await customerOwner();
    const sub = stripeHas({ customer: o.customer, plan: "pro", start: o.t0 });
    await deliver(eventObject("customer.subscription.created", sub));
    await reserve(o.owner.id, "used-sixty", 60);
    const { settle } = await import("../../core/billing/ledger");
    await settle(o.owner.id, "used-sixty", 60);
    expect(await get("credits", o.owner.token, o.workspace.id)).toMatchObject({ plan: "pro", monthly_quota: 100, monthly_used: 60, monthly_remaining: 40 });

    const upgraded = stripeHas({ customer: o.customer, plan: "growth", start: o.t0, id: sub.id });
    const event = eventObject("customer.subscription.updated", upgraded);
    await deliver(event);
    expect(await get("credits", o.owner.token, o.workspace.id)).toMatchObject({ plan: "growth", monthly_quota: 300, monthly_used: 60, monthly_remaining: 240 });
    expect(await get("subscription", o.owner.token, o.workspace.id)).toMatchObject({ plan: "growth", limits: PLANS.growth });
    // A second delivery of the same change (a new event id, as Stripe's retries after a crash can be) and a sync grant nothing more.
    await deliver(eventObject("customer.subscription.updated", upgraded));
    await call("POST", "/api/billing/sync", { token: o.owner.token, query: { workspace_id: o.workspace.id } });
    const upgrades = (await ledger(o.owner.id)).filter((l) => l.key.startsWith("grant#upgrade#"));
    expect(upgrades).toEqual([expect.objectContaining({ credits: 200, key: `grant#upgrade#${new Date(o.t0 * 1000).toISOString()}#growth` })]);
    expect((await get("credits", o.owner.token, o.workspace.id)).monthly_quota).toBe(300);
  });

  it("pro → growth while the account item is busy (TransactionConflict on the top-up): the top-up is retried, not lost", async () => {
    const o = await customerOwner();
    const sub = stripeHas({ customer: o.customer, plan: "pro", start: o.t0 });
    await deliver(eventObject("customer.subscription.created", sub));
    // A concurrent reserve/settle on the same account item: DynamoDB cancels the upgrade's two-item transaction with
    // [None, TransactionConflict] (DynamoDB Local serializes instead, so it is injected once).
    const conflict = conflictTransactions([o.owner.id, "grant#upgrade#"], 1);
    const event = eventObject("customer.subscription.updated", stripeHas({ customer: o.customer, plan: "growth", start: o.t0, id: sub.id }));
    try {
      await deliver(event);
      expect(conflict.left).toBe(0);
    } finally {
      conflict.remove();
    }
    expect(await receipt(event.id)).toMatchObject({ status: "applied" });
    expect(await get("credits", o.owner.token, o.workspace.id)).toMatchObject({ plan: "growth", monthly_quota: 300, monthly_remaining: 300 });
    expect((await ledger(o.owner.id)).filter((l) => l.key.startsWith("grant#upgrade#"))).toEqual([expect.objectContaining({ credits: 200 })]);
    expect(await accountRow(o.owner.id)).toMatchObject({ period_plan: "growth" });
  });

  it("growth → pro mid-period: growth applies until the period's end, pro's quota from the next period", async () => {
    const o = await customerOwner();
    const sub = stripeHas({ customer: o.customer, plan: "growth", start: o.t0 });
    await deliver(eventObject("customer.subscription.created", sub));
    await deliver(eventObject("customer.subscription.updated", stripeHas({ customer: o.customer, plan: "pro", start: o.t0, id: sub.id })));
    expect(await get("subscription", o.owner.token, o.workspace.id)).toMatchObject({ plan: "growth", limits: PLANS.growth });
    expect((await get("credits", o.owner.token, o.workspace.id)).monthly_quota).toBe(300);
    const renewed = stripeHas({ customer: o.customer, plan: "pro", start: o.t0 + 30 * DAY, id: sub.id });
    await deliver(eventObject("invoice.payment_succeeded", renewed.latest_invoice as Stripe.Invoice));
    expect(await get("credits", o.owner.token, o.workspace.id)).toMatchObject({ plan: "pro", monthly_quota: 100 });
  });

  it("a second checkout while a subscription is live: 409 naming the portal, no Stripe session", async () => {
    const o = await customerOwner();
    const sub = stripeHas({ customer: o.customer, plan: "pro", start: o.t0 });
    await deliver(eventObject("customer.subscription.created", sub));
    stripe.reset();
    stripeHas({ customer: o.customer, plan: "pro", start: o.t0, id: sub.id });
    const res = await call("POST", "/api/billing/checkout", { token: o.owner.token, body: { workspace_id: o.workspace.id, plan: "growth", interval: "monthly" } });
    expectEnvelope(res, 409, "CONFLICT");
    expect(res.body).toMatchObject({ portal: "/api/billing/portal", subscription_id: sub.id });
    expect(stripe.posted("/v1/checkout/sessions")).toEqual([]);
  });

  it("a new checkout expires the customer's subscription checkout still open, so two cannot both be paid", async () => {
    const w = await newWorkspace("Two tabs");
    const checkout = (plan: string) => call("POST", "/api/billing/checkout", { token: w.owner.token, body: { workspace_id: w.workspace.id, plan, interval: "monthly" } });
    const first = await checkout("pro");
    expect(first.status, first.text).toBe(200);
    const second = await checkout("growth");
    expect(second.status, second.text).toBe(200);
    expect(stripe.to(`/v1/checkout/sessions/${first.body.session_id}/expire`).map((r) => r.method)).toEqual(["POST"]);
    expect(stripe.to(`/v1/checkout/sessions/${second.body.session_id}/expire`)).toEqual([]);
  });

  it("a subscription paid on Stripe whose webhook has not arrived yet also answers 409", async () => {
    const o = await customerOwner();
    const sub = stripeHas({ customer: o.customer, plan: "pro", start: o.t0 });
    const res = await call("POST", "/api/billing/checkout", { token: o.owner.token, body: { workspace_id: o.workspace.id, plan: "pro", interval: "monthly" } });
    expectEnvelope(res, 409, "CONFLICT");
    expect(res.body.subscription_id).toBe(sub.id);
  });
});

describe("status drives entitlements (deliverable 2)", () => {
  it("cancelled: the paid plan until the period's end, then trial-level limits and the quota expired by the sweeper, once", async () => {
    const o = await customerOwner();
    // A power account (the webhook path knows pro and growth prices; power comes from the plan name) cancelled at its end.
    const start = o.t0;
    const sub = subscriptionObject({ customer: o.customer, status: "active", price: { ...PRICE.growth, id: "price_lc_power", metadata: { plan: "power" } } as PriceInput, periodStart: start, periodEnd: start + 30 * DAY, metadata: { plan: "power" }, latestInvoice: invoiceObject({ customer: o.customer, subscription: "x", status: "paid", price: PRICE.growth, periodStart: start, periodEnd: start + 30 * DAY }) });
    stripe.putSubscription({ ...sub, cancel_at_period_end: true });
    await deliver(eventObject("customer.subscription.updated", sub));
    expect(await get("subscription", o.owner.token, o.workspace.id)).toMatchObject({ plan: "power", cancel_at_period_end: true });
    const settings = () => call("PATCH", `/api/workspaces/${o.workspace.id}/settings`, { token: o.owner.token, body: { researchCycleEnabled: true } });
    expect((await settings()).body.feature).toBeUndefined();
    const account = await accountRow(o.owner.id);
    expect(account.renewal).toBe("due");
    const end = new Date((start + 30 * DAY) * 1000);
    expect(account.renew_at).toBe(end.toISOString());

    // The period ends: the sweeper expires the quota through the ledger, once; gates read trial-level limits.
    const after = new Date(end.getTime() + 60_000);
    const first = await renewYearly(after);
    expect(first.errors).toEqual([]);
    await renewYearly(after);
    const expired = (await ledger(o.owner.id)).filter((l) => l.key.startsWith("expire#lapse#"));
    expect(expired).toEqual([expect.objectContaining({ kind: "expire", credits: 500, delta: -500 })]);
    expect((await accountRow(o.owner.id)).renewal).toBeUndefined();
    await db().entities.billingAccount.patch({ user_id: o.owner.id }).set({ subscription_end: new Date(Date.now() - 1000).toISOString() }).go();
    const refused = await settings();
    expectEnvelope(refused, 403, "FORBIDDEN");
    expect(refused.body.plan).toBe("trial");
    expect(await get("subscription", o.owner.token, o.workspace.id)).toMatchObject({ plan: "trial", limits: PLANS.trial });
    expect((await balanceOf(o.owner.id)).monthly_remaining).toBe(0);
  });

  it(`past_due keeps the plan for the grace period (${Config.pastDueGraceDays()} days), then falls to trial-level limits and reservations skip the quota`, async () => {
    const { owner, workspace } = await newWorkspace("Past due");
    await setAccount(owner.id, { plan: "power", status: "past_due" });
    const started = (days: number) => db().entities.billingAccount.patch({ user_id: owner.id }).set({ subscription_start: new Date(Date.now() - days * DAY * 1000).toISOString() }).go();
    // An operation that needs an active subscription follows the same rule: allowed within the grace, 402 after it.
    const newDocument = () => call("POST", "/api/documents", { token: owner.token, body: { workspace_id: workspace.id, document_type: "memo", title: "Grace", content: "Within the grace" } });
    await started(1);
    expect((await get("subscription", owner.token, workspace.id)).plan).toBe("power");
    const within = await newDocument();
    expect(within.status, within.text).toBe(201);
    await started(Config.pastDueGraceDays() + 1);
    expect((await get("subscription", owner.token, workspace.id)).plan).toBe("trial");
    expectEnvelope(await newDocument(), 402, "SUBSCRIPTION_REQUIRED");
    const settings = await call("PATCH", `/api/workspaces/${workspace.id}/settings`, { token: owner.token, body: { researchCycleEnabled: true } });
    expectEnvelope(settings, 403, "FORBIDDEN");
    // The 5 signup credits sit in the lapsed quota: a run cannot use them.
    await expect(reserve(owner.id, `pd-${Date.now()}`, 1)).rejects.toMatchObject({ status: 402 });
  });
});

describe("boost packs expire through the scheduled sweeper (deliverable 3)", () => {
  it("the credit sweeper closes a lapsed pack with one expire item, once; the ledger then sums to the balance", async () => {
    const { owner, workspace } = await newWorkspace("Expiring pack");
    const { grant } = await import("../../core/billing/ledger");
    const source = `cs_exp_${Date.now()}`;
    await grant(owner.id, { source, credits: 40, bucket: "boost", expiresAt: new Date(Date.now() + 60_000) });
    // Before its expiry nothing is due; two minutes later (the sweep's clock, no waiting) it is, once.
    expect((await sweepExpiredBoosts({ userId: owner.id })).due).toBe(0);
    const later = new Date(Date.now() + 120_000);
    const first = await sweepExpiredBoosts({ userId: owner.id, now: later });
    expect(first).toMatchObject({ due: 1, accounts: 1, credits_expired: 40, errors: [] });
    expect(await sweepExpiredBoosts({ userId: owner.id, now: later })).toMatchObject({ due: 0, credits_expired: 0 });
    const items = await ledger(owner.id);
    expect(items.filter((l) => l.key.startsWith("expire#boost#"))).toEqual([expect.objectContaining({ key: `expire#boost#${source}`, credits: 40, delta: -40 })]);
    expect(items.reduce((n, l) => n + l.delta, 0)).toBe((await get("credits", owner.token, workspace.id)).total_remaining);
    const { boosts } = await get("boosts", owner.token, workspace.id);
    expect(boosts[0]).toMatchObject({ credits_remaining: 0 });
  });

  it("the scheduled handler runs the boost sweep (its report carries it)", async () => {
    expect(Object.keys(await creditSweeper())).toEqual(["holds", "boosts", "renewals"]);
  }, 120_000);
});

describe("payments not covered before (deliverable 7)", () => {
  it("async_payment_succeeded grants a boost paid late; async_payment_failed grants nothing; both applied", async () => {
    const o = await customerOwner();
    const meta = { user_id: o.owner.id, workspace_id: o.workspace.id, pack_type: "plus", credits: "100" };
    const late = stripe.completedSession({ mode: "payment", customer: o.customer, metadata: meta });
    const ok = eventObject("checkout.session.async_payment_succeeded", late);
    await deliver(ok);
    expect(await receipt(ok.id)).toMatchObject({ status: "applied" });
    const failed = stripe.completedSession({ mode: "payment", payment_status: "unpaid", customer: o.customer, metadata: { ...meta, pack_type: "max" } });
    const bad = eventObject("checkout.session.async_payment_failed", failed);
    await deliver(bad);
    expect(await receipt(bad.id)).toMatchObject({ status: "applied" });
    const { boosts } = await get("boosts", o.owner.token, o.workspace.id);
    expect(boosts.map((b: any) => [b.id, b.credits_added])).toEqual([[boostRecordId(o.owner.id, late.id), 100]]);
  });

  it("charge.refunded revokes a pack's unused credits once; spent credits stay spent", async () => {
    const o = await customerOwner();
    const pi = `pi_${stripeId("x")}`;
    const session = stripe.completedSession({ mode: "payment", customer: o.customer, payment_intent: pi, metadata: { user_id: o.owner.id, pack_type: "starter", credits: "40" } });
    await deliver(eventObject("checkout.session.completed", session));
    await db().entities.billingAccount.patch({ user_id: o.owner.id }).set({ quota_remaining: 0 }).go();
    await reserve(o.owner.id, `spent-${pi}`, 15);
    const charge = chargeObject({ customer: o.customer, paymentIntent: pi, amount: 1200, refunded: 1200 });
    stripe.putCharge(charge);
    await deliver(eventObject("charge.refunded", charge));
    await deliver(eventObject("charge.refunded", charge));
    const revoked = (await ledger(o.owner.id)).filter((l) => l.key === `expire#refund#${session.id}`);
    expect(revoked).toEqual([expect.objectContaining({ credits: 25, delta: -25 })]);
    const { boosts } = await get("boosts", o.owner.token, o.workspace.id);
    expect(boosts[0]).toMatchObject({ credits_remaining: 0, is_active: false });
  });
});

describe("refunds in parts", () => {
  it("a second partial refund of a pack revokes its own share; the rest of the refund revokes what is left", async () => {
    const o = await customerOwner();
    const pi = `pi_${stripeId("x")}`;
    const session = stripe.completedSession({ mode: "payment", customer: o.customer, payment_intent: pi, metadata: { user_id: o.owner.id, pack_type: "starter", credits: "40" } });
    await deliver(eventObject("checkout.session.completed", session));
    const refund = async (refunded: number) => {
      const charge = chargeObject({ id: `ch_${stripeId("r")}`, customer: o.customer, paymentIntent: pi, amount: 1200, refunded });
      stripe.putCharge(charge);
      await deliver(eventObject("charge.refunded", charge));
    };
    const left = async () => (await get("boosts", o.owner.token, o.workspace.id)).boosts[0];
    await refund(300); // a quarter: 10 of the 40 credits
    expect(await left()).toMatchObject({ credits_remaining: 30, is_active: true });
    await refund(600); // half in all: 10 more
    expect(await left()).toMatchObject({ credits_remaining: 20, is_active: true });
    await refund(600); // the same refund again: nothing more
    expect(await left()).toMatchObject({ credits_remaining: 20 });
    await refund(1200); // refunded in full: everything left
    expect(await left()).toMatchObject({ credits_remaining: 0, is_active: false });
  });
});

describe("refunds and runs holding the pack's credits", () => {
  async function packHeld(held: number) {
    const o = await customerOwner();
    const pi = `pi_${stripeId("x")}`;
    const session = stripe.completedSession({ mode: "payment", customer: o.customer, payment_intent: pi, metadata: { user_id: o.owner.id, pack_type: "starter", credits: "40" } });
    await deliver(eventObject("checkout.session.completed", session));
    await db().entities.billingAccount.patch({ user_id: o.owner.id }).set({ quota_remaining: 0 }).go();
    const run = `held-${pi}`;
    const reservation = await reserve(o.owner.id, run, held);
    const refund = async (refunded: number) => {
      const charge = chargeObject({ id: `ch_${stripeId("r")}`, customer: o.customer, paymentIntent: pi, amount: 1200, refunded });
      stripe.putCharge(charge);
      await deliver(eventObject("charge.refunded", charge));
    };
    return { ...o, session, run, reservation, refund };
  }

  it("a full refund while a run holds 15 of the pack: the run still settles (its 13 unused forfeited) and the hold closes", async () => {
    const o = await packHeld(15);
    await o.refund(1200);
    const closing = await settle(o.owner.id, o.run, 2, {}, o.reservation);
    expect(closing).toMatchObject({ applied: true, charged: 2, returned: 0, forfeited: 13 });
    expect(await accountRow(o.owner.id)).toMatchObject({ reserved: 0 });
    expect((await get("boosts", o.owner.token, o.workspace.id)).boosts[0]).toMatchObject({ credits_remaining: 0, is_active: false });
    expect((await balanceOf(o.owner.id)).total_remaining).toBe(0);
  });

  it("a partial refund that takes all the pack has left: a run's unused hold comes back to the pack when it ends", async () => {
    const o = await packHeld(30);
    await o.refund(600); // half: 20 credits, but only 10 are left (30 are held)
    expect((await get("boosts", o.owner.token, o.workspace.id)).boosts[0]).toMatchObject({ credits_remaining: 0, is_active: true });
    expect(await release(o.owner.id, o.run)).toMatchObject({ applied: true, returned: 30, forfeited: 0 });
    expect((await get("boosts", o.owner.token, o.workspace.id)).boosts[0]).toMatchObject({ credits_remaining: 30, is_active: true });
  });

  it("a refund delivered before its checkout.session.completed: the pack is granted and revoked; the late checkout grants nothing", async () => {
    const o = await customerOwner();
    const pi = `pi_${stripeId("x")}`;
    const session = stripe.completedSession({ mode: "payment", customer: o.customer, payment_intent: pi, metadata: { user_id: o.owner.id, pack_type: "starter", credits: "40" } });
    const charge = chargeObject({ customer: o.customer, paymentIntent: pi, amount: 1200, refunded: 1200 });
    stripe.putCharge(charge);
    await deliver(eventObject("charge.refunded", charge));
    await deliver(eventObject("checkout.session.completed", session));
    const items = (await ledger(o.owner.id)).filter((l) => l.key.includes(session.id));
    expect(items.map((l) => [l.key, l.delta]).sort()).toEqual([[`expire#refund#${session.id}`, -40], [`grant#${session.id}`, 40]]);
    expect((await get("boosts", o.owner.token, o.workspace.id)).boosts[0]).toMatchObject({ credits_remaining: 0, is_active: false });
  });
});

describe("every count limit holds under 20 concurrent creates (deliverable 5)", () => {
  const settled = async (ps: Promise<{ status: number }>[]) => {
    const all = await Promise.all(ps);
    return { ok: all.filter((r) => r.status === 201).length, refused: all.filter((r) => r.status === 402).length, other: all.filter((r) => r.status !== 201 && r.status !== 402).map((r) => r.status) };
  };

  it(`workspaces: 20 concurrent creates at the trial's ${PLANS.trial.max_workspaces}: exactly that many succeed`, async () => {
    const owner = await newUser();
    const r = await settled(Array.from({ length: 20 }, (_, i) => call("POST", "/api/workspaces", { token: owner.token, body: { name: `C${i}` } })));
    expect(r).toEqual({ ok: PLANS.trial.max_workspaces, refused: 20 - PLANS.trial.max_workspaces!, other: [] });
    const { data } = await db().entities.membership.query.byUser({ user_id: owner.id }).go({ pages: "all" });
    expect(data.filter((m) => m.role === "owner")).toHaveLength(PLANS.trial.max_workspaces!);
  });

  it(`seats: 20 concurrent adds at the trial's ${PLANS.trial.max_seats_per_workspace} seats (owner included): exactly ${PLANS.trial.max_seats_per_workspace! - 1} succeed`, async () => {
    const { owner, workspace } = await newWorkspace("Seats race");
    const people = await Promise.all(Array.from({ length: 20 }, () => newUser()));
    const r = await settled(people.map((p) => call("POST", `/api/workspaces/${workspace.id}/members`, { token: owner.token, body: { email: p.email, role: "member" } })));
    expect(r).toEqual({ ok: PLANS.trial.max_seats_per_workspace! - 1, refused: 20 - (PLANS.trial.max_seats_per_workspace! - 1), other: [] });
    const members = await call("GET", `/api/workspaces/${workspace.id}/members`, { token: owner.token });
    expect(members.body.total).toBe(PLANS.trial.max_seats_per_workspace);
  });

  it("documents a month: 20 concurrent counts at a limit of 5 (pro's 20 lowered): exactly 5 succeed", async () => {
    const { owner, workspace } = await newWorkspace("Documents race");
    await setAccount(owner.id, { plan: "pro", status: "active" });
    // 15 of pro's 20 already used this period.
    const period = (await accountRow(owner.id)).period_start;
    await db().entities.usage.update({ workspace_id: workspace.id }).set({ documents: PLANS.pro.max_documents! - 5, documents_period: period }).go();
    const all = await Promise.allSettled(Array.from({ length: 20 }, () => countDocument(workspace.id)));
    expect(all.filter((x) => x.status === "fulfilled")).toHaveLength(5);
    for (const x of all.filter((y): y is PromiseRejectedResult => y.status === "rejected")) expect(x.reason).toMatchObject({ status: 402, code: "USAGE_LIMIT_EXCEEDED" });
    expect((await db().entities.usage.get({ workspace_id: workspace.id }).go({ consistent: true })).data).toMatchObject({ documents: PLANS.pro.max_documents });
  });
});

describe("documents a month through POST /api/documents (deliverable 5)", () => {
  it("20 concurrent creates with 5 of the trial's 20 left: exactly 5 are created, 15 get 402", async () => {
    const { owner, workspace } = await newWorkspace("Documents over HTTP");
    const period = (await accountRow(owner.id)).period_start;
    await db().entities.usage.update({ workspace_id: workspace.id }).set({ documents: PLANS.trial.max_documents! - 5, documents_period: period }).go();
    const all = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call("POST", "/api/documents", { token: owner.token, body: { workspace_id: workspace.id, title: `Race ${i}`, document_type: "memo", content: "Text." } }),
      ),
    );
    expect(all.filter((r) => r.status === 201)).toHaveLength(5);
    expect(all.filter((r) => r.status === 402)).toHaveLength(15);
    const { data } = await db().entities.document.query.byWorkspace({ workspace_id: workspace.id }).go({ pages: "all" });
    expect(data).toHaveLength(5);
  });
});

describe("spec fields (deliverable 4)", () => {
  it("one subscription id per account, the same in every workspace before any payment; boost packs carry runs and tokens", async () => {
    const { owner, workspace } = await newWorkspace("Ids");
    const second = await call("POST", "/api/workspaces", { token: owner.token, body: { name: "Second" } });
    const a = await get("subscription", owner.token, workspace.id);
    const b = await get("subscription", owner.token, second.body.id);
    expect(a.id).toBe(b.id);
    expect(a.id).not.toBe(workspace.id);
    expect(a.limits).toMatchObject({ chat_history_days: 30, has_export_pdf: true, has_sso: false, max_agent_runs: null });
    expect(PLANS.power).toMatchObject({ chat_history_days: 365, has_sso: true, has_audit_logs: true, has_synthesis_swarm: true, has_fs_researcher: true });
    expect(PLANS.growth).toMatchObject({ chat_history_days: 90, has_priority_execution: true, has_custom_memory: true, has_optimized_prompts: true, has_sso: false });
    const { grant } = await import("../../core/billing/ledger");
    await grant(owner.id, { source: `cs_fields_${Date.now()}`, credits: 40, bucket: "boost", expiresAt: new Date(Date.now() + 30 * DAY * 1000) });
    const { boosts } = await get("boosts", owner.token, workspace.id);
    expect(boosts[0]).toMatchObject({ agent_runs_added: 80, agent_runs_used: 0, agent_runs_remaining: 80 });
    expect(boosts[0].tokens_added).toBeGreaterThan(0);
    expect(boosts[0].tokens_remaining).toBe(boosts[0].tokens_added);
    const compute = await get("compute", owner.token, workspace.id);
    expect(compute).toMatchObject({ boost_runs_remaining: 80, boost_tokens_remaining: boosts[0].tokens_added });
  });
});
