import { AppError } from "../error";
import { entitlementOf, type EntitlementInput } from "./entitlement";

/** Compute budget thresholds (spec 02 Compute budget): warn at 80 %, block at 100 %. */
export const COMPUTE_WARNING_PERCENT = 80;
export const COMPUTE_BLOCK_PERCENT = 100;

const round1 = (x: number) => Math.round(x * 10) / 10;
const pct = (current: number, limit: number) => (limit <= 0 ? 0 : round1((current / limit) * 100));

/**
 * Where an account stands against its plan's compute budget this period (spec 02 Compute budget): the token budget
 * and the monthly cost target, in percent (one decimal), and the level of the worse of the two — `ok` below 80 %,
 * `warning` from 80 %, `blocked` from 100 %. The counters reset with the billing period (ledger `grant`, monthly).
 * The budgets are those of the plan in effect (`entitlementOf`: a lapsed plan's are the trial's).
 * @param account the period's counters: `tokens_used` (model tokens) and `cost_usd` (USD), and the entitlement fields
 */
export function computeOf(account: EntitlementInput & { tokens_used: number; cost_usd: number }) {
  const { limits } = entitlementOf(account);
  const token_percentage = pct(account.tokens_used, limits.token_budget);
  const cost_percentage = pct(account.cost_usd, limits.cost_target_usd);
  const worst = Math.max(token_percentage, cost_percentage);
  // The level from the exact ratios, not the rounded percentages: blocked means a budget is used up (the reserve
  // transaction's condition, `tokens_used < token_budget AND cost_usd < cost_target_usd`, says the same).
  const ratio = Math.max(account.tokens_used / limits.token_budget, account.cost_usd / limits.cost_target_usd);
  const level = ratio * 100 >= COMPUTE_BLOCK_PERCENT ? "blocked" : ratio * 100 >= COMPUTE_WARNING_PERCENT ? "warning" : "ok";
  return { limits, token_percentage, cost_percentage, worst, level } as const;
}

/**
 * Refuse a new AI run when the period's compute budget is used up (spec 02: "blocks new runs at 100 percent").
 * @throws AppError USAGE_LIMIT_EXCEEDED (402, `reason: "compute_budget"`) at the blocked level.
 */
export function requireComputeBudget(account: Parameters<typeof computeOf>[0]): void {
  const c = computeOf(account);
  if (c.level !== "blocked") return;
  throw new AppError(
    "USAGE_LIMIT_EXCEEDED",
    `This billing period's compute budget is used up (${Math.floor(c.worst)}% of the ${c.limits.tier} plan's budget); new AI runs wait for the next period or a plan upgrade`,
    { usage_type: "agent_run", reason: "compute_budget", token_percentage: c.token_percentage, cost_percentage: c.cost_percentage },
  );
}
