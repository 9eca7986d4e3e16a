/**
 * The read side of billing (spec 02 "Billing (/api/billing …)", "Subscription and credits", "Trial milestones",
 * "Boost pack", "Limits: Plans", "Compute budget", "Credits"; DESIGN.md 6.3). A workspace's billing is its OWNER's
 * account (the subscription belongs to the user and covers all their workspaces), so every view finds the owner
 * (`owner_id` of the workspace item) and reads the owner's account; the caller must be a member of the workspace.
 * Reading creates the owner's account on first use (`accountOf`), as every ledger operation does.
 */
import type { z } from "zod";
import pLimit from "p-limit";
import { db } from "../db/service";
import { documentsOf } from "../document/listing";
import { countByPrefix } from "../db/partition";
import { Errors } from "../error";
import { partitionOf, requireMember } from "../workspace";
import { MODEL_RATES, type ModelTier } from "../ai/ports";
import { catalogue } from "../ai/catalogue";
import { EFFORT_TIER, effortOfTier, envelopeCredits, isFreeEngine, reservationFor } from "./charge";
import { aiEngine } from "../ai/engine-setting";
import { computeOf } from "./compute";
import { v5 as uuidv5 } from "uuid";
import { entitlementOf } from "./entitlement";
import { boostRecordId, boostRecordType } from "./boost-record";
import { integrationSyncsIn } from "./usage-counters";
import { USD_PER_CREDIT } from "./credits";
import { costUsd } from "../ai/ports";
export { COMPUTE_BLOCK_PERCENT, COMPUTE_WARNING_PERCENT } from "./compute";
import { PLANS, type Plan } from "./plans";
import { accountOf, balanceOf, milestoneSource, TRIAL_MILESTONE_CREDITS, TRIAL_MILESTONES, type BillingAccount } from "./ledger";
import type {
  Accomplishments,
  BoostList,
  BillingWorkspaceQuery,
  ComputeStatus,
  CreditBalanceView,
  CreditEstimate,
  EstimateQuery,
  MilestoneProgress,
  PlanList,
  PlansQuery,
  SubscriptionView,
  UsageItem,
  UsageView,
} from "./schema";

type Out<S extends z.ZodType> = z.output<S>;

/** Display names and prices in USD (spec 02 Limits: Plans; the trial is free). */
export const PLAN_PRICES: Record<Plan, { display_name: string; price_monthly: number; price_yearly: number }> = {
  trial: { display_name: "Trial", price_monthly: 0, price_yearly: 0 },
  pro: { display_name: "Pro", price_monthly: 29, price_yearly: 319 },
  growth: { display_name: "Growth", price_monthly: 89, price_yearly: 979 },
  power: { display_name: "Power", price_monthly: 149, price_yearly: 1639 },
};

/**
 * The plan marked popular: Growth, the middle paid tier and the first with API access and custom skills (the spec
 * does not name one; decision in the billing report).
 */
export const POPULAR_PLAN: Plan = "growth";

/** Share of total_available below which an estimate warns (the 80 % of the compute budget, mirrored). */
const LOW_BALANCE_SHARE = 0.2;

const round1 = (x: number) => Math.round(x * 10) / 10;
const pct = (current: number, limit: number | null) => (limit === null || limit <= 0 ? 0 : round1((current / limit) * 100));

/** The owner's id of a workspace the caller is a member of. @throws AppError FORBIDDEN (403) for a non-member. */
async function ownerOf(userId: string, workspaceId: string): Promise<string> {
  await requireMember(userId, workspaceId);
  const { data } = await db().entities.workspace.get({ id: workspaceId }).go({ consistent: true });
  if (!data) throw Errors.forbidden();
  return data.owner_id;
}

/** The owner's account of a workspace the caller is a member of. */
async function accountFor(userId: string, workspaceId: string): Promise<{ ownerId: string; account: BillingAccount }> {
  const ownerId = await ownerOf(userId, workspaceId);
  return { ownerId, account: await accountOf(ownerId) };
}

