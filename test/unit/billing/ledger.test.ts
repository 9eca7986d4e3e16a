/**
 * The billing account and the credit ledger (core/billing/ledger.ts; DESIGN.md 6.3; spec 02 "Subscription and
 * credits", "Credits", "Trial milestones", "Boost pack") against DynamoDB Local. The table is shared by the test
 * files, so every test works on fresh user ids. Time moves with a faked `Date` only (timers stay real, so the retry
 * backoff and the SDK run as usual).
 */
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import { dynamoClient } from "../../../core/db/client";
import { db } from "../../../core/db/service";
import { AppError } from "../../../core/error";
import { creditsFor } from "../../../core/billing/credits";
import { PLANS } from "../../../core/billing/plans";
import { entitlementOf } from "../../../core/billing/entitlement";
import { sweepExpiredBoosts } from "../../../core/billing/sweeper";
import { grantMilestones } from "../../../core/billing/charge";
import {
  TRIAL_MILESTONE_CREDITS,
  TRIAL_MILESTONES,
  accountOf,
  balanceOf,
  expireBoosts,
  grant,
  grantUpgrade,
  lapseQuota,
  release,
  reserve,
  settle,
  type Reservation,
} from "../../../core/billing/ledger";

const DAY = 86_400_000;
const user = () => `u-${randomUUID()}`;
const inDays = (d: number) => new Date(Date.now() + d * DAY).toISOString();

/** Everything of a user's billing partition, read back consistently. */
async function state(userId: string) {
  const e = db().entities;
  const [account, boosts, holds, ledger] = await Promise.all([
    e.billingAccount.get({ user_id: userId }).go({ consistent: true }),
    e.creditBoost.query.byUser({ user_id: userId }).go({ consistent: true, pages: "all" }),
    e.creditHold.query.byUser({ user_id: userId }).go({ consistent: true, pages: "all" }),
    e.creditLedger.query.byUser({ user_id: userId }).go({ consistent: true, pages: "all" }),
  ]);
  return { account: account.data!, boosts: boosts.data, holds: holds.data, ledger: ledger.data };
}

const total = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/**
 * The accounting identities every state must satisfy: no bucket negative; the ledger's deltas sum to the spendable
 * balance; open holds sum to `reserved`; every credit granted is spendable, held, charged or forfeited.
 */
async function expectConsistent(userId: string) {
  const s = await state(userId);
  const spendable = s.account.quota_remaining + total(s.boosts.map((b) => b.remaining));
  expect(s.account.quota_remaining).toBeGreaterThanOrEqual(0);
  for (const b of s.boosts) expect(b.remaining, `boost ${b.boost_id}`).toBeGreaterThanOrEqual(0);
  expect(s.account.reserved).toBeGreaterThanOrEqual(0);
  expect(total(s.ledger.map((l) => l.delta))).toBe(spendable);
  expect(total(s.holds.map((h) => h.credits))).toBe(s.account.reserved);
  const granted = total(s.ledger.filter((l) => l.kind === "grant").map((l) => l.credits));
  expect(granted).toBe(spendable + s.account.reserved + s.account.charged + s.account.forfeited);
  for (const l of s.ledger.filter((x) => x.kind === "settle")) expect((l.charged ?? 0) + (l.shortfall ?? 0)).toBe(l.credits);
  return s;
}

/** The 402 of an exhausted balance, or a failure naming what was thrown instead. */
async function expect402(p: Promise<unknown>) {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, "expected a 402").toBeInstanceOf(AppError);
  expect((err as AppError).status).toBe(402);
  expect((err as AppError).code).toBe("USAGE_LIMIT_EXCEEDED");
  expect((err as AppError).extra).toMatchObject({ reason: "credits_exhausted" });
  return err as AppError;
}

afterEach(() => {
  vi.useRealTimers();
});

describe("the billing account", () => {
  it("is created on first use as a trial with the signup milestone, once under concurrency", async () => {
    const u = user();
    const accounts = await Promise.all(Array.from({ length: 6 }, () => accountOf(u)));
    expect(new Set(accounts.map((a) => a.created_at)).size).toBe(1);
    const s = await expectConsistent(u);
    expect(s.account).toMatchObject({ plan: "trial", status: "trialing", quota_granted: 5, quota_remaining: 5, reserved: 0 });
    expect(s.ledger.map((l) => l.key)).toEqual(["grant#milestone#signup"]);
    expect(TRIAL_MILESTONE_CREDITS * TRIAL_MILESTONES.length).toBe(PLANS.trial.monthly_credits);
    expect(await balanceOf(u)).toEqual({
      monthly_quota: 5, monthly_used: 0, monthly_remaining: 5, bonus_credits: 0, total_available: 5, total_used: 0,
      total_remaining: 5, percentage: 0, is_blocked: false, reserved: 0,
    });
  });
});

