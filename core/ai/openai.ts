/**
 * OpenAI-compatible adapters of the AI ports (core/ai/ports.ts), for teams that run their own model server
 * (Ollama, vLLM, llama.cpp server, LM Studio, or any API that speaks OpenAI's Chat Completions): AI_ENGINE=
 * openai-compatible with OPENAI_BASE_URL and OPENAI_MODEL (core/config.ts). Talks through the official `openai` SDK.
 *
 * - `OpenAICompatibleModel` (Model port): Chat Completions with the request's tool as the only tool and
 *   `tool_choice` forcing a call, so the answer is a `tool_calls` entry whose `arguments` (a JSON string) are parsed
 *   and validated with the tool's zod schema. The repair policy is BedrockModel's: arguments that are not JSON or do
 *   not match the schema are repaired once (the problems go back as a `tool` message answering the call, in a
 *   follow-up turn); when the repair is malformed too, or the answer has no tool call at all, the whole request is
 *   tried afresh (`freshAttempts`). Never returns unvalidated output.
 *   `tool_choice` is `"required"`: with one tool it forces that tool, and it is the form the servers enforce
 *   (llama.cpp server treats the named object form as "auto", llama.cpp issue #26535; LM Studio documents only the
 *   string forms). A server that rejects it with a 400 naming `tool_choice` gets the named form
 *   `{type: "function", function: {name}}` instead (older vLLM), remembered for the model's life. Ollama's
 *   compatibility notes do not list `tool_choice` at all: its tool models call the one tool they are offered, and an
 *   answer in prose instead is "no tool call", which the fresh attempt covers.
 * - `OpenAICompatibleEmbedder` (Embedder port): the server's `/embeddings` with OPENAI_EMBEDDING_MODEL, in batches,
 *   vectors scaled to unit length here (servers differ on whether they normalize). The dimension is learned once by
 *   embedding a probe text (`OpenAICompatibleEmbedder.create`), because callers need it before their first embed.
 *   Without OPENAI_EMBEDDING_MODEL, core/ai/select.ts uses the local embedder (Universal Sentence Encoder) instead.
 *
 * Retries: the SDK's own retry is off (`maxRetries: 0`) so there is one retry layer, as in core/ai/bedrock.ts:
 * timeouts, dropped connections and HTTP 408 / 409 / 429 / 5xx are retried with p-retry's exponential backoff
 * (factor 2, jitter in [1, 2), capped per delay), and attempts are counted in `CallUsage.attempts`. A server that
 * cannot be reached at all (connection refused, unknown host) is not retried: that is a server that is not running,
 * and the error says which address was tried.
 *
 * Usage and cost: tokens from each response's `usage` (absent on some servers: then 0); cost at the configured
 * OPENAI_INPUT_USD_PER_1M_TOKENS / OPENAI_OUTPUT_USD_PER_1M_TOKENS (default 0, your own hardware), the same rate for
 * every tier, summed over every call of a request including repairs and fresh attempts.
 */
import OpenAI, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
  type ClientOptions,
} from "openai";
import type {
  ChatCompletion,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionToolChoiceOption,
} from "openai/resources/chat/completions";
import type { EmbeddingCreateParams } from "openai/resources/embeddings";
import pLimit from "p-limit";
import { describeIssues, retryTransient } from "./retry";
import type * as z from "zod";
import { Config } from "../config";
import { AppError } from "../error";
import { currentSignal } from "../context";
import type { RetrySettings } from "./retry";
import type { CallUsage, EmbedOptions, Embedder, Model, ModelTier, StructuredRequest } from "./ports";
import { toolInputSchema } from "./tool-schema";

/** The engine's name, as AI_ENGINE spells it and agent runs record it. */
export const OPENAI_COMPATIBLE = "openai-compatible";

/** Same backoff as Bedrock's (core/ai/bedrock.ts DEFAULT_RETRY): 5 retries, 500 ms doubling, each delay at most 8 s. */
export const OPENAI_DEFAULT_RETRY: RetrySettings = { retries: 5, minTimeoutMs: 500, maxTimeoutMs: 8_000 };

/** Output token cap when a request sets none (as Bedrock's adapters). */
export const DEFAULT_MAX_TOKENS = 4096;

/** USD per 1M tokens, input / output (the units of `MODEL_RATES`). */
export interface TokenRates {
  input: number;
  output: number;
}