/**
 * The plans with prices and limits (`GET /api/billing/plans`). With `workspace_id` (membership required), the
 * owner's account plan is current; without it no plan is current (`current_plan: null`).
 */
export async function plans(userId: string, q: PlansQuery): Promise<Out<typeof PlanList>> {
  const current = q.workspace_id ? entitlementOf((await accountFor(userId, q.workspace_id)).account).plan : null;
  return {
    plans: (Object.keys(PLANS) as Plan[]).map((tier) => ({
      tier,
      ...PLAN_PRICES[tier],
      limits: PLANS[tier],
      is_current: tier === current,
      is_popular: tier === POPULAR_PLAN,
    })),
    current_plan: current,
  };
}

/**
 * The subscription of a workspace (`GET /api/billing/subscription`; spec 02 Subscription): everything from the owner's
 * account (DESIGN.md 6.3), which the payments webhook and `POST /api/billing/sync` keep at Stripe's state
 * (core/billing/sync.ts): plan, status, credit period, `cancel_at_period_end` and, once a Stripe subscription is
 * synced, its id. Before that (a trial), `id` is the workspace id and `trial_ends_at` the trial's period end;
 * `trial_ends_at` is null unless trialing.
 */
export async function subscription(userId: string, q: BillingWorkspaceQuery): Promise<Out<typeof SubscriptionView>> {
  const { account } = await accountFor(userId, q.workspace_id);
  return subscriptionView(q.workspace_id, account);
}

/** The Subscription of `subscription()` from an account already read (also the body of `POST /api/billing/sync`). */
export async function subscriptionView(workspaceId: string, account: BillingAccount): Promise<Out<typeof SubscriptionView>> {
  const trialing = account.status === "trialing" || account.plan === "trial";
  const entitled = entitlementOf(account);
  const paidPeriod = account.plan !== "trial" && account.billing_interval === "yearly" && Boolean(account.subscription_start && account.subscription_end);
  return {
    id: account.stripe_subscription_id ?? accountSubscriptionId(account.user_id),
    workspace_id: workspaceId,
    plan: entitled.plan,
    status: account.status,
    trial_ends_at: trialing ? account.period_end : null,
    // The subscription's period as Stripe bills it: a yearly plan's paid year, not its credit month (`period_*`).
    current_period_start: paidPeriod ? account.subscription_start! : account.period_start,
    current_period_end: paidPeriod ? account.subscription_end! : account.period_end,
    cancel_at_period_end: account.cancel_at_period_end ?? false,
    limits: entitled.limits,
  };
}

/** Namespace of the subscription ids of accounts without a Stripe subscription (a fixed v4 UUID; never change it). */
const SUBSCRIPTION_ID_NAMESPACE = "0b6f7d3e-2a41-4d8e-9c55-1f3a6e2b7c90";

/**
 * The subscription id of an account that has no Stripe subscription yet (a trial): one UUID per billing account,
 * derived from its user (v5), so every workspace of the owner answers the same id (spec 02: the subscription belongs
 * to the user and covers all their workspaces).
 */
export const accountSubscriptionId = (userId: string): string => uuidv5(`billing-account:${userId}`, SUBSCRIPTION_ID_NAMESPACE);

/** Credits of one successful agent run at its smallest charge (spec 02 Credits): what a pack's run figures count in. */
const CREDITS_PER_RUN = 0.5;
/**
 * Model tokens one credit buys at the mid tier's rates, in the medium effort's input/output mix (the envelope every
 * estimate starts from): 0.08 USD / (USD per token of that mix). Packs carry credits; these figures translate them.
 */
const TOKENS_PER_CREDIT = Math.floor(USD_PER_CREDIT / (costUsd("mid", 40_000, 4_000) / 44_000));
const runsOf = (credits: number) => Math.floor(credits / CREDITS_PER_RUN + 1e-9);
const tokensOf = (credits: number) => Math.floor(credits * TOKENS_PER_CREDIT);