describe("grants", () => {
  it("apply once per source: a retried or duplicated grant changes nothing and says so", async () => {
    const u = user();
    const boost = { source: `cs_${randomUUID()}`, credits: 40, bucket: "boost" as const, expiresAt: inDays(30) };
    const results = await Promise.all(Array.from({ length: 8 }, () => grant(u, boost)));
    expect(results.filter((r) => r.applied)).toHaveLength(1);
    expect(results.filter((r) => !r.applied).every((r) => r.reason === "already_applied")).toBe(true);
    expect(await grant(u, boost)).toMatchObject({ applied: false, reason: "already_applied" });

    const milestone = { source: "milestone#first_run", credits: 5, bucket: "trial" as const };
    expect((await grant(u, milestone)).applied).toBe(true);
    expect(await grant(u, milestone)).toMatchObject({ applied: false, reason: "already_applied" });

    const s = await expectConsistent(u);
    expect(s.boosts.map((b) => [b.boost_id, b.remaining])).toEqual([[boost.source, 40]]);
    expect(s.account.quota_remaining).toBe(10);
    expect(await balanceOf(u)).toMatchObject({ monthly_quota: 10, bonus_credits: 40, total_available: 50, total_remaining: 50 });
  });

  it("refuse amounts that are not positive quarter credits", async () => {
    const u = user();
    await expect(grant(u, { source: "x", credits: 0.1, bucket: "trial" })).rejects.toThrow(RangeError);
    await expect(grant(u, { source: "x", credits: -5, bucket: "trial" })).rejects.toThrow(RangeError);
    await expect(grant(u, { source: "x", credits: 5, bucket: "boost" })).rejects.toThrow(/expiresAt/);
  });

  it("a monthly grant for a later period replaces the quota and expires what was left; an earlier period is stale", async () => {
    const u = user();
    await accountOf(u); // trial: 5
    await reserve(u, "r1", 2);
    const p1 = { start: inDays(1), end: inDays(31) };
    const g = await grant(u, { source: "in_1", credits: 100, bucket: "monthly", period: p1, plan: "pro" });
    expect(g).toMatchObject({ applied: true, forfeited: 3 });
    let s = await expectConsistent(u);
    expect(s.account).toMatchObject({ plan: "pro", status: "active", period_start: p1.start, quota_granted: 100, quota_remaining: 100, forfeited: 3 });
    expect(s.ledger.find((l) => l.kind === "expire")).toMatchObject({ credits: 3, delta: -3 });
    // The reservation held 2 of the old period's quota: they do not come back into the new period.
    expect(await release(u, "r1")).toMatchObject({ applied: true, held: 2, returned: 0, forfeited: 2 });
    s = await expectConsistent(u);
    expect(s.account.quota_remaining).toBe(100);
    expect(await grant(u, { source: "in_0", credits: 100, bucket: "monthly", period: { start: inDays(-40), end: inDays(-10) } })).toMatchObject({
      applied: false,
      reason: "stale_period",
    });
    expect((await state(u)).account.quota_remaining).toBe(100);
  });
});

