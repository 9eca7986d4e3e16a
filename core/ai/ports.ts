import type { z } from "zod";

/** Model size tiers and their prices per 1M tokens, input / output, in USD (spec 02 Credits: model rates). */
export const MODEL_RATES = {
  small: { input: 0.8, output: 4.0 },
  mid: { input: 3.0, output: 15.0 },
  large: { input: 15.0, output: 75.0 },
} as const;
export type ModelTier = keyof typeof MODEL_RATES;

/** Cost in USD of one call at a tier's rates. */
export const costUsd = (tier: ModelTier, inputTokens: number, outputTokens: number): number =>
  (inputTokens * MODEL_RATES[tier].input + outputTokens * MODEL_RATES[tier].output) / 1_000_000;

/** One structured-output request: the model must answer by calling `tool` with input matching `schema`. */
export interface StructuredRequest<T> {
  tier: ModelTier;
  system: string;
  /** The user turn(s); plain text. */
  messages: { role: "user" | "assistant"; text: string }[];
  tool: { name: string; description: string; schema: z.ZodType<T> };
  maxTokens?: number;
  temperature?: number;
}

/** What one model call cost and how long it took (recorded as an agent run, spec 02 Agent run). */
export interface CallUsage {
  modelId: string;
  tier: ModelTier;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  latencyMs: number;
  /** Attempts made, including repairs of malformed output and throttling retries. */
  attempts: number;
}

/**
 * The Model port: Bedrock Converse with tool use in AWS (core/ai/bedrock.ts). Output is validated against the
 * tool's zod schema; malformed output is repaired or retried by the adapter, never passed on.
 */
export interface Model {
  structured<T>(req: StructuredRequest<T>): Promise<{ output: T; usage: CallUsage }>;
}

/** How an embedding request is served. */
export interface EmbedOptions {
  /**
   * Work nobody is waiting on (ingestion's Index step). Where the engine queues work (the local embedder's threads),
   * it yields to requests a user waits on, such as a synthesis started while a folder is still being indexed.
   * Bedrock serves every request at once and ignores it.
   */
  background?: boolean;
}

/** The Embedder port: Titan text embeddings in AWS, the Universal Sentence Encoder locally. Unit-length vectors. */
export interface Embedder {
  /** Identifies model and dimension, so stored vectors from another embedder are never compared. */
  readonly id: string;
  readonly dimensions: number;
  embed(texts: string[], opts?: EmbedOptions): Promise<Float32Array[]>;
}
