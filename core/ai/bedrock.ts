/**
 * Bedrock adapters of the AI ports (core/ai/ports.ts), used in AWS (DESIGN.md section 2, AI row).
 *
 * - `BedrockModel` (Model port): Converse with one tool and `toolChoice` forcing it, so the answer is always a
 *   `toolUse` block whose input is validated with the tool's zod schema. Malformed input is repaired once (the
 *   validation errors go back as a `toolResult` with status "error" in a follow-up turn); when the repair is
 *   malformed too, the whole request is retried from scratch (`freshAttempts`). Never returns unvalidated output.
 * - `BedrockEmbedder` (Embedder port): Titan Text Embeddings v2 through InvokeModel, `normalize: true`,
 *   one text per call (the model takes one input), calls run with bounded concurrency.
 *
 * Retries of transient errors (ThrottlingException, ServiceUnavailableException, ModelNotReadyException,
 * InternalServerException, ModelTimeoutException, dropped connections, any 5xx: `isTransient`) use `p-retry`: exponential backoff (factor 2) with jitter (each delay multiplied by a
 * random factor in [1, 2)), capped per delay. The SDK's own retry is switched off on clients we create
 * (`maxAttempts: 1`) so there is exactly one retry layer: attempts are then counted in `CallUsage.attempts`
 * (spec 02 Agent run), delays are bounded by our settings rather than multiplied by two nested layers, and the
 * behaviour is testable with aws-sdk-client-mock, which stubs `client.send` below the SDK's retry middleware.
 *
 * Usage and cost: token counts come from each response's `usage`; cost is `callCostUsd(modelId, tier, input, output)` summed
 * over every call of the request, including repairs and fresh attempts, at the called model's catalogue rates
 * (spec 02 Credits: model rates; core/ai/catalogue.ts).
 */
import {
  BedrockRuntimeClient,
  ConverseCommand,
  InternalServerException,
  InvokeModelCommand,
  ModelNotReadyException,
  ModelTimeoutException,
  ServiceUnavailableException,
  ThrottlingException,
  type ContentBlock,
  type ConverseCommandOutput,
  type Message,
} from "@aws-sdk/client-bedrock-runtime";
import pLimit from "p-limit";
import { isServerError, isThrottlingError, isTransientError } from "@smithy/service-error-classification";
import { describeIssues, retryTransient, type RetrySettings } from "./retry";
import * as z from "zod";
import { AppError } from "../error";
import { type CallUsage, type EmbedOptions, type Embedder, type Model, type ModelTier, type StructuredRequest } from "./ports";
import { callCostUsd, catalogue, DEFAULT_CATALOGUE } from "./catalogue";
import { currentSignal } from "../context";

/**
 * Default model ids per tier: the default model catalogue's (core/ai/catalogue.ts), cross-region inference profiles
 * whose list prices are the spec's rates (small = Claude 3.5 Haiku 0.80/4.00, mid = Claude Sonnet 4 3.00/15.00,
 * large = Claude Opus 4.1 15.00/75.00 USD per 1M tokens).
 */
export const DEFAULT_MODEL_IDS: Record<ModelTier, string> = {
  small: DEFAULT_CATALOGUE.find((m) => m.tier === "small")!.id,
  mid: DEFAULT_CATALOGUE.find((m) => m.tier === "mid")!.id,
  large: DEFAULT_CATALOGUE.find((m) => m.tier === "large")!.id,
};

/** Model ids per tier: the catalogue's tier defaults (MODEL_CATALOGUE, BEDROCK_MODEL_SMALL / _MID / _LARGE). */
export function modelIdsFromEnv(env: NodeJS.ProcessEnv = process.env): Record<ModelTier, string> {
  const { defaults } = catalogue(env);
  return { small: defaults.small.id, mid: defaults.mid.id, large: defaults.large.id };
}

/** Backoff settings for transient errors (defined beside the backoff itself, core/ai/retry.ts). */
export type { RetrySettings } from "./retry";
export const DEFAULT_RETRY: RetrySettings = { retries: 5, minTimeoutMs: 500, maxTimeoutMs: 8_000 };

/**
 * True for the Bedrock errors worth retrying with backoff: throttling, transient unavailability, a model that timed
 * out (408 `ModelTimeoutException`), and what the SDK's own retry strategy (switched off here: `maxAttempts: 1`)
 * would retry: dropped connections and socket timeouts (ECONNRESET, ETIMEDOUT, "socket hang up"), any 5xx, any
 * throttling code (`@smithy/service-error-classification`). Not a refused connection (ECONNREFUSED): nothing listens.
 */