/**
 * The owner's credit balance (`GET /api/billing/credits`; spec 02 Credit balance, see `balanceOf`), with the
 * caller's daily soft cap (spec 02 Credits: (monthly_quota / active members / 30) x 2): members are the workspace's,
 * today's use the credits charged since 00:00 UTC to the runs the caller started in this workspace. Reported only:
 * the cap does not block (docs/decisions.md "Charging").
 */
export async function credits(userId: string, q: BillingWorkspaceQuery): Promise<Out<typeof CreditBalanceView>> {
  const { ownerId, account } = await accountFor(userId, q.workspace_id);
  const [balance, members, today] = await Promise.all([
    balanceOf(ownerId),
    countByPrefix(partitionOf(q.workspace_id), "member#", "membership"),
    runsSince(q.workspace_id, startOfUtcDay()),
  ]);
  const limit = Math.round((balance.monthly_quota / Math.max(1, members) / 30) * 2 * 100) / 100;
  const used_today = today.filter((r) => r.user_id === userId).reduce((sum, r) => sum + (r.credits_charged ?? 0), 0);
  return {
    workspace_id: q.workspace_id,
    plan: entitlementOf(account).plan,
    ...balance,
    daily_soft_cap: { limit, used_today, members, exceeded: used_today > limit },
  };
}

/**
 * How many items of one kind the workspace created at or after `since`. Each entity's byWorkspace index reads only
 * its own items of the workspace partition (ElectroDB filters by entity); only the keys are fetched.
 */
async function createdSince(kind: "sources" | "insights" | "recommendations" | "documents", workspaceId: string, since: string): Promise<number> {
  const e = db().entities;
  const k = { workspace_id: workspaceId };
  const opts = { pages: "all", attributes: ["id"] } as const;
  const { data } =
    kind === "sources"
      ? await e.researchSource.query.byWorkspace(k).where((a, op) => op.gte(a.created_at, since)).go(opts)
      : kind === "insights"
        ? await e.insight.query.byWorkspace(k).where((a, op) => op.gte(a.created_at, since)).go(opts)
        : kind === "recommendations"
          ? await e.recommendation.query.byWorkspace(k).where((a, op) => op.gte(a.created_at, since)).go(opts)
          : { data: await documentsOf(workspaceId, { attributes: ["id"], createdSince: since }) };
  return data.length;
}

/**
 * Agent runs of a workspace executed at or after `since`, oldest first (embedding runs are internal and left out):
 * a key range on the runs' time-ordered sort key (`agentrun#<executed_at>#<id>`), with only the attributes the
 * views count (not the runs' inputs and outputs).
 */
async function runsSince(workspaceId: string, since: string) {
  const { data } = await db()
    .entities.agentRun.query.byWorkspace({ workspace_id: workspaceId })
    // A range within `agentrun#`: `gte` alone would also read every item of the partition sorted after the runs.
    .between({ executed_at: since }, { executed_at: "9999" })
    .go({ pages: "all", attributes: ["user_id", "agent_type", "status", "credits_charged", "executed_at"] });
  return data.filter((r) => r.agent_type !== "embedding");
}

/** Runs read per Query page by `milestoneRuns`: the milestones need the first three runs and the first success. */
const MILESTONE_PAGE = 20;

/**
 * When the workspace's first successful agent run and its third agent run (any outcome) were executed, embedding runs
 * left out (spec 02 Trial milestones). The runs' sort key is time-ordered (`agentrun#<executed_at>#<id>`), so they are
 * read oldest first, MILESTONE_PAGE at a time with only the attributes needed, until both are known: a workspace's
 * whole history is read only while it has fewer than three runs or none has succeeded yet.
 */
