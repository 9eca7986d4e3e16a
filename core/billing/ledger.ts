/**
 * Credits: the per-user billing account, its buckets and the immutable credit ledger (DESIGN.md section 6.3; spec 02
 * "Subscription and credits", "Credits", "Trial milestones", "Boost pack").
 *
 * Units: every amount is in credits (1 credit = 0.08 USD of model cost, spec 02 Credits), in quarter credits: the
 * spec's smallest charge is 0.25 and `creditsFor` returns multiples of 0.25. Amounts to reserve or settle are rounded
 * up to the next 0.25; grants must already be multiples of 0.25. Multiples of 0.25 are exact in binary floating point,
 * so the sums below never drift, and DynamoDB adds numbers in exact decimal.
 *
 * Every balance change is one DynamoDB transaction: the ledger item of the event, created only if absent, plus the
 * conditional updates of the buckets it touches (`remaining >= :x` on every decrement), so an event applies once and
 * no bucket ever goes negative, whatever runs concurrently. A transaction cancelled on a balance condition or a
 * conflict is re-planned from a fresh read after a jittered backoff (p-retry); a plan the fresh balance cannot cover
 * fails with 402.
 */
import { createWriteTransaction, type Entity, type EntityItem, type TransactWriteEntity } from "electrodb";
import pRetry from "p-retry";
import { Config } from "../config";
import { db } from "../db/service";
import { queryAll } from "../db/partition";
import { cancelCodes, cancelledOnlyBy } from "../db/errors";
import { AppError } from "../error";
import { BOOST_EXPIRY_DUE, type BillingAccountEntity, type CreditBoostEntity, type CreditHoldEntity } from "./account.entity";
import { entitlementOf, type Entitlement, type EntitlementInput } from "./entitlement";
import type { CreditLedgerEntity } from "./ledger.entity";
import { PLANS, planRank, type Plan } from "./plans";
import { requireComputeBudget } from "./compute";

export type BillingAccount = EntityItem<BillingAccountEntity>;
export type CreditBoost = EntityItem<CreditBoostEntity>;
export type CreditHold = EntityItem<CreditHoldEntity>;
export type LedgerItem = EntityItem<CreditLedgerEntity>;

/** Credits of each trial milestone (spec 02 "Trial milestones": signup, first_run, engagement; 5.0 each). */
export const TRIAL_MILESTONE_CREDITS = 5;
export const TRIAL_MILESTONES = ["signup", "first_run", "engagement"] as const;
export type TrialMilestone = (typeof TRIAL_MILESTONES)[number];

/**
 * The grant source of a trial milestone: signup is the account's (`milestone#signup`), first_run and engagement the
 * workspace's (`milestone#<name>#<workspace id>`: spec 02 grants each once per workspace). Its ledger key is
 * `grant#<source>`.
 */
export const milestoneSource = (name: TrialMilestone, workspaceId: string): string =>
  name === "signup" ? "milestone#signup" : `milestone#${name}#${workspaceId}`;

/** Validity of a boost pack, in days (spec 02 "Boost pack": 30 days after purchase). */
export const BOOST_VALIDITY_DAYS = 30;

/**
 * At most this many boosts in one reservation or settlement: a transaction holds at most 100 items, and the
 * ledger item, the hold and the account take three.
 */
const MAX_BOOSTS_PER_CHANGE = 90;

/** One boost's share of a reservation or of a ledger item (credits; signed in ledger items). */
export interface BoostPortion {
  boost_id: string;
  /** ISO 8601 expiry of the boost (part of its key). */
  expires_at: string;
  credits: number;
}

/** The approved pending action a run executes (`reserve`'s `opts.action`): its workspace and id. */
export interface HoldAction {
  workspaceId: string;
  actionId: string;
}

/** What `reserve` holds for a run. */
export interface Reservation {
  run_id: string;
  /** Credits held in all. */
  credits: number;
  /** Credits held from the monthly quota. */
  quota: number;
  /** Credits held from each boost, earliest expiry first. */
  boosts: BoostPortion[];
  /** False when the run had already reserved: nothing changed, and the figures are the first reservation's. */
  applied: boolean;
  /** The billing period the quota part came from (set when `applied`): lets `settle` skip its reads. */
  period_start?: string;
}

/** What `settle` or `release` did with a run's reservation. */
export interface Closing {
  run_id: string;
  kind: "settle" | "release";
  /** Credits the reservation held (0 when there was no open reservation). */
  held: number;
  /** Credits charged (settle: the actual cost less the shortfall; release: 0). */
  charged: number;
  /** Credits of the actual cost the balance could not cover (recorded on the ledger item and the account, not owed). */
  shortfall: number;
  /** Held credits given back to the buckets they came from. */
  returned: number;
  /** Held credits not given back because their bucket had closed (quota of a past period, expired boost). */
  forfeited: number;
  /** False when nothing changed; see `reason`. */
  applied: boolean;
  /**
   * Why nothing changed: `already_applied` (this settle or release ran before; the figures are its own),
   * `not_reserved` (release of a run with no open reservation: never reserved, or settled already).
   */
  reason?: "already_applied" | "not_reserved";
}

/** A grant (`grant`). */
export interface GrantInput {
  /**
   * The event that grants: invoice id, checkout session id, `milestone#<name>`, referral id. It keys the ledger item
   * of boost and trial grants (`grant#<source>`); a monthly grant is keyed by its period (`grant#period#<start>`), so
   * the paid invoice and the first-use grant of one period are the same grant.
   */
  source: string;
  /** Credits to grant: positive, a multiple of 0.25. */
  credits: number;
  /**
   * `monthly`: the plan's quota of a billing period (a later period replaces the quota; what was left of the old one
   * is expired). `trial`: a trial milestone, added to the current quota. `boost`: a boost pack, its own bucket.
   */
  bucket: "monthly" | "boost" | "trial";
  /** Boost only (required): when the pack expires (spec 02: 30 days after purchase). */
  expiresAt?: string | Date;
  /** Monthly only: the billing period granted for (default: the account's current period). */
  period?: { start: string | Date; end: string | Date };
  /** Monthly only: the plan paid for; recorded on the account with status `active`. */
  plan?: Plan;
  /** Monthly only: the plan the period is paid at, recorded as `period_plan` (a later upgrade raises it). */
  periodPlan?: Plan;
  /**
   * Trial only: the most trial credits the account may hold (spec 02: "up to 25"). The account's `quota_granted`
   * is conditioned on staying within it in the grant's own transaction, so concurrent milestones cannot pass it.
   */
  cap?: number;
}

/** What `grant` did. */
export interface GrantResult {
  /** False when nothing changed; see `reason`. */
  applied: boolean;
  /**
   * `already_applied`: a grant with this key exists. `stale_period`: a monthly grant for a period before the current.
   * `cap_reached`: a trial grant that would pass its `cap`. `not_trial`: a trial grant to an account on a paid plan.
   */
  reason?: "already_applied" | "stale_period" | "cap_reached" | "not_trial";
  /** The ledger item's key. */
  key: string;
  credits: number;
  /** Quota credits of the previous period expired by this (monthly) grant. */
  forfeited: number;
}