describe("issue #19: the trial cap, upgrades and lapsed plans", () => {
  it("20 concurrent trial milestones against the 25-credit cap: exactly 4 are granted (5 + 4 x 5 = 25)", async () => {
    const u = user();
    await accountOf(u); // signup: 5
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => grant(u, { source: `milestone#m${i}`, credits: TRIAL_MILESTONE_CREDITS, bucket: "trial", cap: 25 })),
    );
    expect(results.filter((r) => r.applied)).toHaveLength(4);
    expect(results.filter((r) => !r.applied).every((r) => r.reason === "cap_reached")).toBe(true);
    const s = await expectConsistent(u);
    expect(s.account.quota_granted).toBe(25);
    expect(s.ledger.filter((l) => l.kind === "grant")).toHaveLength(5);
  });

  it("a trial grant with a cap is refused on a paid plan", async () => {
    const u = user();
    await accountOf(u);
    await db().entities.billingAccount.patch({ user_id: u }).set({ plan: "pro", status: "active" }).go();
    expect(await grant(u, { source: "milestone#late", credits: 5, bucket: "trial", cap: 25 })).toMatchObject({ applied: false, reason: "not_trial" });
  });

  it("an upgrade within the period raises the quota to the new plan's, once per period and plan", async () => {
    const u = user();
    await accountOf(u);
    const p1 = { start: inDays(0.001), end: inDays(30) };
    await grant(u, { source: "in_1", credits: 100, bucket: "monthly", period: p1, plan: "pro" });
    await reserve(u, "used", 60);
    await settle(u, "used", 60);
    expect((await state(u)).account).toMatchObject({ period_plan: "pro", quota_granted: 100, quota_remaining: 40 });
    const up = { periodStart: p1.start, from: "pro" as const, to: "growth" as const };
    const results = await Promise.all([grantUpgrade(u, up), grantUpgrade(u, up), grantUpgrade(u, up)]);
    expect(results.filter((r) => r.applied)).toHaveLength(1);
    expect(results.find((r) => r.applied)).toMatchObject({ credits: 200, key: `grant#upgrade#${p1.start}#growth` });
    const s = await expectConsistent(u);
    expect(s.account).toMatchObject({ period_plan: "growth", quota_granted: 300, quota_remaining: 240 });
    // From a plan the period is no longer at (the period went to growth already): nothing.
    expect(await grantUpgrade(u, { periodStart: p1.start, from: "pro", to: "power" })).toMatchObject({ applied: false, reason: "stale_period" });
    expect((await grantUpgrade(u, { periodStart: p1.start, from: "growth", to: "power" })).applied).toBe(true);
    expect((await expectConsistent(u)).account).toMatchObject({ period_plan: "power", quota_granted: 500, quota_remaining: 440 });
  });

  it("a cancelled plan past its period's end: reservations skip the quota and expire it once through the ledger", async () => {
    const u = user();
    await accountOf(u);
    await grant(u, { source: "pack", credits: 10, bucket: "boost", expiresAt: inDays(20) });
    await grant(u, { source: "in_1", credits: 100, bucket: "monthly", period: { start: inDays(0.001), end: inDays(30) }, plan: "power" });
    await reserve(u, "warm", 1); // this process's fast path has now seen the account
    await db().entities.billingAccount.patch({ user_id: u }).set({ status: "cancelled", period_end: inDays(-0.001) }).go();
    const r = await reserve(u, "after", 2);
    expect(r.quota).toBe(0);
    expect(r.boosts.map((p) => p.credits)).toEqual([2]);
    const s = await expectConsistent(u);
    expect(s.account.quota_remaining).toBe(0);
    expect(s.ledger.filter((l) => l.key.startsWith("expire#lapse#"))).toEqual([expect.objectContaining({ kind: "expire", credits: 99, delta: -99, forfeited: 99 })]);
    expect(await lapseQuota(u)).toBe(0);
    // The warm-up's hold came from the lapsed quota: it is forfeited, not returned.
    expect(await release(u, "warm")).toMatchObject({ returned: 0, forfeited: 1 });
    await expectConsistent(u);
  });

  it("a plan downgraded within its period: the fast path stops at the period's end, where the lower plan's compute budget applies", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date("2026-11-20T00:00:00.000Z"));
    const u = user();
    await accountOf(u);
    await grant(u, { source: "in_1", credits: 100, bucket: "monthly", period: { start: "2026-11-01T00:00:00.000Z", end: "2026-12-01T00:00:00.000Z" }, plan: "power" });
    // Downgraded to Pro within the period paid at Power, 3M tokens used: under Power's budget, over Pro's.
    expect(PLANS.pro.token_budget).toBeLessThan(3_000_000);
    expect(PLANS.power.token_budget).toBeGreaterThan(3_000_000);
    await db().entities.billingAccount.patch({ user_id: u }).set({ plan: "pro", period_plan: "power", status: "active", period_end: "2026-12-01T00:00:00.000Z", tokens_used: 3_000_000 }).go();
    expect((await reserve(u, "in-period", 1, { computeBudget: true })).applied).toBe(true); // this process has seen it
    expect((await reserve(u, "still", 1, { computeBudget: true })).applied).toBe(true);
    // The period ends (its renewal not in yet): Pro's budget applies, as a read of the account would find.
    vi.setSystemTime(new Date("2026-12-01T00:00:01.000Z"));
    await expect(reserve(u, "after", 1, { computeBudget: true })).rejects.toMatchObject({ code: "USAGE_LIMIT_EXCEEDED", extra: { reason: "compute_budget" } });
    // A run that already holds its reservation is not refused on its retry (the same run id) in another container
    // (a fresh module: no account seen, the read path): it reserves once.
    vi.resetModules();
    const elsewhere = await import("../../../core/billing/ledger");
    expect(await elsewhere.reserve(u, "still", 1, { computeBudget: true })).toMatchObject({ run_id: "still", credits: 1, applied: false });
    await expect(elsewhere.reserve(u, "new", 1, { computeBudget: true })).rejects.toMatchObject({ code: "USAGE_LIMIT_EXCEEDED", extra: { reason: "compute_budget" } });
  });

  it("a settle on the reservation's fast path after the plan lapsed gives nothing back to the lapsed quota", async () => {
    const u = user();
    await accountOf(u);
    await grant(u, { source: "in_1", credits: 100, bucket: "monthly", period: { start: inDays(0.001), end: inDays(30) }, plan: "power" });
    const run = await reserve(u, "run", 10);
    expect(run.quota).toBe(10);
    // The plan lapses while the run works (cancelled, its period over) and the sweeper expires what the quota had left.
    await db().entities.billingAccount.patch({ user_id: u }).set({ status: "cancelled", period_end: inDays(-0.001) }).go();
    expect(await lapseQuota(u)).toBe(90);
    // The run settles with its reservation in hand (the fast path): the 9 it did not use are forfeited, not returned.
    expect(await settle(u, "run", 1, {}, run)).toMatchObject({ charged: 1, returned: 0, forfeited: 9, applied: true });
    const s = await expectConsistent(u);
    expect(s.account.quota_remaining).toBe(0);
    expect(await balanceOf(u)).toMatchObject({ monthly_remaining: 0 });
  });
});

describe("a lapsed period paid for again", () => {
  it("an upgrade's quota granted after the period's lapse is open: a hold of it gives back what it did not use", async () => {
    const u = user();
    await accountOf(u);
    const period = { start: inDays(0.001), end: inDays(30) };
    await grant(u, { source: "in_1", credits: PLANS.pro.monthly_credits, bucket: "monthly", period, plan: "pro" });
    // The plan lapses (an unpaid upgrade's grace ran out) and the sweeper expires the period's quota.
    await db().entities.billingAccount.patch({ user_id: u }).set({ status: "cancelled", period_end: inDays(-0.001) }).go();
    expect(await lapseQuota(u)).toBe(PLANS.pro.monthly_credits);
    // The card is fixed: the subscription is active again, on the higher plan, and the upgrade tops the period up.
    await db().entities.billingAccount.patch({ user_id: u }).set({ status: "active", plan: "growth", period_end: period.end }).go();
    expect((await grantUpgrade(u, { periodStart: period.start, from: "pro", to: "growth" })).applied).toBe(true);
    const run = await reserve(u, "after-upgrade", 4);
    expect(run.quota).toBe(4);
    expect(await settle(u, "after-upgrade", 1)).toMatchObject({ charged: 1, returned: 3, forfeited: 0, applied: true });
    const s = await expectConsistent(u);
    expect(s.account.quota_remaining).toBe(PLANS.growth.monthly_credits - PLANS.pro.monthly_credits - 1);
  });
});