async function milestoneRuns(workspaceId: string): Promise<{ firstSuccess: string | null; third: string | null }> {
  let firstSuccess: string | null = null;
  let third: string | null = null;
  let counted = 0;
  let cursor: string | null = null;
  do {
    const page: { data: { agent_type: string; status: string; executed_at: string }[]; cursor: string | null } = await db()
      .entities.agentRun.query.byWorkspace({ workspace_id: workspaceId })
      .between({ executed_at: "" }, { executed_at: "9999" })
      .go({ limit: MILESTONE_PAGE, cursor, attributes: ["agent_type", "status", "executed_at"] });
    for (const run of page.data) {
      if (run.agent_type === "embedding") continue;
      counted += 1;
      if (counted === 3) third = run.executed_at;
      if (firstSuccess === null && run.status === "success") firstSuccess = run.executed_at;
    }
    cursor = page.cursor;
  } while (cursor && (firstSuccess === null || third === null));
  return { firstSuccess, third };
}

/** Members whose conversation indexes `chatMessagesSince` reads at once. */
const MEMBER_READS_AT_ONCE = 8;

/**
 * The members' own (user-role) messages in the workspace written at or after `since`. Each member's conversation
 * index (gsi2 `chatuser#<member>#ws#<ws>`, messages sorted by time) is read from `since` on, so the read is bounded
 * by the period's messages, not the workspace's whole chat history as a read of its `conversation#` items was (each
 * answer weighs up to ~400 KB, and they are kept for the plan's history days). Messages of people no longer members
 * are not counted; gsi2 is eventually consistent, so one written in the last second may be missing.
 */
async function chatMessagesSince(workspaceId: string, since: string): Promise<number> {
  const { data: members } = await db().entities.membership.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", attributes: ["user_id"] });
  const limit = pLimit(MEMBER_READS_AT_ONCE);
  const counts = await Promise.all(
    members.map((m) =>
      limit(async () => {
        const { data } = await db()
          .entities.message.query.byUser({ user_id: m.user_id, workspace_id: workspaceId })
          .gte({ created_at: since })
          .where((a, op) => op.eq(a.role, "user"))
          .go({ pages: "all", attributes: ["id"] });
        return data.length;
      }),
    ),
  );
  return counts.reduce((a, n) => a + n, 0);
}

const startOfUtcDay = (d = new Date()) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())).toISOString();

/**
 * The dashboard's usage (`GET /api/billing/usage`; spec 02 usage types) in the owner's current billing period:
 * - file_upload "Research Sources": the workspace's sources now (its usage counter) vs max_research_sources (total).
 * - agent_run "Agent Credits": credits used vs available, account-wide (billing period).
 * - document_draft "Documents": documents created in the period vs max_documents (per month).
 * - synthesis "Synthesis Runs": synthesis agent runs today (UTC); no plan limit yet (null).
 * - recommendation "Recommendation Generations": recommendation agent runs in the period; no plan limit yet.
 * - chat_message "Chat Messages": the members' own messages in the period; no plan limit yet.
 * - integration_sync "Integration Syncs": the manual syncs of the workspace's integrations answered 2xx in the period
 *   (codehost, planner and execution-ticket syncs; counted by the HTTP layer, core/billing/usage-counters.ts); no limit.
 */
export async function usage(userId: string, q: BillingWorkspaceQuery): Promise<Out<typeof UsageView>> {
  const { ownerId, account } = await accountFor(userId, q.workspace_id);
  const { plan, limits } = entitlementOf(account);
  const since = account.period_start;
  const [counter, balance, documents, runs, todays, chat] = await Promise.all([
    db().entities.usage.get({ workspace_id: q.workspace_id }).go({ consistent: true }),
    balanceOf(ownerId),
    createdSince("documents", q.workspace_id, since),
    runsSince(q.workspace_id, since),
    runsSince(q.workspace_id, startOfUtcDay()),
    chatMessagesSince(q.workspace_id, since),
  ]);
  const item = (usage_type: Out<typeof UsageItem>["usage_type"], display_name: string, current: number, limit: number | null, period: Out<typeof UsageItem>["period"]) => ({
    usage_type, display_name, current, limit, percentage: pct(current, limit), period,
  });
  return {
    workspace_id: q.workspace_id,
    plan,
    period_start: account.period_start,
    period_end: account.period_end,
    items: [
      item("file_upload", "Research Sources", counter.data?.research_sources ?? 0, limits.max_research_sources, "total"),
      item("agent_run", "Agent Credits", balance.total_used, balance.total_available, "billing_period"),
      item("document_draft", "Documents", documents, limits.max_documents, "billing_period"),
      item("synthesis", "Synthesis Runs", todays.filter((r) => r.agent_type === "synthesis").length, null, "daily"),
      item("recommendation", "Recommendation Generations", runs.filter((r) => r.agent_type === "recommendation").length, null, "billing_period"),
      item("chat_message", "Chat Messages", chat, null, "billing_period"),
      item("integration_sync", "Integration Syncs", integrationSyncsIn(counter.data, since), null, "billing_period"),
    ],
  };
}