/** How to reach the server; anything left out comes from the settings (core/config.ts). */
export interface OpenAICompatibleConnection {
  /** The SDK client; when given, `baseURL`, `apiKey` and `fetch` are not used. */
  client?: OpenAI;
  /** Default `Config.openaiBaseUrl()` (OPENAI_BASE_URL). */
  baseURL?: string;
  /** Default `Config.openaiApiKey()` (OPENAI_API_KEY); null or unset: no Authorization header. */
  apiKey?: string | null;
  /** A `fetch` for the SDK to use (tests serve recorded responses through it). */
  fetch?: ClientOptions["fetch"];
}

/**
 * The SDK client for a model server: no SDK retries (ours count attempts), no OpenAI organization or project
 * headers (a local server has no use for them, and they must not leak from the environment), and without an API key
 * no Authorization header at all: the SDK refuses to start without a key, so it gets a placeholder whose header is
 * then removed (a `null` default header omits it).
 */
export function openAICompatibleClient(conn: Omit<OpenAICompatibleConnection, "client"> = {}): OpenAI {
  const apiKey = conn.apiKey === undefined ? Config.openaiApiKey() : conn.apiKey;
  return new OpenAI({
    baseURL: conn.baseURL ?? Config.openaiBaseUrl(),
    apiKey: apiKey || "no-key",
    organization: null,
    project: null,
    maxRetries: 0,
    ...(apiKey ? {} : { defaultHeaders: { Authorization: null } }),
    ...(conn.fetch ? { fetch: conn.fetch } : {}),
  });
}

/** Network error codes that mean nobody answers at that address: not worth a retry. */
const UNREACHABLE_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);