describe("reserve's fast path (this process's last view of the account) takes nothing a read would have refused", () => {
  /** A Power account this process has reserved for once (its fast path is warm), with a 20-credit boost pack. */
  async function warm() {
    const u = user();
    await accountOf(u);
    await grant(u, { source: "pack", credits: 20, bucket: "boost", expiresAt: inDays(20) });
    await grant(u, { source: "in_1", credits: 100, bucket: "monthly", period: { start: inDays(0.001), end: inDays(30) }, plan: "power" });
    expect((await db().entities.billingAccount.get({ user_id: u }).go()).data).toMatchObject({ plan: "power", quota_remaining: 100 });
    expect((await reserve(u, "warm", 1, { computeBudget: true })).quota).toBe(1);
    return u;
  }
  const patch = (u: string, set: Record<string, unknown>) => db().entities.billingAccount.patch({ user_id: u }).set(set).go();

  it("the quota spent by another container: the run is paid from the boost pack", async () => {
    const u = await warm();
    await patch(u, { quota_remaining: 1 });
    const r = await reserve(u, "after", 5, { computeBudget: true });
    expect([r.quota, r.boosts.map((b) => b.credits)]).toEqual([1, [4]]);
  });

  it("a new period started by another container: the reservation is of the new period", async () => {
    const u = await warm();
    const start = inDays(0.01);
    await patch(u, { period_start: start, period_end: inDays(30.01), quota_remaining: 50 });
    expect((await reserve(u, "after", 2, { computeBudget: true })).period_start).toBe(start);
  });

  it("a sync that scheduled the plan's end, now past: the lapsed quota is not spent", async () => {
    const u = await warm();
    await patch(u, { cancel_at_period_end: true, period_end: inDays(-0.001), subscription_end: inDays(-0.001), stripe_synced_at: new Date().toISOString() });
    const r = await reserve(u, "after", 2, { computeBudget: true });
    expect([r.quota, r.boosts.map((b) => b.credits)]).toEqual([0, [2]]);
  });

  it("a second sync within the same second (stripe_synced_at unchanged) that ended the paid period: the lapsed quota is not spent", async () => {
    const u = await warm();
    await patch(u, { cancel_at_period_end: true, period_end: inDays(-0.001), subscription_end: inDays(-0.001) });
    const r = await reserve(u, "after", 2, { computeBudget: true });
    expect([r.quota, r.boosts.map((b) => b.credits)]).toEqual([0, [2]]);
  });

  it("the compute budget used up by other containers: 402 compute_budget", async () => {
    const u = await warm();
    await patch(u, { tokens_used: PLANS.power.token_budget });
    await expect(reserve(u, "after", 1, { computeBudget: true })).rejects.toMatchObject({ status: 402, code: "USAGE_LIMIT_EXCEEDED", extra: { reason: "compute_budget" } });
  });
});

describe("reserve", () => {
  it("uses the quota first, then boosts by earliest expiry, never an expired boost, and never part of a run", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date("2026-11-24T10:00:00.000Z"));
    const u = user();
    await accountOf(u); // quota 5
    await grant(u, { source: "late", credits: 3, bucket: "boost", expiresAt: inDays(10) });
    await grant(u, { source: "early", credits: 4, bucket: "boost", expiresAt: inDays(5) });
    await grant(u, { source: "soon", credits: 10, bucket: "boost", expiresAt: inDays(1) });
    vi.setSystemTime(new Date("2026-11-26T10:00:00.000Z")); // "soon" has expired

    const a = await reserve(u, "a", 7);
    expect(a).toMatchObject({ credits: 7, quota: 5, applied: true });
    expect(a.boosts.map((p) => [p.boost_id, p.credits])).toEqual([["early", 2]]);
    const b = await reserve(u, "b", 4);
    expect(b.quota).toBe(0);
    expect(b.boosts.map((p) => [p.boost_id, p.credits])).toEqual([["early", 2], ["late", 2]]);
    expect(await balanceOf(u)).toMatchObject({ monthly_remaining: 0, bonus_credits: 1, total_remaining: 1, reserved: 11 });

    const err = await expect402(reserve(u, "c", 2));
    expect(err.extra).toMatchObject({ required: 2, available: 1 });
    const s = await expectConsistent(u);
    expect(s.boosts.map((x) => [x.boost_id, x.remaining])).toEqual([["soon", 10], ["early", 0], ["late", 1]]);
    expect(s.holds.map((h) => h.run_id).sort()).toEqual(["a", "b"]);

    // A retried reserve of the same run is the first reservation, even with the balance gone.
    expect(await reserve(u, "b", 4)).toEqual({ ...b, applied: false });
    expect((await state(u)).ledger.filter((l) => l.kind === "reserve")).toHaveLength(2);

    // The sweeper forfeits the expired pack once; it stays unusable either way.
    expect(await expireBoosts(u)).toBe(10);
    expect(await expireBoosts(u)).toBe(0);
    const after = await expectConsistent(u);
    expect(after.account.forfeited).toBe(10);
    expect(await balanceOf(u)).toMatchObject({ bonus_credits: 1, total_remaining: 1 });
  });

  it("50 concurrent reserves of 1 against 10: exactly 10 succeed, 40 get 402, the balance ends at 0", async () => {
    const u = user();
    await accountOf(u); // quota 5
    await grant(u, { source: "pack", credits: 5, bucket: "boost", expiresAt: inDays(30) });
    const before = await balanceOf(u);
    expect(before.total_remaining).toBe(10);

    const outcomes = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => reserve(u, `run-${i}`, 1)));
    const ok = outcomes.filter((o): o is PromiseFulfilledResult<Reservation> => o.status === "fulfilled");
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected");
    expect(ok).toHaveLength(10);
    expect(ok.every((o) => o.value.applied && o.value.credits === 1)).toBe(true);
    expect(refused).toHaveLength(40);
    for (const r of refused) expect(r.reason, String(r.reason)).toMatchObject({ status: 402, code: "USAGE_LIMIT_EXCEEDED" });

    const after = await balanceOf(u);
    expect(after).toMatchObject({ total_remaining: 0, monthly_remaining: 0, bonus_credits: 0, reserved: 10, is_blocked: true });
    const s = await expectConsistent(u);
    expect(s.account.quota_remaining).toBe(0);
    expect(s.boosts[0]!.remaining).toBe(0);
    const reserves = s.ledger.filter((l) => l.kind === "reserve");
    expect(reserves).toHaveLength(10);
    expect(total(reserves.map((l) => l.delta))).toBe(after.total_remaining - before.total_remaining);
    expect(total(reserves.map((l) => -l.quota))).toBe(5);
  });
});