/**
 * The owner's boost packs, newest purchase first (`GET /api/billing/boosts`; spec 02 Boost pack): credits added,
 * used (charged, held or forfeited at expiry) and remaining; active from purchase until `expires_at` (30 days)
 * regardless of use. `id`: a UUID derived from the grant (`boostRecordId`, stable); `pack_type`: `referral` for
 * referral credits, else the spec's pack of the grant's credits, `other` for any other grant (`boostRecordType`).
 */
export async function boosts(userId: string, q: BillingWorkspaceQuery): Promise<Out<typeof BoostList>> {
  const { ownerId } = await accountFor(userId, q.workspace_id);
  const { data } = await db()
    .entities.creditBoost.query.byUser({ user_id: ownerId })
    .between({ expires_at: "" }, { expires_at: "9999" })
    .go({ consistent: true, pages: "all" });
  const now = new Date().toISOString();
  return {
    boosts: data
      .map((b) => ({
        id: boostRecordId(ownerId, b.boost_id),
        pack_type: boostRecordType(b.boost_id, b.granted),
        credits_added: b.granted,
        credits_used: b.granted - b.remaining,
        credits_remaining: b.remaining,
        agent_runs_added: runsOf(b.granted),
        agent_runs_used: runsOf(b.granted) - runsOf(b.remaining),
        agent_runs_remaining: runsOf(b.remaining),
        tokens_added: tokensOf(b.granted),
        tokens_used: tokensOf(b.granted) - tokensOf(b.remaining),
        tokens_remaining: tokensOf(b.remaining),
        purchased_at: b.created_at,
        expires_at: b.expires_at,
        is_active: b.expires_at > now && !b.expired_at,
      }))
      .sort((a, b) => b.purchased_at.localeCompare(a.purchased_at)),
  };
}

/**
 * The compute budget (`GET /api/billing/compute`; spec 02 Compute status) from the owner's period counters (reset
 * with the period). `level`: `ok` below 80 % of both the token budget and the cost target, `warning` from 80 %,
 * `blocked` from 100 % of either; `should_throttle` from `warning`, `should_block` at `blocked`. Boost packs carry
 * credits: `boost_credits_remaining` gives them, and `boost_tokens_remaining` / `boost_runs_remaining` translate them
 * as the packs' own figures do (`GET /boosts`). Budgets are the plan in effect's (`entitlementOf`).
 */