export function isTransient(err: unknown): boolean {
  if (
    err instanceof ThrottlingException ||
    err instanceof ServiceUnavailableException ||
    err instanceof ModelNotReadyException ||
    err instanceof InternalServerException ||
    err instanceof ModelTimeoutException
  ) return true;
  if (!(err instanceof Error)) return false;
  // Nothing listens at the endpoint (a wrong or unreachable address): not a passing state; the callers' fallbacks
  // (text search without embeddings) must take over at once, not after the backoff's half minute.
  // Over HTTP/2 the refusal comes as ERR_HTTP2_STREAM_CANCEL with the ECONNREFUSED as its cause.
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if ((e as { code?: unknown }).code === "ECONNREFUSED") return false;
  }
  const sdkError = err as Parameters<typeof isTransientError>[0];
  return isTransientError(sdkError) || isServerError(sdkError) || isThrottlingError(sdkError);
}

/** Run `fn` with backoff on transient errors (`retryTransient`); still transient at the end, the model is busy (503). */
async function withBackoff<T>(fn: () => Promise<T>, retry: RetrySettings, onAttempt: () => void, signal?: AbortSignal): Promise<T> {
  try {
    return await retryTransient(fn, retry, isTransient, onAttempt, signal);
  } catch (err) {
    if (signal?.aborted) throw err;
    if (isTransient(err)) {
      throw new AppError("SERVICE_UNAVAILABLE", "The AI model is busy; please retry shortly", {
        retry_after_seconds: Math.ceil(retry.maxTimeoutMs / 1000),
      });
    }
    throw err;
  }
}

export interface BedrockModelOptions {
  client?: BedrockRuntimeClient;
  /** Model id per tier (default: `modelIdsFromEnv()`). */
  modelIds?: Partial<Record<ModelTier, string>>;
  retry?: Partial<RetrySettings>;
  /** Whole-request attempts when output stays malformed after its repair turn (default 2). */
  freshAttempts?: number;
}

export { toolInputSchema } from "./tool-schema";
import { toolInputSchema } from "./tool-schema";


/**
 * Structured output from Claude on Bedrock (Model port).
 *
 * `structured(req)`: sends `req.system` and `req.messages` with `req.tool` as the only tool and forces it;
 * returns the tool input parsed by `req.tool.schema` and the summed usage of all calls made.
 * @throws AppError SERVICE_UNAVAILABLE when throttling/unavailability persists after the retries
 * @throws AppError INTERNAL when the output is still malformed after repairs and fresh attempts
 * @throws the SDK error for non-transient failures (AccessDenied, Validation, ResourceNotFound, ...)
 */
export class BedrockModel implements Model {
  private readonly client: BedrockRuntimeClient;
  private readonly modelIds: Record<ModelTier, string>;
  private readonly retry: RetrySettings;
  private readonly freshAttempts: number;

  constructor(opts: BedrockModelOptions = {}) {
    this.client = opts.client ?? new BedrockRuntimeClient({ maxAttempts: 1 });
    this.modelIds = { ...modelIdsFromEnv(), ...opts.modelIds };
    this.retry = { ...DEFAULT_RETRY, ...opts.retry };
    this.freshAttempts = Math.max(1, opts.freshAttempts ?? 2);
  }

  /** The model id used for a tier. */
  modelId(tier: ModelTier): string {
    return this.modelIds[tier];
  }

  async structured<T>(req: StructuredRequest<T>): Promise<{ output: T; usage: CallUsage }> {
    const started = performance.now();
    const modelId = this.modelIds[req.tier];
    let attempts = 0;
    let inputTokens = 0;
    let outputTokens = 0;
    const toolConfig = {
      tools: [
        {
          toolSpec: {
            name: req.tool.name,
            description: req.tool.description,
            inputSchema: { json: toolInputSchema(req.tool.schema) as never },
          },
        },
      ],
      toolChoice: { tool: { name: req.tool.name } },
    };
    const call = async (messages: Message[]): Promise<ConverseCommandOutput> => {
      const res = await withBackoff(
        () =>
          this.client.send(
            new ConverseCommand({
              modelId,
              system: [{ text: req.system }],
              messages,
              toolConfig,
              inferenceConfig: { maxTokens: req.maxTokens ?? 4096, temperature: req.temperature ?? 0 },
            }),
            { abortSignal: req.signal ?? currentSignal() },
          ),
        this.retry,
        () => attempts++,
      );
      inputTokens += res.usage?.inputTokens ?? 0;
      outputTokens += res.usage?.outputTokens ?? 0;
      return res;
    };
    const usage = (): CallUsage => ({
      modelId,
      tier: req.tier,
      inputTokens,
      outputTokens,
      costUsd: callCostUsd(modelId, req.tier, inputTokens, outputTokens),
      latencyMs: Math.round(performance.now() - started),
      attempts,
    });

    const base: Message[] = req.messages.map((m) => ({ role: m.role, content: [{ text: m.text }] }));
    let lastProblem = "";
    for (let fresh = 0; fresh < this.freshAttempts; fresh++) {
      let messages = base;
      // One first answer plus one repair turn per fresh attempt.
      for (let turn = 0; turn < 2; turn++) {
        const res = await call(messages);
        const content: ContentBlock[] = res.output?.message?.content ?? [];
        const toolUse = content.find((c) => c.toolUse?.name === req.tool.name)?.toolUse;
        if (!toolUse) {
          lastProblem = `no ${req.tool.name} tool call in the answer (stopReason ${res.stopReason})`;
          break; // nothing to repair against: start afresh
        }
        const parsed = req.tool.schema.safeParse(toolUse.input);
        if (parsed.success) return { output: parsed.data, usage: usage() };
        lastProblem = describeIssues(parsed.error);
        if (turn === 1) break;
        const truncated = res.stopReason === "max_tokens" ? "\nYour answer was cut off at the token limit; answer more briefly." : "";
        messages = [
          ...base,
          { role: "assistant", content },
          {
            role: "user",
            content: [
              {
                toolResult: {
                  toolUseId: toolUse.toolUseId,
                  status: "error",
                  content: [
                    {
                      text: `The ${req.tool.name} input did not match its schema:\n${lastProblem}${truncated}\nCall ${req.tool.name} again with corrected input.`,
                    },
                  ],
                },
              },
            ],
          },
        ];
      }
    }
    throw new AppError("INTERNAL", `The AI model returned malformed output after ${attempts} calls`, {
      model_error: lastProblem.slice(0, 500),
    });
  }
}