/**
 * DynamoDB cancels a transaction with `TransactionConflict` when another one is writing the same item; DynamoDB Local
 * serializes instead, so the conflict is injected: the next `times` transactions of `userId` are cancelled that way.
 */
function injectConflicts(userId: string, times: number) {
  const name = `conflict-${userId}`;
  let left = times;
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TransactItems?: unknown[] };
      if (/^TransactWriteItems/.test(context.commandName ?? "") && left > 0 && JSON.stringify(input).includes(userId)) {
        left--;
        throw new TransactionCanceledException({
          message: "Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]",
          $metadata: {},
          CancellationReasons: (input.TransactItems ?? []).map(() => ({ Code: "TransactionConflict", Message: "Transaction is ongoing for the item" })),
        });
      }
      return next(args);
    },
    { step: "initialize", name },
  );
  return { left: () => left, remove: () => dynamoClient().middlewareStack.remove(name) };
}

describe("conflicts", () => {
  it("a transaction conflict is retried after a backoff, and a lasting one ends in 503 with nothing changed", async () => {
    const u = user();
    await accountOf(u);
    const few = injectConflicts(u, 3);
    try {
      expect(await reserve(u, "r1", 1)).toMatchObject({ applied: true, quota: 1 });
      expect(few.left()).toBe(0);
    } finally {
      few.remove();
    }
    const lasting = injectConflicts(u, 1000);
    try {
      const err = await reserve(u, "r2", 1).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe("SERVICE_UNAVAILABLE");
      // The fast attempt (this process saw the account at r1), then the read path's first try and 11 retries.
      expect(1000 - lasting.left()).toBe(13);
    } finally {
      lasting.remove();
    }
    const s = await expectConsistent(u);
    expect(s.holds.map((h) => h.run_id)).toEqual(["r1"]);
    expect(s.account.quota_remaining).toBe(4);
  });
});