/**
 * The spec's Credit balance (spec 02 "Subscription and credits") without `workspace_id` and `plan`, which the route
 * adds, plus `reserved`. All in credits:
 * - `monthly_quota`: granted to the current period's quota (trial: the milestone grants so far).
 * - `monthly_used`: quota charged or held by open reservations; `monthly_remaining` = quota - used.
 * - `bonus_credits`: remaining credits of the boosts that have not expired.
 * - `total_available`: monthly_quota plus the credits granted by boosts that have not expired (the spec's "all boosts
 *   ever granted" read as "still valid": an expired pack's credits cannot be spent, and counting them would break
 *   total_remaining = total_available - total_used).
 * - `total_used`: monthly_used plus the boosts' credits charged or held; `total_remaining` = what a run can reserve.
 * - `percentage`: total_used / total_available in percent, one decimal (0 when nothing is available).
 * - `is_blocked`: total_remaining <= 0.
 * - `reserved`: credits held by runs in progress (part of the used figures).
 */
export interface CreditBalance {
  monthly_quota: number;
  monthly_used: number;
  monthly_remaining: number;
  bonus_credits: number;
  total_available: number;
  total_used: number;
  total_remaining: number;
  percentage: number;
  is_blocked: boolean;
  reserved: number;
}

/** Model use of a run, recorded on the account for the compute budget (spec 02 "Compute budget"). */
export interface RunUsage {
  tokens?: number;
  costUsd?: number;
}

// ---------------------------------------------------------------------------------------------------------------
// Amounts, reads, transactions

const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

/** `-x` without a negative zero (which DynamoDB and `toEqual` tell apart from 0). */
const neg = (x: number): number => (x === 0 ? 0 : -x);

/** Round up to the next quarter credit; the epsilon keeps exact quarters (and float noise below them) where they are. */
const quarterUp = (x: number): number => Math.max(0, Math.ceil(x * 4 - 1e-9) / 4);

/** A caller's amount: finite and not negative (or positive), rounded up to the next 0.25. @throws RangeError */
function amount(x: number, what: string, positive: boolean): number {
  if (!Number.isFinite(x) || x < 0 || (positive && x <= 0)) throw new RangeError(`${what} must be a ${positive ? "positive" : "non-negative"} number of credits, got ${x}`);
  return quarterUp(x);
}

/** ISO 8601 in `toISOString()` form, so sort keys and string comparisons order by time. @throws RangeError */
function iso(value: string | Date, what: string): string {
  const d = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(d.getTime())) throw new RangeError(`${what} is not a date: ${String(value)}`);
  return d.toISOString();
}

/** A transaction lost to a concurrent change of the same items: re-read, re-plan and try again after a backoff. */
class Contended extends Error {
  override name = "Contended";
}

/**
 * Run `attempt` until it neither conflicts nor finds its plan stale: up to 12 tries, 5 ms to 250 ms apart with
 * jitter (p-retry's randomize doubles the wait at most). Everything else (AppError 402, defects) ends at once.
 * @throws AppError SERVICE_UNAVAILABLE (503) when the account stays contended.
 */
async function retrying<T>(what: string, attempt: () => Promise<T>): Promise<T> {
  try {
    return await pRetry(attempt, {
      retries: 11,
      factor: 2,
      minTimeout: 5,
      maxTimeout: 250,
      randomize: true,
      shouldRetry: ({ error }) => error instanceof Contended,
    });
  } catch (err) {
    if (err instanceof Contended) {
      throw new AppError("SERVICE_UNAVAILABLE", `The billing account is busy (${what}); try again`, { retryable: true });
    }
    throw err;
  }
}

type TxResult = { canceled: boolean; data: unknown };

/**
 * How a credit transaction ended. Its first item is always the ledger item, whose only condition is that it does
 * not exist: a cancellation on it is a duplicate event. A cancellation on a balance, hold or account condition, or a
 * conflict with another transaction, means the read the plan was made from is stale.
 * @throws Error on any other cancellation (validation, throttling after the SDK's retries): a defect, not a race.
 */
function outcome(result: TxResult): "committed" | "duplicate" | "contended" {
  if (!result.canceled) return "committed";
  const codes = cancelCodes(result);
  if (codes[0] === "ConditionalCheckFailed") return "duplicate";
  if (cancelledOnlyBy(codes, ["ConditionalCheckFailed", "TransactionConflict"])) return "contended";
  throw new Error(`Credit transaction cancelled: ${codes.join(", ")}`);
}

const CONSISTENT = { consistent: true } as const;
const bill = () => db().entities;

async function readAccount(userId: string): Promise<BillingAccount | null> {
  return (await bill().billingAccount.get({ user_id: userId }).go(CONSISTENT)).data;
}

async function readLedger(userId: string, key: string): Promise<LedgerItem | null> {
  return (await bill().creditLedger.get({ user_id: userId, key }).go(CONSISTENT)).data;
}

async function readHold(userId: string, runId: string): Promise<CreditHold | null> {
  return (await bill().creditHold.get({ user_id: userId, run_id: runId }).go(CONSISTENT)).data;
}

/** Boosts that have not expired at `nowIso`, earliest expiry first (the sort key order). */
async function activeBoosts(userId: string, nowIso: string): Promise<CreditBoost[]> {
  const { data } = await bill().creditBoost.query.byUser({ user_id: userId })
    // A range within `boost#`: `gt` alone would also read every hold and ledger item sorted after the boosts.
    .between({ expires_at: nowIso }, { expires_at: "9999" })
    .go({ ...CONSISTENT, pages: "all" });
  return data.filter((b) => b.expires_at > nowIso && !b.expired_at);
}

/**
 * The account and its boosts that have not expired at `nowIso` (what `readAccount` and `activeBoosts` give), in ONE
 * strongly consistent Query of the account's partition: the account's sort key `account` sorts just before the
 * boosts' `boost#<expires_at>#<id>`, and nothing else of the partition (`hold#`, `ledger#`) sorts between them, so
 * the range from `account` to `boost#9999` holds exactly the two. Closed packs (`expired_at`) are left out by DynamoDB.
 */
async function accountAndBoosts(userId: string, nowIso: string): Promise<[BillingAccount | null, CreditBoost[]]> {
  const e = bill();
  const { TableName, Key } = e.billingAccount.get({ user_id: userId }).params() as { TableName: string; Key: { pk: string; sk: string } };
  const Items = await queryAll({
    TableName,
    KeyConditionExpression: "pk = :pk AND sk BETWEEN :account AND :boosts",
    FilterExpression: "attribute_not_exists(expired_at)",
    // `boost#9999`: past every boost's `boost#<ISO 8601 expiry>` sort key (core/billing/account.entity.ts).
    ExpressionAttributeValues: { ":pk": Key.pk, ":account": Key.sk, ":boosts": "boost#9999" },
    ConsistentRead: true,
  });
  const account = (e.billingAccount.parse({ Items }, { ignoreOwnership: false }).data as BillingAccount[])[0] ?? null;
  const boosts = (e.creditBoost.parse({ Items }, { ignoreOwnership: false }).data as CreditBoost[]).filter((b) => b.expires_at > nowIso && !b.expired_at);
  return [account, boosts];
}

/** Boosts whose expiry is at or before `nowIso` and that `expireBoosts` has not closed yet. */
async function lapsedBoosts(userId: string, nowIso: string): Promise<CreditBoost[]> {
  const { data } = await bill().creditBoost.query.byUser({ user_id: userId })
    // `~` sorts after `#`: the range ends after every boost expiring at `nowIso` exactly.
    .between({ expires_at: "" }, { expires_at: `${nowIso}~` })
    .go({ ...CONSISTENT, pages: "all" });
  return data.filter((b) => b.expires_at <= nowIso && !b.expired_at);
}