/** The system error code under an SDK connection error (fetch wraps it in `cause`, sometimes twice), if any. */
function networkCode(err: unknown): string | undefined {
  let current: unknown = err instanceof Error ? err.cause : undefined;
  for (let depth = 0; depth < 5 && current; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** True when the server could not be reached at all (refused, unknown host): a server that is not running. */
export function isUnreachable(err: unknown): boolean {
  return err instanceof APIConnectionError && !(err instanceof APIConnectionTimeoutError) && UNREACHABLE_CODES.has(networkCode(err) ?? "");
}

/** True for the failures worth retrying with backoff: timeouts, dropped connections, 408, 409, 429 and 5xx. */
export function isTransient(err: unknown): boolean {
  if (err instanceof APIUserAbortError) return false;
  if (err instanceof APIConnectionError) return !isUnreachable(err);
  if (err instanceof APIError && typeof err.status === "number") {
    return err.status === 408 || err.status === 409 || err.status === 429 || err.status >= 500;
  }
  return false;
}

/** The error for a transient failure that outlasted the retries; same wording as the Bedrock adapters. */
export function busyError(retry: RetrySettings): AppError {
  return new AppError("SERVICE_UNAVAILABLE", "The AI model is busy; please retry shortly", {
    retry_after_seconds: Math.ceil(retry.maxTimeoutMs / 1000),
  });
}

/** The error for a server nobody answers at: names the address, so a stopped Ollama is obvious. */
export function unreachableError(err: unknown, baseURL: string): AppError {
  return new AppError("SERVICE_UNAVAILABLE", `The model server at ${baseURL} cannot be reached (${networkCode(err)}); is it running?`, {
    retry_after_seconds: 5,
  });
}

/** Run `fn` with backoff on transient errors (`retryTransient`); then busy (503) or unreachable (503 naming the address). */
async function withBackoff<T>(fn: () => Promise<T>, retry: RetrySettings, baseURL: string, onAttempt: () => void, signal?: AbortSignal): Promise<T> {
  try {
    return await retryTransient(fn, retry, isTransient, onAttempt, signal);
  } catch (err) {
    if (signal?.aborted) throw err;
    if (isTransient(err)) throw busyError(retry);
    if (isUnreachable(err)) throw unreachableError(err, baseURL);
    throw err;
  }
}

/** Cost in USD of `input` / `output` tokens at `rates` (USD per 1M tokens). */
export const costAt = (rates: TokenRates, input: number, output: number): number => (input * rates.input + output * rates.output) / 1_000_000;

/**
 * The usage of one model call on a model server: tokens, their cost at `rates` (USD per 1M tokens), the time since
 * `started` (performance.now() ms) and the attempts made.
 */
export const callUsage = (
  call: { modelId: string; tier: CallUsage["tier"]; rates: TokenRates; started: number; attempts: number },
  inputTokens: number,
  outputTokens: number,
): CallUsage => ({
  modelId: call.modelId,
  tier: call.tier,
  inputTokens,
  outputTokens,
  costUsd: costAt(call.rates, inputTokens, outputTokens),
  latencyMs: Math.round(performance.now() - call.started),
  attempts: call.attempts,
});


/** A tool call's `arguments` parsed: a JSON object, or the problem to report. Empty arguments are `{}`. */
export function parseArguments(raw: unknown): { ok: true; value: Record<string, unknown> } | { ok: false; problem: string } {
  // The API sends a JSON string; a few servers send the object itself.
  if (raw !== null && typeof raw === "object" && !Array.isArray(raw)) return { ok: true, value: raw as Record<string, unknown> };
  const text = typeof raw === "string" ? raw : "";
  if (text.trim() === "") return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, problem: `the arguments are not valid JSON (${(err as Error).message})` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { ok: false, problem: "the arguments are not a JSON object" };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

/** The tool-choice forms a server may accept, in the order we try them (see the module comment). */
type ToolChoiceForm = "required" | "named";

/** True when the server refused the request because of its `tool_choice` (a 400 or 422 that names it). */
function toolChoiceRejected(err: unknown): boolean {
  return err instanceof APIError && (err.status === 400 || err.status === 422) && /tool_choice/i.test(err.message);
}

export interface OpenAICompatibleModelOptions extends OpenAICompatibleConnection {
  /** The chat model for every tier (default `Config.openaiModel()`, OPENAI_MODEL). */
  model?: string;
  /** Prices, USD per 1M tokens (default `Config.openaiUsdPerMillionTokens()`: 0 unless set). */
  rates?: TokenRates;
  retry?: Partial<RetrySettings>;
  /** Whole-request attempts when output stays malformed after its repair turn (default 2). */
  freshAttempts?: number;
}

/**
 * Structured output from a model behind an OpenAI-compatible API (Model port).
 *
 * `structured(req)`: sends `req.system` as the system message and `req.messages` as user / assistant messages, with
 * `req.tool` as the only function tool and a forced tool choice; returns the arguments parsed by `req.tool.schema`
 * and the summed usage of all calls made. `maxTokens` defaults to 4,096 (sent as `max_tokens`, which every
 * compatible server reads) and `temperature` to 0.
 * @throws AppError SERVICE_UNAVAILABLE when a transient failure persists after the retries, or the server cannot be
 *   reached at all
 * @throws AppError INTERNAL when the output is still malformed after repairs and fresh attempts
 * @throws the SDK's APIError for other failures (400 such as "model does not support tools", 401, 404 unknown model)
 */
export class OpenAICompatibleModel implements Model {
  private readonly client: OpenAI;
  private readonly model: string;
  private readonly rates: TokenRates;
  private readonly retry: RetrySettings;
  private readonly freshAttempts: number;
  private toolChoiceForm: ToolChoiceForm = "required";

  constructor(opts: OpenAICompatibleModelOptions = {}) {
    // The address first: with nothing set, the error names OPENAI_BASE_URL, as checkAiSettings does.
    this.client = opts.client ?? openAICompatibleClient(opts);
    this.model = opts.model ?? Config.openaiModel();
    this.rates = opts.rates ?? Config.openaiUsdPerMillionTokens();
    this.retry = { ...OPENAI_DEFAULT_RETRY, ...opts.retry };
    this.freshAttempts = Math.max(1, opts.freshAttempts ?? 2);
  }

  /** The model used for a tier: the one configured model, whatever the tier. */
  modelId(_tier?: ModelTier): string {
    return this.model;
  }

  async structured<T>(req: StructuredRequest<T>): Promise<{ output: T; usage: CallUsage }> {
    const started = performance.now();
    const name = req.tool.name;
    let attempts = 0;
    let inputTokens = 0;
    let outputTokens = 0;
    const tools: ChatCompletionCreateParamsNonStreaming["tools"] = [
      { type: "function", function: { name, description: req.tool.description, parameters: toolInputSchema(req.tool.schema) } },
    ];
    const toolChoice = (): ChatCompletionToolChoiceOption =>
      this.toolChoiceForm === "required" ? "required" : { type: "function", function: { name } };
    const send = (messages: ChatCompletionMessageParam[]) =>
      withBackoff(
        () => {
          const body: ChatCompletionCreateParamsNonStreaming = {
            model: this.model,
            messages,
            tools,
            tool_choice: toolChoice(),
            max_tokens: req.maxTokens ?? DEFAULT_MAX_TOKENS,
            temperature: req.temperature ?? 0,
          };
          const signal = req.signal ?? currentSignal();
          return this.client.chat.completions.create(body, signal ? { signal } : undefined);
        },
        this.retry,
        this.client.baseURL,
        () => attempts++,
      );
    const call = async (messages: ChatCompletionMessageParam[]): Promise<ChatCompletion> => {
      let res: ChatCompletion;
      try {
        res = await send(messages);
      } catch (err) {
        if (!toolChoiceRejected(err)) throw err;
        // The server does not take this form of tool_choice: switch to the other one, once, for good.
        this.toolChoiceForm = this.toolChoiceForm === "required" ? "named" : "required";
        res = await send(messages);
      }
      inputTokens += res.usage?.prompt_tokens ?? 0;
      outputTokens += res.usage?.completion_tokens ?? 0;
      return res;
    };
    const usage = (): CallUsage => callUsage({ modelId: this.model, tier: req.tier, rates: this.rates, started, attempts }, inputTokens, outputTokens);

    const base: ChatCompletionMessageParam[] = [
      { role: "system", content: req.system },
      ...req.messages.map((m): ChatCompletionMessageParam => ({ role: m.role, content: m.text })),
    ];
    let lastProblem = "";
    for (let fresh = 0; fresh < this.freshAttempts; fresh++) {
      let messages = base;
      // One first answer plus one repair turn per fresh attempt.
      for (let turn = 0; turn < 2; turn++) {
        const res = await call(messages);
        const choice = res.choices?.[0];
        const toolCall = (choice?.message?.tool_calls ?? []).find(
          (c): c is ChatCompletionMessageFunctionToolCall => "function" in c && c.function?.name === name,
        );
        if (!toolCall) {
          lastProblem = `no ${name} tool call in the answer (finish_reason ${choice?.finish_reason ?? "(none)"})`;
          break; // nothing to repair against: start afresh
        }
        const args = parseArguments(toolCall.function.arguments);
        if (args.ok) {
          const parsed = req.tool.schema.safeParse(args.value);
          if (parsed.success) return { output: parsed.data, usage: usage() };
          lastProblem = describeIssues(parsed.error);
        } else {
          lastProblem = args.problem;
        }
        if (turn === 1) break;
        const truncated = choice?.finish_reason === "length" ? "\nYour answer was cut off at the token limit; answer more briefly." : "";
        const id = toolCall.id || `call_${name}`;
        messages = [
          ...base,
          {
            role: "assistant",
            content: choice?.message?.content ?? null,
            tool_calls: [{ id, type: "function", function: { name, arguments: String(toolCall.function.arguments ?? "") } }],
          },
          {
            role: "tool",
            tool_call_id: id,
            content: `The ${name} input did not match its schema:\n${lastProblem}${truncated}\nCall ${name} again with corrected input.`,
          },
        ];
      }
    }
    throw new AppError("INTERNAL", `The AI model returned malformed output after ${attempts} calls`, {
      model_error: lastProblem.slice(0, 500),
    });
  }
}

/** Characters of one text sent to the embedding model at most (about 2,000 tokens: local embedding models are short). */
export const EMBED_MAX_CHARS = 8_000;
/** The text embedded once to learn the model's dimension. */
const PROBE_TEXT = "dimension probe";

export interface OpenAICompatibleEmbedderOptions extends OpenAICompatibleConnection {
  /** Embedding model (default `Config.openaiEmbeddingModel()`, OPENAI_EMBEDDING_MODEL). */
  model?: string;
  /** Texts per request (default 32). */
  batchSize?: number;
  /** Requests in flight at once (default 2: a local server runs them one after another anyway). */
  concurrency?: number;
  retry?: Partial<RetrySettings>;
}

/**
 * Embeddings from the model server (Embedder port): `POST /embeddings` with `encoding_format: "float"` (the SDK
 * would ask for base64, which not every compatible server implements), `batchSize` texts per request, at most
 * `concurrency` requests in flight, transient errors retried with backoff. Vectors are returned in input order
 * (by each item's `index`) and scaled to unit length. Empty texts are sent as a single space, long ones cut at
 * `EMBED_MAX_CHARS`. `id` is `openai-compatible:<model>:<dimensions>`, so vectors of another model are never compared.
 * Build it with `OpenAICompatibleEmbedder.create`, which learns the dimension from a probe.
 * @throws AppError SERVICE_UNAVAILABLE as for the Model; the SDK's APIError for other failures
 * @throws Error when the server answers with the wrong number of vectors or a vector of another dimension
 */
export class OpenAICompatibleEmbedder implements Embedder {
  readonly id: string;
  /** Tokens the server reported over the embedder's life. */
  tokensUsed = 0;

  private constructor(
    private readonly client: OpenAI,
    readonly model: string,
    readonly dimensions: number,
    private readonly batchSize: number,
    private readonly concurrency: number,
    private readonly retry: RetrySettings,
  ) {
    this.id = `${OPENAI_COMPATIBLE}:${model}:${dimensions}`;
  }

  /**
   * Connects and embeds a probe text to learn the dimension.
   * @throws Error naming OPENAI_EMBEDDING_MODEL when no model is given or configured
   */
  static async create(opts: OpenAICompatibleEmbedderOptions = {}): Promise<OpenAICompatibleEmbedder> {
    const model = opts.model ?? Config.openaiEmbeddingModel();
    if (!model) throw new Error("The OpenAI-compatible embedder needs OPENAI_EMBEDDING_MODEL, the name of an embedding model the server runs.");
    const client = opts.client ?? openAICompatibleClient(opts);
    const retry = { ...OPENAI_DEFAULT_RETRY, ...opts.retry };
    const probe = await OpenAICompatibleEmbedder.request(client, model, [PROBE_TEXT], retry);
    const dimensions = probe.vectors[0].length;
    if (dimensions === 0) throw new Error(`The embedding model ${model} returned an empty vector`);
    const embedder = new OpenAICompatibleEmbedder(client, model, dimensions, Math.max(1, opts.batchSize ?? 32), Math.max(1, opts.concurrency ?? 2), retry);
    embedder.tokensUsed += probe.tokens;
    return embedder;
  }

  async embed(texts: string[], opts: EmbedOptions = {}): Promise<Float32Array[]> {
    const limit = pLimit(this.concurrency);
    const batches: string[][] = [];
    for (let i = 0; i < texts.length; i += this.batchSize) batches.push(texts.slice(i, i + this.batchSize));
    const results = await Promise.all(
      batches.map((batch) =>
        limit(async () => {
          const { vectors, tokens } = await OpenAICompatibleEmbedder.request(this.client, this.model, batch, this.retry, opts.signal);
          this.tokensUsed += tokens;
          for (const v of vectors) {
            if (v.length !== this.dimensions) throw new Error(`The embedding model ${this.model} returned ${v.length} dimensions, expected ${this.dimensions}`);
          }
          return vectors;
        }),
      ),
    );
    return results.flat();
  }

  private static async request(client: OpenAI, model: string, texts: string[], retry: RetrySettings, signal?: AbortSignal) {
    const body: EmbeddingCreateParams = {
      model,
      input: texts.map((t) => (t.trim() === "" ? " " : t.slice(0, EMBED_MAX_CHARS))),
      encoding_format: "float",
    };
    const res = await withBackoff(() => client.embeddings.create(body, signal ? { signal } : undefined), retry, client.baseURL, () => {}, signal);
    const data = [...(res.data ?? [])].sort((a, b) => a.index - b.index);
    if (data.length !== texts.length) throw new Error(`The embedding model ${model} returned ${data.length} vectors for ${texts.length} texts`);
    return { vectors: data.map((d) => unit(d.embedding)), tokens: res.usage?.prompt_tokens ?? 0 };
  }
}

/** The vector scaled to unit length (a zero vector stays zero). */
function unit(values: number[]): Float32Array {
  const v = Float32Array.from(values);
  let norm = 0;
  for (const x of v) norm += x * x;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i] /= norm;
  return v;
}