describe("settle and release", () => {
  it("settle below the reservation charges the actual cost in deduction order and gives the rest back", async () => {
    const u = user();
    await accountOf(u);
    await grant(u, { source: "b1", credits: 10, bucket: "boost", expiresAt: inDays(20) });
    await reserve(u, "run", 8); // quota 5, b1 3
    const actual = creditsFor(0.35, "success"); // 0.35 / 0.08 = 4.375, rounded up to 4.5
    expect(actual).toBe(4.5);
    const closed = await settle(u, "run", actual, { tokens: 12_000, costUsd: 0.35 });
    expect(closed).toMatchObject({ applied: true, held: 8, charged: 4.5, shortfall: 0, returned: 3.5, forfeited: 0 });
    const s = await expectConsistent(u);
    // Charged from the quota (the first held), so the quota gets 0.5 back and the boost all of its 3.
    expect(s.account).toMatchObject({ quota_remaining: 0.5, reserved: 0, charged: 4.5, tokens_used: 12_000, cost_usd: 0.35 });
    expect(s.boosts[0]!.remaining).toBe(10);
    expect(s.holds).toHaveLength(0);
    expect(await settle(u, "run", actual)).toMatchObject({ applied: false, reason: "already_applied", charged: 4.5, returned: 3.5 });
    expect(await release(u, "run")).toMatchObject({ applied: false, reason: "not_reserved" });
    expect((await state(u)).account.charged).toBe(4.5);
  });

  it("settle above the reservation charges the extra from the balance, and records what it cannot cover", async () => {
    const u = user();
    await accountOf(u); // 5
    await reserve(u, "small", 1);
    expect(await settle(u, "small", 2.5)).toMatchObject({ applied: true, held: 1, charged: 2.5, shortfall: 0 });
    expect((await balanceOf(u)).total_remaining).toBe(2.5);
    await reserve(u, "big", 2);
    expect(await settle(u, "big", 4)).toMatchObject({ applied: true, held: 2, charged: 2.5, shortfall: 1.5 });
    const s = await expectConsistent(u);
    expect(s.account).toMatchObject({ quota_remaining: 0, charged: 5, shortfall: 1.5, reserved: 0 });
    expect(await balanceOf(u)).toMatchObject({ total_remaining: 0, is_blocked: true, percentage: 100 });
  });

  it("release gives everything back once; a settle after a release charges the balance", async () => {
    const u = user();
    await accountOf(u);
    await grant(u, { source: "b", credits: 4, bucket: "boost", expiresAt: inDays(9) });
    await reserve(u, "r", 7);
    expect(await release(u, "r")).toMatchObject({ applied: true, held: 7, returned: 7, charged: 0 });
    expect(await release(u, "r")).toMatchObject({ applied: false, reason: "already_applied", returned: 7 });
    expect(await release(u, "never")).toMatchObject({ applied: false, reason: "not_reserved" });
    let s = await expectConsistent(u);
    expect([s.account.quota_remaining, s.boosts[0]!.remaining, s.account.reserved]).toEqual([5, 4, 0]);
    expect(await settle(u, "r", 6)).toMatchObject({ applied: true, held: 0, charged: 6, shortfall: 0 });
    s = await expectConsistent(u);
    expect([s.account.quota_remaining, s.boosts[0]!.remaining]).toEqual([0, 3]);
  });

  it("held credits whose bucket closed meanwhile are forfeited, not returned", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date("2026-11-24T10:00:00.000Z"));
    const u = user();
    await accountOf(u); // quota 5
    await grant(u, { source: "short", credits: 4, bucket: "boost", expiresAt: inDays(2) });
    await grant(u, { source: "long", credits: 4, bucket: "boost", expiresAt: inDays(20) });
    await reserve(u, "r", 12); // quota 5, short 4, long 3
    vi.setSystemTime(new Date("2026-11-27T10:00:00.000Z")); // "short" has expired
    // 6 charged: quota 5 and 1 of "short"; "short"'s other 3 are forfeited, "long"'s 3 go back.
    expect(await settle(u, "r", 6)).toMatchObject({ applied: true, held: 12, charged: 6, returned: 3, forfeited: 3 });
    const s = await expectConsistent(u);
    expect(s.boosts.map((b) => [b.boost_id, b.remaining])).toEqual([["short", 0], ["long", 4]]);
    expect(s.account.forfeited).toBe(3);
    expect(await expireBoosts(u)).toBe(0);
  });

  it("settle with the process's own reservation skips its reads and ends exactly as the read path does", async () => {
    const [fast, slow] = [user(), user()];
    for (const u of [fast, slow]) {
      await accountOf(u);
      await grant(u, { source: "b1", credits: 10, bucket: "boost", expiresAt: inDays(20) });
    }
    const held = await reserve(fast, "run", 8);
    await reserve(slow, "run", 8);
    const a = await settle(fast, "run", 4.5, { tokens: 12_000, costUsd: 0.35 }, held);
    const b = await settle(slow, "run", 4.5, { tokens: 12_000, costUsd: 0.35 });
    expect(a).toEqual(b);
    const [sa, sb] = [await expectConsistent(fast), await expectConsistent(slow)];
    const pick = ({ account: c, boosts, holds }: typeof sa) => ({
      account: [c.quota_granted, c.quota_remaining, c.reserved, c.charged, c.shortfall, c.forfeited, c.tokens_used, c.cost_usd],
      boosts: boosts.map((bo) => bo.remaining),
      holds: holds.length,
    });
    expect(pick(sa)).toEqual(pick(sb));
    expect(await settle(fast, "run", 4.5, {}, held)).toMatchObject({ applied: false, reason: "already_applied", charged: 4.5 });
  });

  it("the fast settle falls back to reading when its reservation went stale (released by the sweeper, or the period turned)", async () => {
    const u = user();
    await accountOf(u); // quota 5
    const held = await reserve(u, "r", 2);
    await release(u, "r");
    // The hold is gone: the fast attempt is refused by its condition, the read path charges the balance once.
    expect(await settle(u, "r", 2, {}, held)).toMatchObject({ applied: true, held: 0, charged: 2 });
    expect((await expectConsistent(u)).account.quota_remaining).toBe(3);

    const v = user();
    await accountOf(v);
    const h = await reserve(v, "r", 4);
    const next = { start: inDays(1), end: inDays(31) };
    await grant(v, { source: "in_next", credits: 100, bucket: "monthly", period: next, plan: "pro" });
    // The quota the run held from has closed: the fast attempt's period condition fails; nothing goes back to the new quota.
    expect(await settle(v, "r", 1, {}, h)).toMatchObject({ applied: true, held: 4, charged: 1, returned: 0, forfeited: 3 });
    expect((await expectConsistent(v)).account.quota_remaining).toBe(100);
  });

  it("settle and release racing on one reservation close it once", async () => {
    const u = user();
    await accountOf(u);
    for (let i = 0; i < 5; i++) {
      await reserve(u, `race-${i}`, 1);
      const [a, b] = await Promise.all([settle(u, `race-${i}`, 0.5), release(u, `race-${i}`)]);
      // Either the settle closed the hold (and the release found nothing), or the release did and the settle then
      // charged the balance: in both cases 0.5 is charged exactly once.
      expect(a.applied).toBe(true);
      expect(a.charged).toBe(0.5);
      if (b.applied) expect(a.held).toBe(0);
      else expect(b.reason).toBe("not_reserved");
    }
    const s = await expectConsistent(u);
    expect(s.account.charged).toBe(2.5);
    expect(s.account.reserved).toBe(0);
  });
});

type Op =
  | { t: "boost"; credits: number; days: number }
  | { t: "trial"; credits: number }
  | { t: "period"; credits: number }
  | { t: "reserve"; credits: number }
  | { t: "settle"; pick: number; actual: number }
  | { t: "release"; pick: number }
  | { t: "advance"; days: number }
  | { t: "expire" }
  | { t: "cancel" };