/**
 * Take `need` credits in the deduction order (spec 02 Credits: boosts after the monthly quota is exhausted; DESIGN.md
 * 6.3: boosts by earliest expiry): the quota first, then each boost in the order given (earliest expiry first).
 * @returns the portions and how much of `need` they cover (less than `need` when the buckets run out).
 */
function take(need: number, quotaRemaining: number, boosts: readonly CreditBoost[]): { quota: number; boosts: BoostPortion[]; taken: number } {
  const quota = Math.min(need, Math.max(0, quotaRemaining));
  let left = need - quota;
  const portions: BoostPortion[] = [];
  for (const b of boosts) {
    if (left <= 0 || portions.length >= MAX_BOOSTS_PER_CHANGE) break;
    if (b.remaining <= 0) continue;
    const credits = Math.min(left, b.remaining);
    portions.push({ boost_id: b.boost_id, expires_at: b.expires_at, credits });
    left -= credits;
  }
  return { quota, boosts: portions, taken: need - left };
}

type NumericField = "workspaces_owned" | "quota_granted" | "quota_remaining" | "reserved" | "charged" | "shortfall" | "forfeited" | "tokens_used" | "cost_usd";

type InTransaction<E> = E extends Entity<infer A, infer F, infer C, infer S> ? TransactWriteEntity<A, F, C, S> : never;
type AccountInTransaction = InTransaction<BillingAccountEntity>;
type BoostInTransaction = InTransaction<CreditBoostEntity>;
type AccountCondition = Parameters<ReturnType<ReturnType<AccountInTransaction["patch"]>["set"]>["where"]>[0];

/**
 * The account's update in a transaction: signed deltas become ElectroDB `add` (positive) and `subtract` (negative);
 * `patch` adds the condition that the account exists.
 */
function patchAccount(
  e: AccountInTransaction,
  userId: string,
  deltas: Partial<Record<NumericField, number>>,
  where: AccountCondition = () => "",
  set: Partial<Pick<BillingAccount, "plan" | "period_plan" | "status" | "period_start" | "period_end" | "quota_granted" | "quota_remaining" | "tokens_used" | "cost_usd" | "quota_lapsed_period">> = {},
  remove: "quota_lapsed_period"[] = [],
) {
  const add: Partial<Record<NumericField, number>> = {};
  const subtract: Partial<Record<NumericField, number>> = {};
  for (const [field, v] of Object.entries(deltas) as [NumericField, number][]) {
    if (v > 0) add[field] = v;
    else if (v < 0) subtract[field] = -v;
  }
  const patch = e.patch({ user_id: userId }).set(set).add(add).subtract(subtract);
  return (remove.length ? patch.remove(remove) : patch).where(where).commit();
}

/**
 * A boost's debit in a transaction: `remaining` goes down by the portion's credits, conditioned on the boost still
 * holding them and not having expired, so no pack is ever overdrawn or spent after its expiry.
 */
function debitBoost(e: BoostInTransaction, userId: string, p: BoostPortion) {
  return e
    .patch({ user_id: userId, expires_at: p.expires_at, boost_id: p.boost_id })
    .subtract({ remaining: p.credits })
    .where((a, op) => `${op.gte(a.remaining, p.credits)} AND ${op.notExists(a.expired_at)}`)
    .commit();
}

/** 402 for a reservation the balance cannot cover (spec 01/02 errors: a failed usage gate is USAGE_LIMIT_EXCEEDED). */
function exhausted(required: number, available: number): AppError {
  return new AppError(
    "USAGE_LIMIT_EXCEEDED",
    `Not enough credits: this run needs up to ${required} and ${available} are available; buy a boost pack or upgrade the plan`,
    { usage_type: "agent_run", reason: "credits_exhausted", required, available },
  );
}

// ---------------------------------------------------------------------------------------------------------------
// The account

/**
 * The user's billing account (DESIGN.md 6.3), created on first use in one transaction with its first grant: on the
 * `trial` plan, `trialing`, from now for `TRIAL_DAYS`, granted the `signup` milestone, 5 credits (ledger key
 * `grant#milestone#signup`; spec 02 "Trial milestones": signup on account creation, then first_run and engagement
 * through `grant`, 15 in all = PLANS.trial.monthly_credits). A paid plan comes later from Stripe (core/billing/sync.ts).
 * Concurrent first uses create it once (the loser reads the winner's).
 * @param userId the user's id (the account's partition `bill#<user id>`)
 * @throws AppError CONFLICT (409) if the account can neither be created nor read (its first grant exists without it).
 */
export async function accountOf(userId: string): Promise<BillingAccount> {
  const existing = await readAccount(userId);
  if (existing) return existing;
  const now = new Date();
  const period_start = now.toISOString();
  const period_end = new Date(now.getTime() + Config.trialDays() * 86_400_000).toISOString();
  const credits = TRIAL_MILESTONE_CREDITS;
  const source = "milestone#signup";
  const result = await createWriteTransaction(db().pick("creditLedger", "billingAccount"), ({ creditLedger, billingAccount }) => [
    creditLedger
      .create({ user_id: userId, key: `grant#${source}`, kind: "grant", source, bucket: "trial", credits, delta: credits, quota: credits, period_start })
      .commit(),
    billingAccount
      .create({
        user_id: userId,
        plan: "trial",
        status: "trialing",
        period_start,
        period_end,
        quota_granted: credits,
        quota_remaining: credits,
      })
      .commit(),
  ]).go();
  const account = await readAccount(userId);
  if (account) return account;
  throw new AppError("CONFLICT", "The billing account could not be created; try again", { canceled: result.canceled });
}

// ---------------------------------------------------------------------------------------------------------------
// Grants

/**
 * Grant credits once per source (DESIGN.md 6.3; spec 02 "Subscription and credits", "Trial milestones", "Boost
 * pack"). The ledger item (`grant#<source>`, or `grant#period#<start>` for monthly) is created only if absent in the
 * transaction that changes the bucket, so a retried or duplicated grant changes nothing and reports
 * `already_applied`.
 * - `boost`: a new boost bucket (`boost_id` = source) of `credits`, usable until `expiresAt`.
 * - `trial`: `credits` added to the current quota (source `milestone#<name>`).
 * - `monthly`: for the current period, `credits` added to its quota; for a later period, the period starts: the
 *   quota becomes `credits`, what was left of the old one is expired (ledger `expire#period#<old start>`), and the
 *   compute counters reset (spec 02 "Compute budget"); for an earlier period, nothing (`stale_period`; Stripe does
 *   not order deliveries). Reservations still open on the old quota forfeit what they would have returned.
 * Creates the account first if needed (`accountOf`).
 * @param userId the account's user
 * @throws RangeError when credits are not a positive multiple of 0.25, a boost has no `expiresAt`, or a date is invalid.
 * @throws AppError SERVICE_UNAVAILABLE (503) when the account stays contended.
 */
export async function grant(userId: string, input: GrantInput): Promise<GrantResult> {
  const credits = input.credits;
  if (!Number.isFinite(credits) || credits <= 0 || quarterUp(credits) !== credits) {
    throw new RangeError(`Granted credits must be a positive multiple of 0.25, got ${credits}`);
  }
  if (!input.source) throw new RangeError("A grant needs a source");
  if (input.bucket === "boost") return grantBoost(userId, input.source, credits, input.expiresAt);
  if (input.bucket === "trial") return grantTrial(userId, input.source, credits, input.cap);
  return grantMonthly(userId, input, credits);
}

