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
  /** Aborts the call (the client left, or the query's time budget is spent). */
  signal?: AbortSignal;
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
  /**
   * The caller stops waiting when this fires (a search's deadline for its query's embedding). A remote embedder
   * (Bedrock, an OpenAI-compatible server) aborts its request and its retries and rejects with an AbortError; an
   * embedder with `noDeadline` (the local one) ignores it.
   */
  signal?: AbortSignal;
}

/** The Embedder port: Titan text embeddings in AWS, the Universal Sentence Encoder locally. Unit-length vectors. */
export interface Embedder {
  /** Identifies model and dimension, so stored vectors from another embedder are never compared. */
  readonly id: string;
  readonly dimensions: number;
  /**
   * True for an engine with no network, throttling or backoff to wait out (the local embedder): its one wait, its
   * model's first load, is worth sitting out, so callers' deadlines (`EmbedOptions.signal`) do not apply to it.
   */
  readonly noDeadline?: boolean;
  embed(texts: string[], opts?: EmbedOptions): Promise<Float32Array[]>;
}

// ---------------------------------------------------------------------------------------------------------------
// Streaming with tools (DESIGN.md 6.1): the port the copilot's agent loop (core/agent) drives, for every engine.
// ---------------------------------------------------------------------------------------------------------------

/**
 * A model's reasoning as content (DESIGN.md 6.1): the text with the provider's `signature`, or the redacted bytes
 * (base64) the provider encrypted. It goes back to the model unchanged with the turn it belongs to: Anthropic requires
 * the last assistant turn that calls a tool to begin with its signed (or redacted) thinking when thinking is on.
 */
export type ThinkingContent =
  | { type: "thinking"; text: string; signature?: string }
  | { type: "redacted_thinking"; data: string };

/** One piece of a conversation turn sent to a streaming model. */
export type TurnContent =
  | { type: "text"; text: string }
  | ThinkingContent
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
  | { type: "tool_result"; id: string; status: "success" | "error"; content: unknown };

/** One turn of the conversation as the model sees it (tool results travel in user turns, as in Converse). */
export interface ConversationTurn {
  role: "user" | "assistant";
  content: TurnContent[];
}

/** A tool offered to the model: its input as JSON schema (derived from the tool's zod schema). */
export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** Why the model stopped (Converse `stopReason`, snake_case as Bedrock sends it). */
export type StopReason =
  | "end_turn"
  | "tool_use"
  | "max_tokens"
  | "stop_sequence"
  | "guardrail_intervened"
  | "content_filtered";

/** One streaming model call: `messages` end with a user turn (a prompt or tool results). */
export interface StreamRequest {
  tier: ModelTier;
  /** Explicit model id (the stream body's `model` override); else the tier's default. */
  modelId?: string;
  system: string;
  messages: ConversationTurn[];
  tools: ToolSpec[];
  /**
   * Output token cap for this call (default 4,096, never above the model's `maxOutputTokens`). With `thinking` it
   * must be above `thinking.budgetTokens` (Anthropic refuses a request whose max_tokens is not).
   */
  maxTokens?: number;
  temperature?: number;
  /** Extended thinking with this token budget (reasoning_mode deep / effort max), where the model supports it. */
  thinking?: { budgetTokens: number };
  /** Aborts the call (client disconnected, time budget spent). */
  signal?: AbortSignal;
}

/**
 * What a streaming call yields, in order: any number of `text` and `thinking` deltas, `thinking_block` (a reasoning
 * block complete with its signature, or redacted, at the block's end: the loop keeps it in the assistant turn),
 * `tool_call` (each complete: the adapter joins tool-input fragments and parses them at the block's end) and `retry`
 * (a transient failure before any output, retried with backoff), then exactly one `stop` carrying the stop reason
 * and the call's usage. Blocks arrive in the order the model wrote them. A call that ends without its `stop` (the
 * caller's abort, a failure after output) yields `cut` with its estimated usage just before it throws: the provider
 * bills the request it accepted, and the run must be charged for it (DESIGN.md 6.3, the actual cost).
 */
export type ModelStreamEvent =
  | { type: "text"; delta: string }
  | { type: "thinking"; delta: string }
  | { type: "thinking_block"; block: ThinkingContent }
  | { type: "tool_call"; id: string; name: string; input: Record<string, unknown> }
  | { type: "retry"; attempt: number; delayMs: number; reason: string }
  | { type: "stop"; reason: StopReason; usage: CallUsage }
  | { type: "cut"; usage: CallUsage };

/** Characters per token of the estimate a cut call is billed at (Anthropic's rule of thumb for English text). */
export const CHARS_PER_TOKEN = 4;

/**
 * Tokens of `chars` characters, estimated at `CHARS_PER_TOKEN` (rounded up): the usage of a call the provider never
 * reported (it reports usage at the stream's end only).
 */
export const estimatedTokens = (chars: number): number => Math.ceil(chars / CHARS_PER_TOKEN);

/**
 * The streaming Model port (DESIGN.md 6.1): Bedrock ConverseStream in AWS (core/ai/bedrock-stream.ts), the
 * deterministic local agent engine on the embedded runtime (the agent layer hands it its tools).
 * @throws AppError SERVICE_UNAVAILABLE when throttling persists after the retries; an AbortError when `signal` fires.
 */
export interface StreamingModel {
  /** "bedrock", "openai-compatible" or "local": recorded on agent runs. */
  readonly engine: string;
  stream(req: StreamRequest): AsyncIterable<ModelStreamEvent>;
}