const quarters = (max: number) => fc.integer({ min: 1, max: max * 4 }).map((q) => q / 4);
// Weighted so that runs often reserve past the quota into boosts, then cross a boost's expiry or a period start
// before the run is closed (the cases where held credits must be forfeited instead of returned).
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ t: fc.constant("boost" as const), credits: fc.integer({ min: 1, max: 12 }), days: fc.integer({ min: 1, max: 15 }) }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant("trial" as const), credits: fc.integer({ min: 1, max: 3 }) }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant("period" as const), credits: fc.integer({ min: 1, max: 4 }) }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant("reserve" as const), credits: quarters(6) }), weight: 5 },
  { arbitrary: fc.record({ t: fc.constant("settle" as const), pick: fc.nat(), actual: fc.integer({ min: 0, max: 32 }).map((q) => q / 4) }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant("release" as const), pick: fc.nat() }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant("advance" as const), days: fc.integer({ min: 1, max: 12 }) }), weight: 2 },
  { arbitrary: fc.constant({ t: "expire" as const }), weight: 2 },
  { arbitrary: fc.constant({ t: "cancel" as const }), weight: 1 },
);

/**
 * What closing a run should give back and forfeit, from its hold before: the actual cost is charged from the held
 * credits in the deduction order (quota, then boosts by expiry); the rest goes back, except to a quota of a past
 * period or an expired boost, where it is forfeited.
 */
async function expectedClosing(userId: string, runId: string, actual: number) {
  const s = await state(userId);
  const hold = s.holds.find((h) => h.run_id === runId)!;
  const now = new Date().toISOString();
  let charge = Math.min(actual, hold.credits);
  const quotaLeft = hold.quota - Math.min(charge, hold.quota);
  charge -= hold.quota - quotaLeft;
  let returned = 0;
  let forfeited = 0;
  if (hold.quota_period === s.account.period_start && !entitlementOf(s.account).lapsed) returned += quotaLeft;
  else forfeited += quotaLeft;
  for (const p of [...hold.boosts].sort((a, b) => a.expires_at.localeCompare(b.expires_at))) {
    const left = p.credits - Math.min(charge, p.credits);
    charge -= p.credits - left;
    if (p.expires_at > now) returned += left;
    else forfeited += left;
  }
  return { held: hold.credits, returned, forfeited };
}

/** Cases the property runs (its two fixed examples among them; fast-check counts them in numRuns): reported for issue #19. */
const PROPERTY_RUNS = 40;

/**
 * The ledger's sum rule as a user sees it: once the sweeper has closed the lapsed packs, the ledger's deltas sum to
 * the balance's spendable credits (`total_remaining`), not merely to the stored buckets.
 */
async function expectSumRule(userId: string) {
  const s = await expectConsistent(userId);
  const now = new Date().toISOString();
  expect(s.boosts.filter((b) => b.expires_at <= now && !b.expired_at).map((b) => b.boost_id), "packs past expiry left open").toEqual([]);
  expect(total(s.ledger.map((l) => l.delta))).toBe((await balanceOf(userId)).total_remaining);
  return s;
}