export async function compute(userId: string, q: BillingWorkspaceQuery): Promise<Out<typeof ComputeStatus>> {
  const { ownerId, account } = await accountFor(userId, q.workspace_id);
  const balance = await balanceOf(ownerId);
  const c = computeOf(account);
  const activeBoosts = await db()
    .entities.creditBoost.query.byUser({ user_id: ownerId })
    .between({ expires_at: new Date().toISOString() }, { expires_at: "9999" })
    .go({ consistent: true, pages: "all" });
  const open = activeBoosts.data.filter((b) => !b.expired_at);
  const message =
    c.level === "blocked"
      ? "This billing period's compute budget is used up: new AI runs are refused until the period resets or the plan is upgraded."
      : c.level === "warning"
        ? `${Math.floor(c.worst)}% of this billing period's compute budget is used; runs may be slowed.`
        : "Compute use is within the plan's budget.";
  return {
    workspace_id: q.workspace_id,
    plan: c.limits.tier,
    tokens_used: account.tokens_used,
    token_budget: c.limits.token_budget,
    token_percentage: c.token_percentage,
    cost_usd: account.cost_usd,
    cost_budget_usd: c.limits.cost_target_usd,
    cost_percentage: c.cost_percentage,
    boost_tokens_remaining: open.reduce((n, b) => n + tokensOf(b.remaining), 0),
    boost_runs_remaining: open.reduce((n, b) => n + runsOf(b.remaining), 0),
    boost_credits_remaining: balance.bonus_credits,
    level: c.level,
    should_throttle: c.level !== "ok",
    should_block: c.level === "blocked",
    message,
  };
}

/**
 * The tier a `model` names: a tier itself (small, mid, large), a model of the catalogue (core/ai/catalogue.ts: its
 * tier), a Claude family in the id (haiku, sonnet, opus: the spec's rates are theirs), else none (then the effort's
 * tier prices it). The catalogue carries no SDK, so this Lambda stays free of Bedrock's.
 */
function tierOfModel(model: string | undefined): ModelTier | undefined {
  if (!model) return undefined;
  if (Object.hasOwn(MODEL_RATES, model)) return model as ModelTier;
  const listed = catalogue().find(model);
  if (listed) return listed.tier;
  const m = model.toLowerCase();
  return m.includes("haiku") ? "small" : m.includes("sonnet") ? "mid" : m.includes("opus") ? "large" : undefined;
}

/**
 * The credits a copilot run would cost (`GET /api/billing/estimate`; spec 02: "blocked true means the run will be
 * refused for lack of credits"), on the engine in effect (AI_ENGINE, `aiEngine`):
 * - a model engine: the effort's token envelope (`EFFORT_ENVELOPE` of charge.ts; without an effort, the model tier's
 *   own, medium without a model) priced at the model's tier (spec 02 model rates; tier from `model`, else the
 *   effort's as in the copilot's `modelChoice`) through `creditsFor` (success); low end half the envelope, high end
 *   what the run reserves (`RESERVATION_FACTOR` times it, `reservationFor` with the same effort and tier);
 * - a free engine (the local engine costs 0 USD): all three figures are the run's minimum charge (0.5), which is
 *   also all it reserves.
 * `blocked` when the owner's spendable credits cannot cover what the run would reserve (`reservationFor` on that
 * engine, tier and thinking: the reservation is all or nothing, so blocked here means 402 there and the reverse) or
 * the compute budget blocks; `warning` when not blocked and the run would leave less than 20 % of the available
 * credits, or the compute budget is at its warning level.
 */
export async function estimate(userId: string, q: EstimateQuery): Promise<Out<typeof CreditEstimate>> {
  const { ownerId, account } = await accountFor(userId, q.workspace_id);
  const balance = await balanceOf(ownerId);
  const tier = tierOfModel(q.model) ?? EFFORT_TIER[q.effort ?? "medium"];
  // A run that names no effort is priced, and reserves, at its model tier's own effort (medium without a model).
  const effort = q.effort ?? effortOfTier(tier);
  const engine = aiEngine();
  // What the copilot's pre-flight holds for this run (core/agent/copilot.ts `startCharge`): effort max thinks.
  const reservation = reservationFor(engine, tier, { chatMessage: true, thinking: effort === "max", effort: q.effort });
  const free = isFreeEngine(engine);
  const estimatedCredits = free ? reservation : envelopeCredits(tier, effort, 1);
  const creditRangeLow = free ? reservation : envelopeCredits(tier, effort, 0.5);
  // The high end is what the run holds (`RESERVATION_FACTOR` times the envelope), so `blocked` and it agree.
  const creditRangeHigh = reservation;
  const level = computeOf(account).level;
  const remainingCredits = balance.total_remaining;
  const blocked = remainingCredits < reservation || level === "blocked";
  const warning = !blocked && (remainingCredits - Math.max(creditRangeHigh, reservation) < LOW_BALANCE_SHARE * balance.total_available || level === "warning");
  return { estimatedCredits, creditRangeLow, creditRangeHigh, remainingCredits, warning, blocked };
}

