/**
 * The model catalogue (DESIGN.md 6.1; issue #18): the models a request may name, each with its tier, rates, output
 * limit and whether it supports extended thinking. It is a setting (`MODEL_CATALOGUE`, JSON) with defaults, read by
 * the copilot (which `model` ids are allowed, how many output tokens a call may ask for), by costing (the rates of the
 * model actually called) and by the stacks (IAM allows exactly these models and the embedding model).
 *
 * No AWS SDK here: the billing Lambda and the stacks import it.
 */
import * as z from "zod";
import { SettingError } from "../config";
import { AppError } from "../error";
import { MODEL_RATES, type ModelTier } from "./ports";

/** One model the service may call. Rates in USD per 1M tokens. */
export interface CatalogueModel {
  /** The Bedrock model id or cross-region inference profile id (`us.anthropic.…`), or a server's model name. */
  id: string;
  tier: ModelTier;
  inputUsdPer1M: number;
  outputUsdPer1M: number;
  /** The most output tokens one call may ask for (Anthropic's `max_tokens` ceiling for the model). */
  maxOutputTokens: number;
  /** Extended thinking (Anthropic `thinking: {type: "enabled"}`) is accepted by this model. */
  thinking: boolean;
}

const CatalogueEntry = z
  .object({
    id: z.string().min(1).max(200),
    tier: z.enum(["small", "mid", "large"]),
    inputUsdPer1M: z.number().nonnegative(),
    outputUsdPer1M: z.number().nonnegative(),
    maxOutputTokens: z.number().int().min(256),
    thinking: z.boolean(),
  })
  .strict();

/**
 * The defaults: cross-region inference profiles whose list prices are spec 02's rates. Output limits and thinking
 * support are Anthropic's published figures for each model (Claude 3.5 Haiku: 8,192 output tokens, no extended
 * thinking; Sonnet 4: 64,000 with thinking; Opus 4.1: 32,000 with thinking).
 */
export const DEFAULT_CATALOGUE: readonly CatalogueModel[] = [
  { id: "us.anthropic.claude-3-5-haiku-20241022-v1:0", tier: "small", inputUsdPer1M: 0.8, outputUsdPer1M: 4, maxOutputTokens: 8_192, thinking: false },
  { id: "us.anthropic.claude-sonnet-4-20250514-v1:0", tier: "mid", inputUsdPer1M: 3, outputUsdPer1M: 15, maxOutputTokens: 64_000, thinking: true },
  { id: "us.anthropic.claude-opus-4-1-20250805-v1:0", tier: "large", inputUsdPer1M: 15, outputUsdPer1M: 75, maxOutputTokens: 32_000, thinking: true },
];

/** The embedding model the Embedder port calls on Bedrock (core/ai/bedrock.ts); IAM allows it beside the catalogue. */
export const EMBEDDING_MODEL_ID = "amazon.titan-embed-text-v2:0";

const TIERS: readonly ModelTier[] = ["small", "mid", "large"];

/** A model catalogue and each tier's default model. */
export interface Catalogue {
  models: readonly CatalogueModel[];
  /** The model a tier calls when the request names none (BEDROCK_MODEL_<TIER>, else the tier's first entry). */
  defaults: Record<ModelTier, CatalogueModel>;
  /** The entry of an id, or undefined when the catalogue does not allow it. */
  find(id: string): CatalogueModel | undefined;
}

/**
 * The catalogue in force: `MODEL_CATALOGUE` (a JSON array of entries) or `DEFAULT_CATALOGUE`. `BEDROCK_MODEL_SMALL`,
 * `_MID` and `_LARGE` choose each tier's default among them; an id set there that the catalogue lacks is added with
 * the tier's spec rates, a 4,096-token output limit and no thinking (so IAM allows it and its cost is known).
 * @throws SettingError (one sentence) when MODEL_CATALOGUE is not valid JSON of entries, or leaves a tier without a model
 */
export function catalogue(env: NodeJS.ProcessEnv = process.env): Catalogue {
  const models: CatalogueModel[] = [...parseSetting(env.MODEL_CATALOGUE)];
  const defaults = {} as Record<ModelTier, CatalogueModel>;
  for (const tier of TIERS) {
    const named = env[`BEDROCK_MODEL_${tier.toUpperCase()}`];
    let entry = named ? models.find((m) => m.id === named) : models.find((m) => m.tier === tier);
    if (named && !entry) {
      entry = { id: named, tier, inputUsdPer1M: MODEL_RATES[tier].input, outputUsdPer1M: MODEL_RATES[tier].output, maxOutputTokens: 4_096, thinking: false };
      models.push(entry);
    }
    if (!entry) throw new SettingError(`MODEL_CATALOGUE has no ${tier} model; list at least one model of each tier (small, mid, large).`);
    defaults[tier] = entry;
  }
  const byId = new Map(models.map((m) => [m.id, m]));
  return { models, defaults, find: (id) => byId.get(id) };
}