describe("property: random grants, reserves, settles, releases, expiries and cancellations over time", () => {
  it("conserve credits, never go negative, take the quota first, then boosts by earliest expiry; the sum rule holds after expiry", async () => {
    let cases = 0;
    vi.useFakeTimers({ toFake: ["Date"] });
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 8, maxLength: 24 }), async (ops) => {
        vi.setSystemTime(new Date("2026-11-24T10:00:00.000Z"));
        const u = user();
        await accountOf(u);
        const open: string[] = [];
        let n = 0;
        for (const op of ops) {
          n++;
          switch (op.t) {
            case "boost":
              await grant(u, { source: `b${n}`, credits: op.credits, bucket: "boost", expiresAt: inDays(op.days) });
              break;
            case "trial":
              // As charging grants them: with a cap, so an account on a paid plan (after "cancel") gets none.
              await grant(u, { source: `milestone#m${n}`, credits: op.credits, bucket: "trial", cap: 10_000 });
              break;
            case "period":
              vi.setSystemTime(Date.now() + 1000);
              await grant(u, { source: `in_${n}`, credits: op.credits, bucket: "monthly", period: { start: inDays(0), end: inDays(30) } });
              break;
            case "advance":
              vi.setSystemTime(Date.now() + op.days * DAY);
              break;
            case "expire": {
              // The scheduled sweeper (not the ledger call): it must find this account's lapsed packs by itself.
              const report = await sweepExpiredBoosts({ now: new Date(), userId: u });
              expect(report.errors).toEqual([]);
              await expectSumRule(u);
              break;
            }
            case "cancel":
              // A paid plan cancelled at a period end that has passed: the sweeper expires its quota (once).
              await db().entities.billingAccount.patch({ user_id: u }).set({ plan: "pro", status: "cancelled", period_end: new Date(Date.now() - 1000).toISOString() }).go();
              await lapseQuota(u);
              expect((await state(u)).account.quota_remaining).toBe(0);
              expect(await lapseQuota(u)).toBe(0);
              break;
            case "release":
            case "settle":
              if (open.length > 0) {
                const run = open.splice(op.pick % open.length, 1)[0]!;
                const actual = op.t === "settle" ? op.actual : 0;
                const expected = await expectedClosing(u, run, actual);
                const r = op.t === "settle" ? await settle(u, run, actual) : await release(u, run);
                expect(r.applied).toBe(true);
                expect(r.held).toBe(expected.held);
                expect([r.returned, r.forfeited]).toEqual([expected.returned, expected.forfeited]);
                if (op.t === "settle") expect(r.charged + r.shortfall).toBe(actual);
                if (actual <= r.held) expect(r.shortfall).toBe(0);
              }
              break;
            case "reserve": {
              // The expected split, from the state before: quota first, then unexpired boosts by expiry.
              const before = await state(u);
              const now = new Date().toISOString();
              const usable = before.boosts
                .filter((b) => b.expires_at > now && !b.expired_at && b.remaining > 0)
                .sort((a, b) => a.expires_at.localeCompare(b.expires_at));
              const quotaUsable = entitlementOf(before.account).lapsed ? 0 : before.account.quota_remaining;
              const spendable = quotaUsable + total(usable.map((b) => b.remaining));
              const run = `r${n}`;
              if (spendable < op.credits) {
                await expect402(reserve(u, run, op.credits));
                const after = await state(u);
                expect(after.account.quota_remaining).toBe(quotaUsable);
                expect(after.boosts.map((b) => b.remaining)).toEqual(before.boosts.map((b) => b.remaining));
                break;
              }
              const r = await reserve(u, run, op.credits);
              open.push(run);
              const quota = Math.min(op.credits, quotaUsable);
              let left = op.credits - quota;
              const expected: [string, number][] = [];
              for (const b of usable) {
                if (left <= 0) break;
                const c = Math.min(left, b.remaining);
                expected.push([b.boost_id, c]);
                left -= c;
              }
              expect(r.quota).toBe(quota);
              expect(r.boosts.map((p) => [p.boost_id, p.credits])).toEqual(expected);
              break;
            }
          }
          await expectConsistent(u);
        }
        // Over time: a month later every pack has lapsed; after the scheduled sweep the ledger's deltas sum to the
        // balance a user sees (`GET /credits` total_remaining): nothing expired is still counted anywhere.
        vi.setSystemTime(Date.now() + 40 * DAY);
        expect((await sweepExpiredBoosts({ now: new Date(), userId: u })).errors).toEqual([]);
        const end = await expectSumRule(u);
        expect(end.boosts.filter((b) => b.remaining > 0 && !b.expired_at)).toEqual([]);
        cases += 1;
      }),
      {
        numRuns: PROPERTY_RUNS,
        endOnFailure: true,
        // Always run too: a boost held across its expiry, and a quota held across a period start (rare at random).
        examples: [
          [[
            { t: "boost", credits: 6, days: 3 }, { t: "reserve", credits: 8 }, { t: "advance", days: 4 },
            { t: "settle", pick: 0, actual: 5.5 }, { t: "reserve", credits: 1 }, { t: "expire" },
          ]],
          [[
            { t: "boost", credits: 6, days: 3 }, { t: "reserve", credits: 3 }, { t: "reserve", credits: 6 }, { t: "advance", days: 1 },
            { t: "period", credits: 4 }, { t: "release", pick: 0 }, { t: "advance", days: 3 }, { t: "release", pick: 0 },
          ]],
        ],
      },
    );
    expect(cases).toBe(PROPERTY_RUNS);
  }, 180_000);
});

describe("trial milestones of concurrent runs (core/billing/charge.ts grantMilestones)", () => {
  it("two runs settling at once: the milestone is granted once and returned to one of them only (it announces it)", async () => {
    const u = `user-${randomUUID()}`;
    const ws = randomUUID();
    await accountOf(u);
    const settled = await Promise.all([1, 2].map(() => grantMilestones(u, ws, true, async () => 1)));
    expect(settled.flat()).toEqual(["first_run"]);
    expect((await accountOf(u)).quota_granted).toBe(TRIAL_MILESTONE_CREDITS * 2); // signup + first_run
    // A later run of the same workspace is told nothing; a third run unlocks engagement for that run alone.
    expect(await grantMilestones(u, ws, true, async () => 2)).toEqual([]);
    expect(await grantMilestones(u, ws, true, async () => 3)).toEqual(["engagement"]);
    expect(await grantMilestones(u, ws, true, async () => 4)).toEqual([]);
  });

  it("reads no grant this container has seen granted: both granted, a run reads nothing; first_run alone, only the run count", async () => {
    const u = `user-${randomUUID()}`;
    const ws = randomUUID();
    await accountOf(u);
    expect(await grantMilestones(u, ws, true, async () => 1)).toEqual(["first_run"]);
    // Only this test's payer's reads count: files running at the same time share the client.
    const send = vi.spyOn(dynamoClient(), "send");
    const reads = { get mock() { return { calls: send.mock.calls.filter(([c]) => c.constructor.name === "BatchGetCommand" && JSON.stringify(c.input).includes(`bill#${u}`)) }; } };
    const count = vi.fn(async () => 2);
    try {
      expect(await grantMilestones(u, ws, true, count)).toEqual([]);
      expect([reads.mock.calls.length, count.mock.calls.length]).toEqual([0, 1]);
      count.mockResolvedValue(3);
      expect(await grantMilestones(u, ws, true, count)).toEqual(["engagement"]);
      expect([reads.mock.calls.length, count.mock.calls.length]).toEqual([1, 2]);
      expect(await grantMilestones(u, ws, true, count)).toEqual([]);
      expect([reads.mock.calls.length, count.mock.calls.length]).toEqual([1, 2]);
      // Another workspace of the same payer is read as before.
      expect(await grantMilestones(u, randomUUID(), true, count)).toEqual(["first_run", "engagement"]);
      expect(reads.mock.calls.length).toBe(2);
    } finally {
      send.mockRestore();
    }
    expect((await accountOf(u)).quota_granted).toBe(TRIAL_MILESTONE_CREDITS * 5);
  });
});