/**
 * Progress of the trial milestones (`GET /api/billing/milestones`; spec 02 Trial milestones, 5.0 credits each):
 * `signup` is achieved with the workspace (its creation), `first_run` at the workspace's first successful agent run,
 * `engagement` at its third agent run (any outcome; embedding runs are internal and not counted). `granted` tells
 * whether the owner's ledger holds the milestone's grant: signup is the account's (`grant#milestone#signup`, granted by
 * `accountOf` to a trial account); first_run and engagement are the workspace's (`grant#milestone#<name>#<workspace>`,
 * granted after the run by `grantMilestones` in core/billing/charge.ts while the owner is on the trial, up to
 * `TRIAL_CREDIT_CAP`). An achieved milestone is not granted on a paid plan or past the cap.
 */
export async function milestones(userId: string, q: BillingWorkspaceQuery): Promise<Out<typeof MilestoneProgress>> {
  const { ownerId, account } = await accountFor(userId, q.workspace_id);
  const [ws, runs, ...grants] = await Promise.all([
    db().entities.workspace.get({ id: q.workspace_id }).go(),
    milestoneRuns(q.workspace_id),
    ...TRIAL_MILESTONES.map((name) =>
      db().entities.creditLedger.get({ user_id: ownerId, key: `grant#${milestoneSource(name, q.workspace_id)}` }).go({ consistent: true }),
    ),
  ]);
  const achievedAt: Record<(typeof TRIAL_MILESTONES)[number], string | null> = {
    signup: grants[0]?.data?.created_at ?? ws.data?.created_at ?? null,
    first_run: runs.firstSuccess,
    engagement: runs.third,
  };
  const list = TRIAL_MILESTONES.map((name, i) => ({
    name,
    credits: TRIAL_MILESTONE_CREDITS,
    achieved: achievedAt[name] !== null,
    achieved_at: achievedAt[name],
    granted: !!grants[i]?.data,
  }));
  return {
    workspace_id: q.workspace_id,
    plan: entitlementOf(account).plan,
    milestones: list,
    credits_earned: list.filter((m) => m.granted).length * TRIAL_MILESTONE_CREDITS,
    credits_possible: TRIAL_MILESTONES.length * TRIAL_MILESTONE_CREDITS,
  };
}

/**
 * What the workspace produced in the owner's current billing period, for the credit-depletion screen
 * (`GET /api/billing/accomplishments`): items created since the period start per work type, agent runs (embedding
 * left out) and the credits used by the owner's account (account-wide: credits are shared by the owner's workspaces).
 */
export async function accomplishments(userId: string, q: BillingWorkspaceQuery): Promise<Out<typeof Accomplishments>> {
  const { ownerId, account } = await accountFor(userId, q.workspace_id);
  const since = account.period_start;
  const [sources, insights, recommendations, documents, chat_messages, runs, balance] = await Promise.all([
    createdSince("sources", q.workspace_id, since),
    createdSince("insights", q.workspace_id, since),
    createdSince("recommendations", q.workspace_id, since),
    createdSince("documents", q.workspace_id, since),
    chatMessagesSince(q.workspace_id, since),
    runsSince(q.workspace_id, since),
    balanceOf(ownerId),
  ]);
  return {
    workspace_id: q.workspace_id,
    period_start: account.period_start,
    period_end: account.period_end,
    counts: {
      sources, insights, recommendations, documents, chat_messages,
      syntheses: runs.filter((r) => r.agent_type === "synthesis" && r.status === "success").length,
    },
    total_runs: runs.length,
    credits_used: balance.total_used,
  };
}