/** Titan Text Embeddings v2 model id. */
export const TITAN_EMBED_V2 = "amazon.titan-embed-text-v2:0";
/** Titan v2 accepts up to 8,192 tokens (about 50,000 characters); we embed at most this many characters. */
export const TITAN_MAX_CHARS = 30_000;

export interface BedrockEmbedderOptions {
  client?: BedrockRuntimeClient;
  /** Output dimension: 256, 512 or 1024 (default 1024). */
  dimensions?: 256 | 512 | 1024;
  /** Concurrent InvokeModel calls (default 8). */
  concurrency?: number;
  retry?: Partial<RetrySettings>;
  modelId?: string;
}

/**
 * Titan Text Embeddings v2 (Embedder port): unit-length vectors (`normalize: true`), one InvokeModel call per text,
 * at most `concurrency` in flight, transient errors retried with backoff. Empty texts are sent as a single space.
 * `tokensUsed` accumulates `inputTextTokenCount` over the embedder's life.
 * @throws AppError SERVICE_UNAVAILABLE when throttling persists; the SDK error for other failures
 * @throws Error when a response has the wrong dimension
 */
export class BedrockEmbedder implements Embedder {
  readonly id: string;
  readonly dimensions: number;
  tokensUsed = 0;
  private readonly client: BedrockRuntimeClient;
  private readonly concurrency: number;
  private readonly retry: RetrySettings;
  private readonly modelId: string;

  constructor(opts: BedrockEmbedderOptions = {}) {
    this.client = opts.client ?? new BedrockRuntimeClient({ maxAttempts: 1 });
    this.dimensions = opts.dimensions ?? 1024;
    this.modelId = opts.modelId ?? TITAN_EMBED_V2;
    this.id = `bedrock:${this.modelId}:${this.dimensions}`;
    this.concurrency = Math.max(1, opts.concurrency ?? 8);
    this.retry = { ...DEFAULT_RETRY, ...opts.retry };
  }

  async embed(texts: string[], opts: EmbedOptions = {}): Promise<Float32Array[]> {
    const limit = pLimit(this.concurrency);
    return Promise.all(texts.map((t) => limit(() => this.embedOne(t, opts.signal))));
  }

  private async embedOne(text: string, signal: AbortSignal | undefined): Promise<Float32Array> {
    const inputText = text.trim() === "" ? " " : text.slice(0, TITAN_MAX_CHARS);
    const res = await withBackoff(
      () =>
        this.client.send(
          new InvokeModelCommand({
            modelId: this.modelId,
            contentType: "application/json",
            accept: "application/json",
            body: JSON.stringify({ inputText, dimensions: this.dimensions, normalize: true }),
          }),
          { abortSignal: signal },
        ),
      this.retry,
      () => {},
      signal,
    );
    const body = JSON.parse(new TextDecoder().decode(res.body)) as { embedding: number[]; inputTextTokenCount?: number };
    if (!Array.isArray(body.embedding) || body.embedding.length !== this.dimensions) {
      throw new Error(`Titan returned ${body.embedding?.length} dimensions, expected ${this.dimensions}`);
    }
    this.tokensUsed += body.inputTextTokenCount ?? 0;
    return Float32Array.from(body.embedding);
  }
}
