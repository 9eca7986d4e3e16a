/** The AI engines AI_ENGINE chooses between. */
export type AiEngine = "bedrock" | "openai-compatible" | "local";

/**
 * Which AI engines run: "bedrock" (Converse + Titan embeddings) in deployed stages, "openai-compatible" (a model
 * server of your own that speaks OpenAI's Chat Completions: Ollama, vLLM, llama.cpp server, LM Studio; core/ai/openai.ts),
 * "local" (the deterministic engines: Universal Sentence Encoder embeddings, clustering, templates) on the embedded
 * runtime. AI_ENGINE decides; anything else is "local"; the stacks set it to "bedrock". Kept apart from
 * core/ai/select.ts (which loads the engines) so code that only needs the setting, such as the billing estimate,
 * does not bundle an engine's client.
 */
export const aiEngine = (): AiEngine => {
  const value = process.env.AI_ENGINE;
  return value === "bedrock" || value === "openai-compatible" ? value : "local";
};