async function grantBoost(userId: string, source: string, credits: number, expiresAt: GrantInput["expiresAt"]): Promise<GrantResult> {
  if (expiresAt === undefined) throw new RangeError("A boost grant needs expiresAt");
  const expires_at = iso(expiresAt, "expiresAt");
  const account = await accountOf(userId);
  const key = `grant#${source}`;
  const result = await createWriteTransaction(db().pick("creditLedger", "creditBoost"), ({ creditLedger, creditBoost }) => [
    creditLedger
      .create({
        user_id: userId, key, kind: "grant", source, bucket: "boost", credits, delta: credits,
        boosts: [{ boost_id: source, expires_at, credits }], period_start: account.period_start,
      })
      .commit(),
    creditBoost.create({ user_id: userId, boost_id: source, expires_at, granted: credits, remaining: credits, expiry: BOOST_EXPIRY_DUE }).commit(),
  ]).go();
  const end = outcome(result);
  if (end === "contended") throw new Error(`Boost ${source} exists without its grant ledger item`);
  return { applied: end === "committed", ...(end === "duplicate" ? { reason: "already_applied" as const } : {}), key, credits, forfeited: 0 };
}

async function grantTrial(userId: string, source: string, credits: number, cap?: number): Promise<GrantResult> {
  const key = `grant#${source}`;
  await accountOf(userId);
  const planned = { key, credits, forfeited: 0 };
  return retrying("grant", async () => {
    const result = await createWriteTransaction(db().pick("creditLedger", "billingAccount"), ({ creditLedger, billingAccount }) => [
      creditLedger.create({ user_id: userId, key, kind: "grant", source, bucket: "trial", credits, delta: credits, quota: credits }).commit(),
      // The cap is a condition of the grant's own transaction: concurrent milestones cannot pass it between a read
      // and a write (the trial's period never turns, so `quota_granted` is every trial grant so far).
      patchAccount(billingAccount, userId, { quota_granted: credits, quota_remaining: credits }, (a, op) =>
        cap === undefined ? "" : `${op.eq(a.plan, "trial")} AND ${op.lte(a.quota_granted, cap - credits)}`,
      ),
    ]).go();
    const end = outcome(result);
    if (end === "duplicate") return { applied: false, reason: "already_applied" as const, ...planned };
    if (end === "contended") {
      if (cap === undefined) throw new Contended();
      // Cancelled on the account: the cap (or a paid plan) refused it, or a concurrent write conflicted; a fresh read tells.
      const account = (await readAccount(userId))!;
      if (account.plan !== "trial") return { applied: false, reason: "not_trial" as const, ...planned };
      if (account.quota_granted + credits > cap) return { applied: false, reason: "cap_reached" as const, ...planned };
      throw new Contended();
    }
    return { applied: true, ...planned };
  });
}

async function grantMonthly(userId: string, input: GrantInput, credits: number): Promise<GrantResult> {
  await accountOf(userId);
  return retrying("grant", async () => {
    const account = (await readAccount(userId))!;
    const start = input.period ? iso(input.period.start, "period.start") : account.period_start;
    const end = input.period ? iso(input.period.end, "period.end") : account.period_end;
    const key = `grant#period#${start}`;
    const source = `period#${start}`;
    const planned = { key, credits, forfeited: 0 };
    if (start < account.period_start) {
      return (await readLedger(userId, key)) ? { applied: false, reason: "already_applied" as const, ...planned } : { applied: false, reason: "stale_period" as const, ...planned };
    }
    const periodPlan = input.periodPlan ?? input.plan;
    const planSet = { ...(input.plan ? { plan: input.plan, status: "active" as const } : {}), ...(periodPlan ? { period_plan: periodPlan } : {}) };
    const ledgerItem = { user_id: userId, key, kind: "grant" as const, source, bucket: "monthly" as const, credits, delta: credits, quota: credits, period_start: start };
    const newPeriod = start > account.period_start;
    const left = newPeriod ? account.quota_remaining : 0;
    const old = account.period_start;
    const result = await createWriteTransaction(db().pick("creditLedger", "billingAccount"), ({ creditLedger, billingAccount }) =>
      !newPeriod
        ? [
            creditLedger.create(ledgerItem).commit(),
            patchAccount(billingAccount, userId, { quota_granted: credits, quota_remaining: credits }, (a, op) => op.eq(a.period_start, start), planSet),
          ]
        : [
            creditLedger.create(ledgerItem).commit(),
            ...(left > 0
              ? [
                  creditLedger
                    .create({ user_id: userId, key: `expire#period#${old}`, kind: "expire", source: `period#${old}`, credits: left, delta: -left, quota: -left, forfeited: left, period_start: old })
                    .commit(),
                ]
              : []),
            patchAccount(
              billingAccount,
              userId,
              { forfeited: left },
              (a, op) => `${op.eq(a.period_start, old)} AND ${op.eq(a.quota_remaining, left)}`,
              { ...planSet, period_start: start, period_end: end, quota_granted: credits, quota_remaining: credits, tokens_used: 0, cost_usd: 0 },
            ),
          ],
    ).go();
    const ended = outcome(result);
    if (ended === "contended") throw new Contended();
    return ended === "duplicate" ? { applied: false, reason: "already_applied" as const, ...planned } : { applied: true, ...planned, forfeited: left };
  });
}

/**
 * An upgrade within a credit period (docs/decisions.md "Plan changes"): the quota of the period rises to the new
 * plan's monthly credits at once, by the difference from the plan the period was paid at (`period_plan`), and
 * `period_plan` becomes the new plan. Once per period and plan: ledger key `grant#upgrade#<period start>#<plan>`, so a
 * replayed event, a second sync or a downgrade and re-upgrade within the period grant nothing more. The account's
 * period and `period_plan` are conditions of the transaction, so a period that turned meanwhile is not topped up; a
 * cancellation is told apart on a fresh read of the account, and one that only met a concurrent write of it (a
 * reserve or settle: TransactionConflict) is retried, as every other credit change is (`retrying`).
 * @param userId the account's user
 * @param input.periodStart the credit period (ISO 8601, the account's `period_start`)
 * @param input.from the plan the period was paid at; input.to the higher plan now paid for
 * @returns the grant (`applied: false` with `already_applied`, or `stale_period` when the account's period or
 *   `period_plan` is no longer the one given)
 * @throws RangeError when `to` is not above `from`.
 * @throws AppError SERVICE_UNAVAILABLE (503) when the account stays contended (the payments consumer retries).
 */
export async function grantUpgrade(userId: string, input: { periodStart: string; from: Plan; to: Plan }): Promise<GrantResult> {
  const credits = PLANS[input.to].monthly_credits - PLANS[input.from].monthly_credits;
  if (planRank(input.to) <= planRank(input.from) || credits <= 0) throw new RangeError(`${input.to} is not an upgrade of ${input.from}`);
  const source = `upgrade#${input.periodStart}#${input.to}`;
  const key = `grant#${source}`;
  const planned = { key, credits, forfeited: 0 };
  return retrying("upgrade", async () => {
    const result = await createWriteTransaction(db().pick("creditLedger", "billingAccount"), ({ creditLedger, billingAccount }) => [
      creditLedger
        .create({ user_id: userId, key, kind: "grant", source, bucket: "monthly", credits, delta: credits, quota: credits, period_start: input.periodStart })
        .commit(),
      patchAccount(
        billingAccount,
        userId,
        { quota_granted: credits, quota_remaining: credits },
        (a, op) => `${op.eq(a.period_start, input.periodStart)} AND (${op.notExists(a.period_plan)} OR ${op.eq(a.period_plan, input.from)})`,
        { period_plan: input.to },
        // The period's quota is paid for again: a lapse of it (`lapseQuota`) no longer closes it, so what holds of it
        // leave unused goes back instead of being forfeited.
        ["quota_lapsed_period"],
      ),
    ]).go();
    const end = outcome(result);
    if (end === "committed") return { applied: true, ...planned };
    if (end === "duplicate") return { applied: false, reason: "already_applied" as const, ...planned };
    // Cancelled on the account: its period or `period_plan` moved on, or a concurrent reserve/settle conflicted with
    // it (TransactionConflict). Only a fresh read tells: a conflict is retried, never taken for a stale period.
    const account = await readAccount(userId);
    if (!account || account.period_start !== input.periodStart || (account.period_plan !== undefined && account.period_plan !== input.from)) {
      return { applied: false, reason: "stale_period" as const, ...planned };
    }
    throw new Contended();
  });
}

