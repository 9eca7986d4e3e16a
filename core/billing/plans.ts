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
}

const base = {
  has_integrations: true,
  has_codehost: true,
  has_research_graph: true,
  has_skills: true,
};

export const PLANS: Record<Plan, PlanLimits> = {
  trial: {
    ...base, tier: "trial", monthly_credits: 15, max_workspaces: 3, max_seats_per_workspace: 3, max_research_sources: 25,
    max_documents: 20, max_custom_skills: 0, api_calls_per_day: 0, cost_target_usd: 2, token_budget: 500_000,
    has_custom_skills: false, has_api_access: false, has_overnight_cycles: false,
  },
  pro: {
    ...base, tier: "pro", monthly_credits: 100, max_workspaces: 3, max_seats_per_workspace: 5, max_research_sources: 50,
    max_documents: 20, max_custom_skills: 3, api_calls_per_day: 0, cost_target_usd: 10, token_budget: 2_000_000,
    has_custom_skills: false, has_api_access: false, has_overnight_cycles: false,
  },
  growth: {
    ...base, tier: "growth", monthly_credits: 300, max_workspaces: 10, max_seats_per_workspace: 20, max_research_sources: 200,
    max_documents: null, max_custom_skills: 5, api_calls_per_day: 100, cost_target_usd: 25, token_budget: 5_000_000,
    has_custom_skills: true, has_api_access: true, has_overnight_cycles: false,
  },
  power: {
    ...base, tier: "power", monthly_credits: 500, max_workspaces: null, max_seats_per_workspace: null, max_research_sources: 500,
    max_documents: null, max_custom_skills: null, api_calls_per_day: null, cost_target_usd: 60, token_budget: 10_000_000,
    has_custom_skills: true, has_api_access: true, has_overnight_cycles: true,
  },
};

/** The highest plan: the one overnight research cycles need. */
export const HIGHEST_PLAN: Plan = "power";
