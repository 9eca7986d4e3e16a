import * as z from "zod";

/** The plan tiers (spec 02 Limits: Plans). */
export const PlanTier = z.enum(["trial", "pro", "growth", "power"]).meta({ id: "PlanTier" });

/** Query of the billing routes: the workspace whose owner's account is read (spec 02 Billing). */
export const BillingWorkspaceQuery = z.object({ workspace_id: z.uuid() });
export type BillingWorkspaceQuery = z.infer<typeof BillingWorkspaceQuery>;

/** `GET /api/billing/plans` query: the workspace is optional (without it no plan is current). */
export const PlansQuery = z.object({ workspace_id: z.uuid().optional() });
export type PlansQuery = z.infer<typeof PlansQuery>;

/** The effort tiers of a run (spec 02 Streaming `effort`). */
export const Effort = z.enum(["low", "medium", "high", "max"]);
export type Effort = z.infer<typeof Effort>;

/** `GET /api/billing/estimate` query. */
export const EstimateQuery = z.object({
  workspace_id: z.uuid(),
  model: z.string().min(1).max(200).optional().describe("a model tier (small, mid, large) or a model id; ids are priced at the effort's tier"),
  effort: Effort.optional().describe("default medium"),
});
export type EstimateQuery = z.infer<typeof EstimateQuery>;

/** Plan limits and feature flags (core/billing/plans.ts); `null` is unlimited. */
export const PlanLimitsSchema = z
  .object({
    tier: PlanTier,
    monthly_credits: z.number(),
    max_workspaces: z.int().nullable(),
    max_seats_per_workspace: z.int().nullable(),
    max_research_sources: z.int().nullable(),
    max_documents: z.int().nullable(),
    max_custom_skills: z.int().nullable(),
    api_calls_per_day: z.int().nullable(),
    cost_target_usd: z.number(),
    token_budget: z.int(),
    has_integrations: z.boolean(),
    has_codehost: z.boolean(),
    has_research_graph: z.boolean(),
    has_skills: z.boolean(),
    has_custom_skills: z.boolean(),
    has_api_access: z.boolean(),
    has_overnight_cycles: z.boolean(),
    max_agent_runs: z.int().nullable().describe("null on every plan: runs are metered by credits and the compute budget"),
    chat_history_days: z.int().describe("days of chat history that can be listed and read (30, 90, 365)"),
    has_export_pdf: z.boolean(),
    has_export_notes: z.boolean(),
    has_priority_execution: z.boolean(),
    has_custom_memory: z.boolean(),
    has_optimized_prompts: z.boolean(),
    has_synthesis_swarm: z.boolean(),
    has_fs_researcher: z.boolean(),
    has_sso: z.boolean(),
    has_audit_logs: z.boolean(),
  })
  .meta({ id: "PlanLimits" });

export const PlanOffer = z
  .object({
    tier: PlanTier,
    display_name: z.string(),
    price_monthly: z.number().describe("USD per month"),
    price_yearly: z.number().describe("USD per year"),
    limits: PlanLimitsSchema,
    is_current: z.boolean(),
    is_popular: z.boolean(),
  })
  .meta({ id: "PlanOffer" });

export const PlanList = z
  .object({
    plans: z.array(PlanOffer),
    current_plan: PlanTier.nullable().describe("the plan of the workspace owner's account; null without workspace_id"),
  })
  .meta({ id: "PlanList" });

export const SubscriptionView = z
  .object({
    id: z.string().describe("the Stripe subscription's id once synced, else one id per billing account (the owner's), the same in every workspace"),
    workspace_id: z.uuid(),
    plan: PlanTier.describe("the plan in effect: a cancelled or past-due plan past its period or grace is trial"),
    status: z.enum(["active", "trialing", "past_due", "cancelled"]),
    trial_ends_at: z.string().nullable(),
    current_period_start: z.string(),
    current_period_end: z.string(),
    cancel_at_period_end: z.boolean(),
    limits: PlanLimitsSchema,
  })
  .meta({ id: "Subscription" });