/**
 * Expire what is left of the monthly quota of an account whose paid plan has lapsed (core/billing/entitlement.ts:
 * cancelled at the period's end, past_due past its grace), once per period: ledger item `expire#lapse#<period start>`
 * (kind `expire`, the remaining quota forfeited) in the transaction that zeroes `quota_remaining`, conditioned on the
 * period and the figure read. Credits held by open reservations at that moment are forfeited when they settle or are
 * released (`close` gives nothing back to the quota of a lapsed account). Nothing when the plan has not lapsed.
 * @param userId the account's user
 * @param now the clock (default: now)
 * @returns the credits expired (0 when nothing was due or another call did it)
 * @throws AppError SERVICE_UNAVAILABLE (503) when the account stays contended.
 */
export async function lapseQuota(userId: string, now: Date = new Date()): Promise<number> {
  return retrying("lapse", async () => {
    const account = await readAccount(userId);
    if (!account || !entitlementOf(account, now).lapsed || account.quota_remaining <= 0) return 0;
    const left = account.quota_remaining;
    const period = account.period_start;
    const result = await createWriteTransaction(db().pick("creditLedger", "billingAccount"), ({ creditLedger, billingAccount }) => [
      creditLedger
        .create({
          user_id: userId, key: `expire#lapse#${period}`, kind: "expire", source: `lapse#${period}`, credits: left, delta: neg(left), quota: neg(left),
          forfeited: left, period_start: period,
        })
        .commit(),
      // The quota is closed for good: a settlement holding credits from it gives them no more back (`close`).
      patchAccount(billingAccount, userId, { quota_remaining: -left, forfeited: left }, (a, op) => `${op.eq(a.period_start, period)} AND ${op.eq(a.quota_remaining, left)}`, { quota_lapsed_period: period }),
    ]).go();
    const end = outcome(result);
    if (end === "contended") throw new Contended();
    return end === "committed" ? left : 0;
  });
}

/**
 * Revoke the unused credits of a refunded boost pack (spec 02 "Boost pack"; Stripe `charge.refunded`). A full refund
 * forfeits everything the pack has left and closes it (`expired_at`, out of the expiry index): ledger item
 * `expire#refund#<boost id>`. A partial one forfeits its share less what earlier refunds revoked (the pack's
 * `refund_revoked`), at most what is left: ledger item `expire#refund#<boost id>#<share>`, so a second partial refund
 * (a larger cumulative share) revokes its own part and a repeat of the same one nothing; it leaves the pack open.
 * Credits already charged or held stay charged or held; a hold's return to a pack a full refund closed is forfeited,
 * as for an expired one (`close` reads the packs), and to a partially refunded one comes back.
 * @param userId the account's user
 * @param boostId the pack (its grant's source: the checkout session id)
 * @param credits the refunds' cumulative share of the pack's credits (default: a full refund, everything left)
 * @returns the credits revoked (0 when the pack is unknown, closed already, or this refund was applied before)
 */
