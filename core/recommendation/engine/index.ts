import type { CallUsage, Model, ModelTier } from "../../ai/ports";
import { generateRecommendationsWithModel } from "./bedrock";
import { generateRecommendations } from "./local";
import type { GenerateRecommendationsInput, GenerateRecommendationsResult } from "./types";

export * from "./types";
export { generateRecommendations } from "./local";
export { generateRecommendationsWithModel, recommendationsToolSchema } from "./bedrock";

/**
 * One interface over both recommendation engines (DESIGN.md section 2, AI row): the deterministic local engine on the
 * embedded runtime, the Model port (Bedrock) in AWS. `usage` is null for the local engine (no model call to meter).
 */
export interface RecommendationEngine {
  readonly kind: "local" | "model";
  generate(input: GenerateRecommendationsInput): Promise<{ result: GenerateRecommendationsResult; usage: CallUsage | null }>;
}

/** The local engine (templates + heuristics; see ./local.ts). */
export const localRecommendationEngine: RecommendationEngine = {
  kind: "local",
  generate: async (input) => ({ result: generateRecommendations(input), usage: null }),
};

/** The model-backed engine (see ./bedrock.ts). */
export const modelRecommendationEngine = (model: Model, opts: { tier?: ModelTier } = {}): RecommendationEngine => ({
  kind: "model",
  generate: (input) => generateRecommendationsWithModel(model, input, opts),
});

/** Picks the engine: the model when one is configured (`core/ai/select.ts` `model()` returns null locally). */
export const recommendationEngine = (model: Model | null): RecommendationEngine =>
  model ? modelRecommendationEngine(model) : localRecommendationEngine;