export const CreditBalanceView = z
  .object({
    workspace_id: z.uuid(),
    plan: PlanTier,
    monthly_quota: z.number(),
    monthly_used: z.number(),
    monthly_remaining: z.number(),
    bonus_credits: z.number(),
    total_available: z.number(),
    total_used: z.number(),
    total_remaining: z.number(),
    percentage: z.number(),
    is_blocked: z.boolean(),
    reserved: z.number().describe("credits held by runs in progress (part of the used figures)"),
    daily_soft_cap: z
      .object({
        limit: z.number().describe("(monthly_quota / members / 30) x 2, in credits, 2 decimals"),
        used_today: z.number().describe("credits charged today (UTC) to runs the caller started in this workspace"),
        members: z.int(),
        exceeded: z.boolean(),
      })
      .describe("the caller's per-user daily soft cap (spec 02 Credits): reported, never blocks (docs/decisions.md)"),
  })
  .meta({ id: "CreditBalance" });

export const UsageType = z.enum(["file_upload", "agent_run", "document_draft", "synthesis", "recommendation", "chat_message", "integration_sync"]);

export const UsageItem = z
  .object({
    usage_type: UsageType,
    display_name: z.string(),
    current: z.number(),
    limit: z.number().nullable().describe("null: unlimited"),
    percentage: z.number().describe("current / limit in percent, one decimal; 0 when unlimited"),
    period: z.enum(["total", "billing_period", "daily"]),
  })
  .meta({ id: "UsageItem" });

export const UsageView = z
  .object({
    workspace_id: z.uuid(),
    plan: PlanTier,
    period_start: z.string(),
    period_end: z.string(),
    items: z.array(UsageItem),
  })
  .meta({ id: "Usage" });

export const BoostPackView = z
  .object({
    id: z.uuid().describe("stable id of the grant (derived from it)"),
    pack_type: z
      .enum(["starter", "plus", "max", "referral", "other"])
      .describe("the spec's pack of the grant's credits; referral: credits earned by a referred user's paid checkout; other: any other grant"),
    credits_added: z.number(),
    credits_used: z.number().describe("charged or held by runs in progress (or forfeited at expiry)"),
    credits_remaining: z.number(),
    agent_runs_added: z.int().describe("runs the pack's credits cover at the smallest charge of a successful run (0.5 credit)"),
    agent_runs_used: z.int(),
    agent_runs_remaining: z.int(),
    tokens_added: z.int().describe("model tokens the pack's credits buy at the mid tier's rates (medium effort's input/output mix)"),
    tokens_used: z.int(),
    tokens_remaining: z.int(),
    purchased_at: z.string(),
    expires_at: z.string(),
    is_active: z.boolean(),
  })
  .meta({ id: "BoostPack" });

export const BoostList = z.object({ boosts: z.array(BoostPackView) }).meta({ id: "BoostList" });

export const ComputeLevel = z.enum(["ok", "warning", "blocked"]);

export const ComputeStatus = z
  .object({
    workspace_id: z.uuid(),
    plan: PlanTier,
    tokens_used: z.number(),
    token_budget: z.number(),
    token_percentage: z.number(),
    cost_usd: z.number(),
    cost_budget_usd: z.number(),
    cost_percentage: z.number(),
    boost_tokens_remaining: z.int().describe("tokens_remaining summed over the active boost packs"),
    boost_runs_remaining: z.int().describe("agent_runs_remaining summed over the active boost packs"),
    boost_credits_remaining: z.number(),
    level: ComputeLevel,
    should_throttle: z.boolean(),
    should_block: z.boolean(),
    message: z.string(),
  })
  .meta({ id: "ComputeStatus" });

export const CreditEstimate = z
  .object({
    estimatedCredits: z.number(),
    creditRangeLow: z.number(),
    creditRangeHigh: z.number(),
    remainingCredits: z.number(),
    warning: z.boolean(),
    blocked: z.boolean(),
  })
  .meta({ id: "CreditEstimate" });

export const MilestoneName = z.enum(["signup", "first_run", "engagement"]);

export const MilestoneView = z
  .object({
    name: MilestoneName,
    credits: z.number(),
    achieved: z.boolean(),
    achieved_at: z.string().nullable(),
    granted: z.boolean().describe("the grant is in the owner's credit ledger"),
  })
  .meta({ id: "Milestone" });

export const MilestoneProgress = z
  .object({
    workspace_id: z.uuid(),
    plan: PlanTier,
    milestones: z.array(MilestoneView),
    credits_earned: z.number(),
    credits_possible: z.number(),
  })
  .meta({ id: "MilestoneProgress" });