export async function revokeBoost(userId: string, boostId: string, credits?: number): Promise<number> {
  const granted = await readLedger(userId, `grant#${boostId}`);
  const expiresAt = granted?.boosts?.[0]?.expires_at;
  if (!expiresAt) return 0;
  return retrying("revoke", async () => {
    const b = (await bill().creditBoost.get({ user_id: userId, expires_at: expiresAt, boost_id: boostId }).go(CONSISTENT)).data;
    if (!b || b.expired_at) return 0;
    const left = b.remaining;
    const before = b.refund_revoked ?? 0;
    const share = credits === undefined ? undefined : quarterUp(credits);
    const revoked = Math.min(left, share === undefined ? left : Math.max(0, share - before));
    if (share !== undefined && revoked === 0) return 0;
    const key = share === undefined ? `expire#refund#${boostId}` : `expire#refund#${boostId}#${share}`;
    // Only a full refund closes the pack: after a partial one, credits a run still holds come back to it when the run
    // ends (the refund revoked its share of what was left; it does not take the holds).
    const closes = share === undefined;
    const nowIso = new Date().toISOString();
    const result = await createWriteTransaction(db().pick("creditLedger", "creditBoost", "billingAccount"), ({ creditLedger, creditBoost, billingAccount }) => [
      creditLedger
        .create({
          user_id: userId, key, kind: "expire", source: `refund#${boostId}`, credits: revoked, delta: neg(revoked),
          boosts: [{ boost_id: boostId, expires_at: expiresAt, credits: neg(revoked) }], forfeited: revoked,
        })
        .commit(),
      creditBoost
        .patch({ user_id: userId, expires_at: expiresAt, boost_id: boostId })
        .set({ remaining: left - revoked, refund_revoked: before + revoked, ...(closes ? { expired_at: nowIso } : {}) })
        .remove(closes ? ["expiry"] : [])
        .where((a, op) => `${op.eq(a.remaining, left)} AND ${op.notExists(a.expired_at)}`)
        .commit(),
      patchAccount(billingAccount, userId, { forfeited: revoked }),
    ]).go();
    const end = outcome(result);
    if (end === "contended") throw new Contended();
    return end === "committed" ? revoked : 0;
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Reserve, settle, release

/**
 * Hold up to `credits` for an AI run before it starts (DESIGN.md 6.3): from the monthly quota first, then from boosts
 * by earliest expiry (spec 02 Credits: boosts after the quota is exhausted); an expired boost is never used. All or
 * nothing: when the spendable balance is smaller, nothing is held. Once per run: the ledger item `run#<id>#reserve`
 * is created with the hold, so a retried reserve returns the first reservation with `applied: false`.
 * With `computeBudget`, the run is refused (402 `reason: compute_budget`) when the account's plan budget for the
 * period is used up (spec 02 Compute budget), checked on the same read.
 *
 * Fast path: this process remembers each account's period, plan and quota as its last reservation saw them. When
 * they say the quota alone covers the run, the first attempt is the transaction alone, its conditions standing in for
 * the reads (quota still covers it, same period, same plan, compute budget not used up); if any fails, the usual read
 * and plan follow at once. One round trip instead of two for a run on a funded quota.
 * @param userId the account's user (created on first use)
 * @param runId the AI run (agent run id, or the operation's own id): one reservation per run
 * @param credits the run's estimated maximum, in credits (rounded up to 0.25)
 * @param opts.computeBudget refuse the run when the period's compute budget is used up
 * @param opts.action the approved pending action whose execution the run is (its workspace and id), written on the
 *   hold: the stale-reservation sweeper reads the action's recorded charge before it releases (core/billing/sweeper.ts)
 * @returns the reservation: credits held and from which buckets
 * @throws AppError USAGE_LIMIT_EXCEEDED (402, `reason: "credits_exhausted"`, `required`, `available`; or
 *   `reason: "compute_budget"`) when the run cannot be carried.
 * @throws AppError SERVICE_UNAVAILABLE (503) when the account stays contended through the retries.
 * @throws RangeError when credits is not a positive number.
 */
export async function reserve(userId: string, runId: string, credits: number, opts: { computeBudget?: boolean; action?: HoldAction } = {}): Promise<Reservation> {
  const need = amount(credits, "credits", true);
  const key = `run#${runId}#reserve`;
  const seen = lastSeen.get(userId);
  // The fast path only while the plan it saw still applies: a lapse, or a downgrade taking effect, is a matter of the
  // clock, not of a write.
  if (seen && seen.quota_remaining >= need && (seen.changes_at === null || new Date().toISOString() < seen.changes_at)) {
    const fast = await reserveFromQuota(userId, runId, key, need, seen, opts.computeBudget ?? false, opts.action);
    if (fast) return fast;
  }
  return retrying("reserve", async () => {
    const nowIso = new Date().toISOString();
    const [found, boosts] = await accountAndBoosts(userId, nowIso);
    const account = found ?? (await accountOf(userId));
    const entitled = entitlementOf(account);
    // A lapsed paid plan's quota is not spendable: expire it (once, ledger `expire#lapse#…`) and plan again.
    if (entitled.lapsed && account.quota_remaining > 0 && (await lapseQuota(userId)) > 0) throw new Contended();
    remember(account);
    if (opts.computeBudget) {
      try {
        requireComputeBudget(account);
      } catch (err) {
        // A run reserves once: its retry (an approved action's next attempt, under the same run id) keeps the credits
        // its first attempt holds, though the budget has filled since; only a new run is refused.
        const prior = await readLedger(userId, key);
        if (prior) return reservationOf(prior);
        throw err;
      }
    }
    const plan = take(need, entitled.lapsed ? 0 : account.quota_remaining, boosts);
    if (plan.taken < need) {
      const prior = await readLedger(userId, key);
      if (prior) return reservationOf(prior);
      throw exhausted(need, account.quota_remaining + sum(boosts.map((b) => b.remaining)));
    }
    const result = await reserveTransaction(userId, runId, key, need, plan, account.period_start, opts.action, (a, op) =>
      plan.quota > 0 ? `${op.gte(a.quota_remaining, plan.quota)} AND ${op.eq(a.period_start, account.period_start)}` : "",
    ).go();
    const end = outcome(result);
    if (end === "contended") throw new Contended();
    if (end === "duplicate") return reservationOf((await readLedger(userId, key))!);
    remember({ ...account, quota_remaining: account.quota_remaining - plan.quota });
    return { run_id: runId, credits: need, quota: plan.quota, boosts: plan.boosts, applied: true, period_start: account.period_start };
  });
}

/**
 * The plan of an account as this process's last reservation for it saw it (exact right after `reserve`: the read
 * path read it, the fast path's transaction was conditioned on it), or undefined.
 */
export const lastSeenPlan = (userId: string): Plan | undefined => lastSeen.get(userId)?.plan;

/**
 * The plan in effect and its limits (`entitlementOf`, applied now to the account as this process's last reservation
 * for it saw it), or undefined: right after `reserve` it is what a fresh read of the account would give, so the
 * reserving request need not read the account again for its limits (the copilot's chat history window).
 */
export function lastSeenEntitlement(userId: string): Entitlement | undefined {
  const seen = lastSeen.get(userId);
  return seen ? entitlementOf(seen.terms) : undefined;
}

/**
 * What this process last saw of an account, for `reserve`'s fast path (bounded: past the bound it starts again): the
 * stored plan, the plan in effect and when it changes, `stripe_synced_at` and the terms the plan in effect is computed
 * from (the fast path is conditioned on each, so it sees no status, plan, period or term change it did not read).
 */
interface Seen extends Pick<BillingAccount, "period_start" | "plan" | "status" | "quota_remaining" | "stripe_synced_at"> {
  effective: Plan;
  /**
   * When the plan in effect changes by the clock alone (ISO 8601), so the fast path stops trusting `effective`: the
   * paid plan lapses, or a plan downgraded within its period gives way to the lower one at the period's end. Null: never.
   */
  changes_at: string | null;
  /** The account's fields its entitlement depends on, for `lastSeenEntitlement` (the clock may have moved since). */
  terms: EntitlementInput;
}
const lastSeen = new Map<string, Seen>();
const MAX_SEEN = 10_000;
function remember(account: BillingAccount) {
  if (lastSeen.size >= MAX_SEEN) lastSeen.clear();
  const e = entitlementOf(account);
  lastSeen.set(account.user_id, {
    period_start: account.period_start, plan: account.plan, status: account.status, quota_remaining: e.lapsed ? 0 : account.quota_remaining,
    stripe_synced_at: account.stripe_synced_at, effective: e.plan,
    changes_at: [e.lapses_at, e.plan !== account.plan ? account.period_end : null].filter((t): t is string => t !== null).sort()[0] ?? null,
    terms: {
      plan: account.plan, status: account.status, period_end: account.period_end, period_plan: account.period_plan,
      cancel_at_period_end: account.cancel_at_period_end, subscription_start: account.subscription_start, subscription_end: account.subscription_end,
      past_due_since: account.past_due_since,
    },
  });
}

/** The reserve transaction: ledger item (created only if absent), hold, account (with `where`), boost debits. */
function reserveTransaction(
  userId: string, runId: string, key: string, need: number, plan: ReturnType<typeof take>, periodStart: string,
  action: HoldAction | undefined, where: AccountCondition,
) {
  return createWriteTransaction(
    db().pick("creditLedger", "creditHold", "billingAccount", "creditBoost"),
    ({ creditLedger, creditHold, billingAccount, creditBoost }) => [
      creditLedger
        .create({
          user_id: userId, key, kind: "reserve", source: runId, run_id: runId, credits: need, delta: neg(need), quota: neg(plan.quota),
          boosts: plan.boosts.map((p) => ({ ...p, credits: neg(p.credits) })), period_start: periodStart,
        })
        .commit(),
      creditHold
        .create({
          user_id: userId, run_id: runId, credits: need, quota: plan.quota, quota_period: periodStart, boosts: plan.boosts,
          ...(action ? { action_workspace_id: action.workspaceId, action_id: action.actionId } : {}),
        })
        .commit(),
      patchAccount(billingAccount, userId, { reserved: need, quota_remaining: -plan.quota }, where),
      ...plan.boosts.map((p) => debitBoost(creditBoost, userId, p)),
    ],
  );
}

/**
 * `reserve`'s fast path: the whole run from the quota in one transaction, without reading, conditioned on what a read
 * would have checked. Returns null (and forgets the account) when a condition fails, so the caller reads and plans.
 */
async function reserveFromQuota(
  userId: string, runId: string, key: string, need: number,
  seen: Seen, computeBudget: boolean, action: HoldAction | undefined,
): Promise<Reservation | null> {
  const limits = PLANS[seen.effective];
  const plan = { quota: need, boosts: [], taken: need };
  const result = await reserveTransaction(userId, runId, key, need, plan, seen.period_start, action, (a, op) =>
    [
      op.gte(a.quota_remaining, need),
      op.eq(a.period_start, seen.period_start),
      op.eq(a.plan, seen.plan),
      op.eq(a.status, seen.status),
      seen.stripe_synced_at ? op.eq(a.stripe_synced_at, seen.stripe_synced_at) : op.notExists(a.stripe_synced_at),
      // The terms the plan in effect is computed from, each as seen: two syncs within one second of each other can
      // leave `stripe_synced_at` as it was while changing them (a cancellation scheduled, the paid period moved).
      ...(["period_end", "period_plan", "cancel_at_period_end", "subscription_start", "subscription_end", "past_due_since"] as const).map((field) => {
        const value = seen.terms[field];
        return value === undefined ? op.notExists(a[field]) : op.eq(a[field], value);
      }),
      // The compute budget (spec 02): blocked from 100 % of either budget, as `requireComputeBudget` decides.
      ...(computeBudget ? [op.lt(a.tokens_used, limits.token_budget), op.lt(a.cost_usd, limits.cost_target_usd)] : []),
    ].join(" AND "),
  ).go();
  const end = outcome(result);
  if (end === "duplicate") return reservationOf((await readLedger(userId, key))!);
  if (end === "contended") {
    lastSeen.delete(userId);
    return null;
  }
  lastSeen.set(userId, { ...seen, quota_remaining: seen.quota_remaining - need });
  return { run_id: runId, credits: need, quota: need, boosts: [], applied: true, period_start: seen.period_start };
}

function reservationOf(item: LedgerItem): Reservation {
  return {
    run_id: item.run_id ?? item.source,
    credits: item.credits,
    quota: neg(item.quota ?? 0),
    boosts: (item.boosts ?? []).map((p) => ({ ...p, credits: neg(p.credits) })),
    applied: false,
    ...(item.period_start ? { period_start: item.period_start } : {}),
  };
}

/**
 * Charge a run its actual cost when it ends (DESIGN.md 6.3; the figure is `creditsFor(costUsd, outcome)` of
 * core/billing/credits.ts, spec 02 Credits) and close its reservation, once (ledger item `run#<id>#settle`).
 * - actual ≤ held: the actual cost is charged from the held credits in the deduction order (quota, then boosts by
 *   earliest expiry) and the rest goes back to the buckets it came from (latest first). A part whose bucket has
 *   closed meanwhile (the quota of a past period, an expired boost) is forfeited instead.
 * - actual > held: the held credits are charged and the extra is charged from the spendable balance in the deduction
 *   order, as far as it goes; what it cannot cover is recorded as `shortfall` on the ledger item and the account. The
 *   balance never goes negative and the run is not failed after the fact (its work is done); the shortfall is the
 *   figure for an estimate that was too low, not a debt carried into the next period.
 * - no open reservation (never reserved, or released by the stale-reservation sweeper before the run finished): the
 *   actual cost is charged from the spendable balance as above.
 * A retried settle returns the first one's figures with `applied: false, reason: "already_applied"`.
 *
 * With the `reservation` this process made (and a cost within it), the first attempt skips its three reads: it plans
 * from the reservation and lets the transaction's conditions check what the reads would have (the ledger item is new,
 * the hold still exists, the quota's period has not turned, no returned boost has expired). If any fails, the
 * attempt is cancelled and the next one reads, as without it: one round trip instead of two in the common case.
 * @param userId the account's user
 * @param runId the run that reserved
 * @param actualCredits the run's cost in credits (rounded up to 0.25; 0 for a failed run without cost)
 * @param usage the run's model tokens and USD cost, added to the period's compute counters (spec 02 Compute budget)
 * @param reservation what `reserve` returned for this run in this process, if it did
 * @throws AppError SERVICE_UNAVAILABLE (503) when the account stays contended through the retries.
 * @throws RangeError when actualCredits is negative or not a number.
 */
export async function settle(userId: string, runId: string, actualCredits: number, usage: RunUsage = {}, reservation?: Reservation): Promise<Closing> {
  const actual = amount(actualCredits, "actualCredits", false);
  const known = reservation?.applied && reservation.period_start && actual <= reservation.credits ? reservation : undefined;
  return close(userId, runId, "settle", actual, usage, known);
}

/**
 * Give back everything a run's reservation holds, for a cancelled run or a stale reservation (DESIGN.md 6.3: a
 * sweeper releases stale reservations), once (ledger item `run#<id>#release`). Held credits go back to the buckets
 * they came from, or are forfeited if their bucket has closed (see `settle`). No open reservation (never reserved,
 * already settled or released): nothing changes (`applied: false`, reason `not_reserved` or `already_applied`).
 * A settle that arrives after a release charges the run from the spendable balance.
 * @param userId the account's user
 * @param runId the run that reserved
 * @throws AppError SERVICE_UNAVAILABLE (503) when the account stays contended through the retries.
 */
export async function release(userId: string, runId: string): Promise<Closing> {
  return close(userId, runId, "release", 0, {});
}

function closingOf(item: LedgerItem, kind: Closing["kind"]): Closing {
  const held = item.held ?? 0;
  const forfeited = item.forfeited ?? 0;
  const charged = item.charged ?? 0;
  const shortfall = item.shortfall ?? 0;
  return {
    run_id: item.run_id ?? item.source, kind, held, charged, shortfall, forfeited,
    // In a settle or release item, positive bucket changes are returns and negative ones the extra charged.
    returned: Math.max(0, item.quota ?? 0) + sum((item.boosts ?? []).map((p) => Math.max(0, p.credits))),
    applied: false, reason: "already_applied",
  };
}

type KnownHold = Pick<CreditHold, "credits" | "quota" | "quota_period" | "boosts">;

/** The ids of the packs among `portions` that are closed (`expired_at` set: expired or refunded), read consistently. */
async function closedPacks(userId: string, portions: BoostPortion[]): Promise<Set<string>> {
  const packs = await Promise.all(portions.map((p) => bill().creditBoost.get({ user_id: userId, expires_at: p.expires_at, boost_id: p.boost_id }).go(CONSISTENT)));
  return new Set(packs.flatMap(({ data }) => (data?.expired_at ? [data.boost_id] : [])));
}

async function close(userId: string, runId: string, kind: Closing["kind"], actual: number, usage: RunUsage, known?: Reservation): Promise<Closing> {
  const key = `run#${runId}#${kind}`;
  let fast = known !== undefined;
  return retrying(kind, async () => {
    const nowIso = new Date().toISOString();
    // The fast first attempt trusts the reservation; the transaction's conditions refuse it if that was stale.
    const trusting = fast && known !== undefined;
    const [prior, hold, found]: [LedgerItem | null, KnownHold | null, Pick<BillingAccount, "period_start" | "quota_remaining"> | null] =
      trusting && known
        ? [null, { credits: known.credits, quota: known.quota, quota_period: known.period_start!, boosts: known.boosts }, { period_start: known.period_start!, quota_remaining: 0 }]
        : await Promise.all([readLedger(userId, key), readHold(userId, runId), readAccount(userId)]);
    fast = false;
    if (prior) return closingOf(prior, kind);
    const none = { run_id: runId, kind, held: 0, charged: 0, shortfall: 0, returned: 0, forfeited: 0 };
    if (kind === "release" && !hold) return { ...none, applied: false, reason: "not_reserved" as const };
    const account = found ?? (await accountOf(userId));

    // The held credits in deduction order: the first `actual` of them are charged, the rest given back.
    const held = hold?.credits ?? 0;
    let toCharge = Math.min(actual, held);
    const quotaCharged = Math.min(toCharge, hold?.quota ?? 0);
    toCharge -= quotaCharged;
    const heldQuotaLeft = (hold?.quota ?? 0) - quotaCharged;
    const heldBoostsLeft: BoostPortion[] = [];
    for (const p of [...(hold?.boosts ?? [])].sort((a, b) => a.expires_at.localeCompare(b.expires_at) || a.boost_id.localeCompare(b.boost_id))) {
      const charged = Math.min(toCharge, p.credits);
      toCharge -= charged;
      if (p.credits - charged > 0) heldBoostsLeft.push({ ...p, credits: p.credits - charged });
    }
    // The quota is closed to returns once its period turned, or once the paid plan lapsed (its rest expired: `lapseQuota`).
    const quotaOpen =
      hold !== null &&
      hold.quota_period === account.period_start &&
      (account as Partial<BillingAccount>).quota_lapsed_period !== hold.quota_period &&
      !("plan" in account && entitlementOf(account as BillingAccount).lapsed);
    const quotaBack = quotaOpen ? heldQuotaLeft : 0;
    // A pack closed before its expiry (refunded in full: `revokeBoost`) takes no returns either. The fast attempt does
    // not read the packs: its return's condition (pack not closed) refuses it, and this read follows.
    const closed = trusting ? new Set<string>() : await closedPacks(userId, heldBoostsLeft);
    const open = (p: BoostPortion) => p.expires_at > nowIso && !closed.has(p.boost_id);
    const boostsBack = heldBoostsLeft.filter(open);
    const forfeited = heldQuotaLeft - quotaBack + sum(heldBoostsLeft.filter((p) => !open(p)).map((p) => p.credits));
    const returned = quotaBack + sum(boostsBack.map((p) => p.credits));

    // Beyond the hold: charge the extra from the spendable balance, as far as it goes.
    const extraNeed = Math.max(0, actual - held);
    const extra = extraNeed > 0 ? take(extraNeed, account.quota_remaining, await activeBoosts(userId, nowIso)) : { quota: 0, boosts: [], taken: 0 };
    const shortfall = extraNeed - extra.taken;
    const charged = kind === "settle" ? actual - shortfall : 0;
    const tokens = usage.tokens ?? 0;
    const costUsd = usage.costUsd ?? 0;

    const result = await createWriteTransaction(
      db().pick("creditLedger", "creditHold", "billingAccount", "creditBoost"),
      ({ creditLedger, creditHold, billingAccount, creditBoost }) => [
        creditLedger
          .create({
            user_id: userId, key, kind, source: runId, run_id: runId, credits: kind === "settle" ? actual : held,
            delta: returned - extra.taken, quota: quotaBack - extra.quota,
            boosts: [...boostsBack, ...extra.boosts.map((p) => ({ ...p, credits: neg(p.credits) }))],
            held, charged, shortfall, forfeited, period_start: account.period_start,
            ...(kind === "settle" ? { tokens, cost_usd: costUsd } : {}),
          })
          .commit(),
        ...(hold ? [creditHold.remove({ user_id: userId, run_id: runId }).commit()] : []),
        patchAccount(
          billingAccount,
          userId,
          { reserved: -held, quota_remaining: quotaBack - extra.quota, charged, shortfall, forfeited, tokens_used: tokens, cost_usd: costUsd },
          (a, op) =>
            extra.quota > 0
              ? `${op.gte(a.quota_remaining, extra.quota)} AND ${op.eq(a.period_start, account.period_start)}`
              : quotaBack > 0
                ? // Still the quota's period, and its rest not expired by a lapse since (the fast path did not read the account).
                  `${op.eq(a.period_start, hold!.quota_period)} AND (${op.notExists(a.quota_lapsed_period)} OR ${op.ne(a.quota_lapsed_period, hold!.quota_period)})`
                : "",
        ),
        ...boostsBack.map((p) =>
          creditBoost
            .patch({ user_id: userId, expires_at: p.expires_at, boost_id: p.boost_id })
            .add({ remaining: p.credits })
            .where((a, op) => op.notExists(a.expired_at))
            .commit(),
        ),
        ...extra.boosts.map((p) => debitBoost(creditBoost, userId, p)),
      ],
    ).go();
    const end = outcome(result);
    if (end === "contended") throw new Contended();
    if (end === "duplicate") return closingOf((await readLedger(userId, key))!, kind);
    return { run_id: runId, kind, held, charged, shortfall, returned, forfeited, applied: true };
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Expiry and balance

/**
 * Close the boosts that have expired (DESIGN.md 6.3 `expire` events; spec 02 "Boost pack": valid 30 days): each
 * expired pack's remaining credits are forfeited, once (ledger item `expire#boost#<boost id>`, the pack marked
 * `expired_at` so nothing can be returned to it any more). Expired packs are never spent whether or not this ran;
 * it makes the ledger and the account's `forfeited` counter account for them. Meant for a periodic sweeper.
 * @param userId the account's user
 * @param now the time to expire at (default: now)
 * @returns the credits forfeited by this call
 * @throws AppError SERVICE_UNAVAILABLE (503) when the account stays contended through the retries.
 */
export async function expireBoosts(userId: string, now: Date = new Date()): Promise<number> {
  const nowIso = now.toISOString();
  let total = 0;
  for (const boost of await lapsedBoosts(userId, nowIso)) {
    total += await retrying("expire", async () => {
      const b = (await bill().creditBoost.get({ user_id: userId, expires_at: boost.expires_at, boost_id: boost.boost_id }).go(CONSISTENT)).data;
      if (!b || b.expired_at) return 0;
      const left = b.remaining;
      const result = await createWriteTransaction(
        db().pick("creditLedger", "creditBoost", "billingAccount"),
        ({ creditLedger, creditBoost, billingAccount }) => [
          creditLedger
            .create({
              user_id: userId, key: `expire#boost#${b.boost_id}`, kind: "expire", source: b.boost_id, credits: left, delta: neg(left),
              boosts: [{ boost_id: b.boost_id, expires_at: b.expires_at, credits: neg(left) }], forfeited: left,
            })
            .commit(),
          creditBoost
            .patch({ user_id: userId, expires_at: b.expires_at, boost_id: b.boost_id })
            .set({ expired_at: nowIso, remaining: 0 })
            .remove(["expiry"])
            .where((a, op) => `${op.eq(a.remaining, left)} AND ${op.notExists(a.expired_at)}`)
            .commit(),
          patchAccount(billingAccount, userId, { forfeited: left }),
        ],
      ).go();
      const end = outcome(result);
      if (end === "contended") throw new Contended();
      return end === "committed" ? left : 0;
    });
  }
  return total;
}

/**
 * The user's credit balance (spec 02 "Subscription and credits", Credit balance; see `CreditBalance` for each field)
 * from the account and the boosts that have not expired: one Query, no ledger scan. Creates the account on first use.
 * @param userId the account's user
 */
export async function balanceOf(userId: string): Promise<CreditBalance> {
  const nowIso = new Date().toISOString();
  const [found, boosts] = await accountAndBoosts(userId, nowIso);
  const account = found ?? (await accountOf(userId));
  const monthly_quota = account.quota_granted;
  const monthly_remaining = account.quota_remaining;
  const monthly_used = monthly_quota - monthly_remaining;
  const bonus_credits = sum(boosts.map((b) => b.remaining));
  const total_available = monthly_quota + sum(boosts.map((b) => b.granted));
  const total_remaining = monthly_remaining + bonus_credits;
  const total_used = total_available - total_remaining;
  return {
    monthly_quota,
    monthly_used,
    monthly_remaining,
    bonus_credits,
    total_available,
    total_used,
    total_remaining,
    percentage: total_available > 0 ? Math.round((total_used / total_available) * 1000) / 10 : 0,
    is_blocked: total_remaining <= 0,
    reserved: account.reserved,
  };
}