function parseSetting(raw: string | undefined): readonly CatalogueModel[] {
  if (!raw || raw.trim() === "") return DEFAULT_CATALOGUE;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new SettingError("MODEL_CATALOGUE must be a JSON array of models ({id, tier, inputUsdPer1M, outputUsdPer1M, maxOutputTokens, thinking}).");
  }
  const parsed = z.array(CatalogueEntry).min(1).safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new SettingError(`MODEL_CATALOGUE entry ${issue.path.join(".")}: ${issue.message}.`);
  }
  return parsed.data;
}

/** Cost in USD of one call of `model` (its own rates, spec 02 Credits). */
export const modelCostUsd = (model: Pick<CatalogueModel, "inputUsdPer1M" | "outputUsdPer1M">, inputTokens: number, outputTokens: number): number =>
  (inputTokens * model.inputUsdPer1M + outputTokens * model.outputUsdPer1M) / 1_000_000;

/**
 * Cost in USD of one call of `modelId`: at the catalogue entry's rates, else (a model outside the catalogue, as a
 * test may configure) at `tier`'s spec rates.
 */
export function callCostUsd(modelId: string, tier: ModelTier, inputTokens: number, outputTokens: number, env: NodeJS.ProcessEnv = process.env): number {
  const entry = catalogue(env).find(modelId);
  return entry ? modelCostUsd(entry, inputTokens, outputTokens) : modelCostUsd({ inputUsdPer1M: MODEL_RATES[tier].input, outputUsdPer1M: MODEL_RATES[tier].output }, inputTokens, outputTokens);
}

/**
 * The IAM resources that allow invoking exactly the catalogue's models and the embedding model: a cross-region
 * inference profile id (`us.…`, `eu.…`, `apac.…`, `global.…`) needs the profile in the stack's account and the
 * foundation model it routes to in every region; a plain model id needs the foundation model.
 */
export function bedrockResourceArns(stack: { partition: string; account: string }, env: NodeJS.ProcessEnv = process.env): string[] {
  const arns = new Set<string>();
  for (const id of [...catalogue(env).models.map((m) => m.id), EMBEDDING_MODEL_ID]) {
    const profile = /^(us|eu|apac|us-gov|global|jp|au|ca)\.(.+)$/.exec(id);
    if (profile) {
      arns.add(`arn:${stack.partition}:bedrock:*:${stack.account}:inference-profile/${id}`);
      arns.add(`arn:${stack.partition}:bedrock:*::foundation-model/${profile[2]}`);
    } else {
      arns.add(`arn:${stack.partition}:bedrock:*::foundation-model/${id}`);
    }
  }
  return [...arns];
}

/** Output token cap of a call when the request sets none (the model's own limit applies when lower). */
export const DEFAULT_MAX_TOKENS = 4096;
/** Anthropic's smallest thinking budget, in tokens. */
export const MIN_THINKING_BUDGET = 1024;

/**
 * The output cap of one call of `model`: the request's (default 4,096) within the model's limit; with thinking, above
 * the budget by room for the answer (Anthropic refuses max_tokens not above budget_tokens), still within the limit.
 * @throws AppError VALIDATION_ERROR when the model does not support thinking, or its limit leaves no room for the budget
 */
export function outputTokens(model: CatalogueModel, req: { maxTokens?: number; thinking?: { budgetTokens: number } }): number {
  const asked = Math.min(req.maxTokens ?? DEFAULT_MAX_TOKENS, model.maxOutputTokens);
  if (!req.thinking) return asked;
  if (!model.thinking) throw new AppError("VALIDATION_ERROR", `Model ${model.id} does not support extended thinking`);
  const budget = req.thinking.budgetTokens;
  if (budget < MIN_THINKING_BUDGET || budget >= model.maxOutputTokens) {
    throw new AppError("VALIDATION_ERROR", `A thinking budget of ${budget} tokens does not fit model ${model.id} (${MIN_THINKING_BUDGET} to ${model.maxOutputTokens - 1})`);
  }
  return Math.max(asked, Math.min(model.maxOutputTokens, budget + DEFAULT_MAX_TOKENS));
}