export const Accomplishments = z
  .object({
    workspace_id: z.uuid(),
    period_start: z.string(),
    period_end: z.string(),
    counts: z.object({
      sources: z.int(),
      insights: z.int(),
      recommendations: z.int(),
      documents: z.int(),
      chat_messages: z.int(),
      syntheses: z.int(),
    }),
    total_runs: z.int(),
    credits_used: z.number(),
  })
  .meta({ id: "Accomplishments" });

/** The paid plans a checkout can start (spec 02 Billing: 'pro' or 'growth' as listed). */
export const CheckoutPlan = z.enum(["pro", "growth"]);
export type CheckoutPlan = z.infer<typeof CheckoutPlan>;
export const BillingInterval = z.enum(["monthly", "yearly"]);
export type BillingInterval = z.infer<typeof BillingInterval>;
/** The boost packs on sale (spec 02 Credits: starter, plus, max). */
export const BoostPackType = z.enum(["starter", "plus", "max"]);
export type BoostPackType = z.infer<typeof BoostPackType>;

/** A URL Stripe sends the browser back to: http(s), at most 2,048 characters (Stripe's own limit is 5,000). */
const ReturnUrl = z.url({ protocol: /^https?$/ }).max(2048);

/** Optional referral code on `POST /api/billing/checkout` (another user's `referral_code`, spec 01 profile). */
export const ReferralCode = z.string().min(1).max(64).describe("another user's referral code; its owner earns boost credits when this checkout is paid");

/** `POST /api/billing/checkout`. */
export const CheckoutBody = z.object({
  workspace_id: z.uuid(),
  plan: CheckoutPlan,
  interval: BillingInterval,
  success_url: ReturnUrl.optional().describe("default: the billing settings page of APP_URL; may hold {CHECKOUT_SESSION_ID}"),
  cancel_url: ReturnUrl.optional().describe("default: the billing settings page of APP_URL"),
  referral_code: ReferralCode.optional(),
});
export type CheckoutBody = z.infer<typeof CheckoutBody>;

/** `POST /api/billing/portal`. */
export const PortalBody = z.object({
  workspace_id: z.uuid(),
  return_url: ReturnUrl.optional().describe("default: the billing settings page of APP_URL"),
});
export type PortalBody = z.infer<typeof PortalBody>;

/** `POST /api/billing/boost/checkout`. */
export const BoostCheckoutBody = z.object({
  workspace_id: z.uuid(),
  pack_type: BoostPackType,
  success_url: ReturnUrl.optional().describe("default: the billing settings page of APP_URL; may hold {CHECKOUT_SESSION_ID}"),
  cancel_url: ReturnUrl.optional().describe("default: the billing settings page of APP_URL"),
});
export type BoostCheckoutBody = z.infer<typeof BoostCheckoutBody>;

export const CheckoutSessionView = z
  .object({
    checkout_url: z.string().describe("the Stripe Checkout page to send the browser to"),
    session_id: z.string().describe("the Checkout Session id (cs_...)"),
  })
  .meta({ id: "CheckoutSession" });

export const PortalSessionView = z
  .object({ portal_url: z.string().describe("the Stripe billing portal page to send the browser to") })
  .meta({ id: "PortalSession" });

/** `POST /api/billing/sync` (spec 02 Billing: sync after a checkout redirect; the body is ours, docs/decisions.md). */
export const BillingSyncResult = z
  .object({
    synced: z.boolean().describe("false when the owner's account has no Stripe customer yet, or Stripe has no subscription for it: the state is unchanged"),
    subscription: SubscriptionView,
  })
  .meta({ id: "BillingSyncResult" });

/**
 * What a payments webhook body must be once its signature checks out: a Stripe event (`evt_...`) with a data object.
 * Only the fields the service reads are checked; the rest of the event passes through to the consumer untouched.
 */
export const PaymentsWebhookEvent = z
  .looseObject({
    id: z.string().min(1).max(255),
    object: z.literal("event"),
    type: z.string().min(1).max(255),
    created: z.number().int(),
    data: z.looseObject({ object: z.looseObject({ id: z.string().optional(), object: z.string() }) }),
  })
  .meta({ id: "PaymentsWebhookEvent", description: "A Stripe event, signed with the endpoint's secret (payments-signature header)" });
