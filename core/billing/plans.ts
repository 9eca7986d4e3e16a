/**
 * Plan limits and feature flags (spec 02, Limits: Plans). `null` means unlimited.
 * The trial plan is not priced in the spec; we give it Pro's features with smaller quotas so a team can try
 * the whole flow on a real research folder (decision recorded in docs/decisions.md).
 */
export type Plan = "trial" | "pro" | "growth" | "power";

export interface PlanLimits {
  tier: Plan;
  monthly_credits: number;
  max_workspaces: number | null;
  max_seats_per_workspace: number | null;
  max_research_sources: number | null;
  max_documents: number | null;
  max_custom_skills: number | null;
  api_calls_per_day: number | null;
  cost_target_usd: number;
  token_budget: number;
  has_integrations: boolean;
  has_codehost: boolean;
  has_research_graph: boolean;
  has_skills: boolean;
  has_custom_skills: boolean;
  has_api_access: boolean;
  has_overnight_cycles: boolean;
  /**
   * Agent runs a month: null on every plan. The spec names the field but its plan table gives no figure; runs are
   * metered by credits (and the compute budget), which already bound them (docs/decisions.md).
   */
  max_agent_runs: number | null;
  /** Days of chat history a member can list and read (spec 02 Limits: Plans, chat history: 30, 90, 365). */
  chat_history_days: number;
  has_export_pdf: boolean;
  has_export_notes: boolean;
  has_priority_execution: boolean;
  has_custom_memory: boolean;
  has_optimized_prompts: boolean;
  has_synthesis_swarm: boolean;
  has_fs_researcher: boolean;
  has_sso: boolean;
  has_audit_logs: boolean;
}

// Spec 02 feature flags (Pro / Growth / Power); the trial has Pro's.
const base = {
  has_integrations: true,
  has_codehost: true,
  has_research_graph: true,
  has_skills: true,
  has_export_pdf: true,
  has_export_notes: true,
  max_agent_runs: null,
};
const proFlags = {
  has_priority_execution: false, has_custom_memory: false, has_optimized_prompts: false,
  has_synthesis_swarm: false, has_fs_researcher: false, has_sso: false, has_audit_logs: false,
};
const growthFlags = { ...proFlags, has_priority_execution: true, has_custom_memory: true, has_optimized_prompts: true };
const powerFlags = { ...growthFlags, has_synthesis_swarm: true, has_fs_researcher: true, has_sso: true, has_audit_logs: true };

export const PLANS: Record<Plan, PlanLimits> = {
  trial: {
    ...base, tier: "trial", monthly_credits: 15, max_workspaces: 3, max_seats_per_workspace: 3, max_research_sources: 25,
    max_documents: 20, max_custom_skills: 0, api_calls_per_day: 0, cost_target_usd: 2, token_budget: 500_000,
    has_custom_skills: false, has_api_access: false, has_overnight_cycles: false, chat_history_days: 30, ...proFlags,
  },
  pro: {
    ...base, tier: "pro", monthly_credits: 100, max_workspaces: 3, max_seats_per_workspace: 5, max_research_sources: 50,
    max_documents: 20, max_custom_skills: 3, api_calls_per_day: 0, cost_target_usd: 10, token_budget: 2_000_000,
    has_custom_skills: false, has_api_access: false, has_overnight_cycles: false, chat_history_days: 30, ...proFlags,
  },
  growth: {
    ...base, tier: "growth", monthly_credits: 300, max_workspaces: 10, max_seats_per_workspace: 20, max_research_sources: 200,
    max_documents: null, max_custom_skills: 5, api_calls_per_day: 100, cost_target_usd: 25, token_budget: 5_000_000,
    has_custom_skills: true, has_api_access: true, has_overnight_cycles: false, chat_history_days: 90, ...growthFlags,
  },
  power: {
    ...base, tier: "power", monthly_credits: 500, max_workspaces: null, max_seats_per_workspace: null, max_research_sources: 500,
    max_documents: null, max_custom_skills: null, api_calls_per_day: null, cost_target_usd: 60, token_budget: 10_000_000,
    has_custom_skills: true, has_api_access: true, has_overnight_cycles: true, chat_history_days: 365, ...powerFlags,
  },
};

/** The highest plan: the one overnight research cycles need. */
export const HIGHEST_PLAN: Plan = "power";

/** Plans from lowest to highest: an upgrade moves right (more monthly credits), a downgrade left. */
export const PLAN_ORDER: readonly Plan[] = ["trial", "pro", "growth", "power"];

/** The plan's rank in `PLAN_ORDER` (trial 0 … power 3). */
export const planRank = (plan: Plan): number => PLAN_ORDER.indexOf(plan);
