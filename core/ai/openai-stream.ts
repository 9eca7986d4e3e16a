/**
 * OpenAI-compatible adapter of the streaming Model port (core/ai/ports.ts `StreamingModel`, DESIGN.md 6.1): Chat
 * Completions with `stream: true` through the official `openai` SDK, driven by the copilot's agent loop (core/agent)
 * when AI_ENGINE=openai-compatible. The same loop, tools and gates as on Bedrock; only the wire differs.
 *
 * What the stream looks like (server-sent `chat.completion.chunk` objects, then `data: [DONE]`) and what we make of it:
 * - `choices[0].delta.content` → `text`; `delta.reasoning_content` (vLLM, llama.cpp, LM Studio) or `delta.reasoning`
 *   (Ollama, newer vLLM) → `thinking`. Neither is in OpenAI's own API; servers that think out loud send one of them.
 *   The whole reasoning of a call becomes one `thinking_block` (no signature: these servers sign nothing) before the
 *   tool calls, so the loop keeps it in the assistant turn and the message's `thinking_blocks`. It is not sent back:
 *   Chat Completions has no field for it, and some servers refuse `reasoning_content` in a request.
 * - A tool call arrives as `delta.tool_calls[{index, id, function: {name, arguments}}]`: the first piece carries the
 *   id and name, later pieces only `index` and an `arguments` fragment that splits the JSON anywhere. Fragments are
 *   joined per index and parsed once the stream has ended with a `finish_reason` (the API has no per-call "stop"),
 *   so the loop only ever sees complete tool calls, in index order, just before the `stop` event.
 * - `finish_reason` becomes the port's stop reason: `stop` → `end_turn` (or `tool_use` when tool calls were sent:
 *   Ollama says `stop` after a tool call, and the loop must still run the tools), `tool_calls` / `function_call` →
 *   `tool_use`, `length` → `max_tokens`, `content_filter` → `content_filtered`; anything else is an INTERNAL error.
 *   With `length`, a tool call whose arguments do not parse (the cap cut it mid-JSON) is dropped, not an error.
 * - Usage comes in a last chunk with no choices (we ask with `stream_options.include_usage`); some servers put it on
 *   the finishing chunk instead, and some send none (then 0 tokens). The last one seen counts.
 *
 * Transient failures (timeouts, dropped connections, HTTP 408 / 409 / 429 / 5xx, and an `error` payload inside an
 * open stream) are retried with backoff like core/ai/bedrock-stream.ts, announced with `retry` events, as long as
 * nothing was yielded yet; after that a retry would repeat output downstream, so the call fails instead. A server that
 * cannot be reached at all fails at once, naming its address. The SDK's own retry is off (`maxRetries: 0`).
 */
import { abortError, backoffDelay, describe, sleep } from "./retry";
import OpenAI, { APIError, APIUserAbortError } from "openai";
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
} from "openai/resources/chat/completions";
import { Config } from "../config";
import { AppError } from "../error";
import type { RetrySettings } from "./retry";
import {
  busyError,
  callUsage,
  DEFAULT_MAX_TOKENS,
  isTransient,
  isUnreachable,
  OPENAI_COMPATIBLE,
  OPENAI_DEFAULT_RETRY,
  openAICompatibleClient,
  parseArguments,
  unreachableError,
  type OpenAICompatibleConnection,
  type TokenRates,
} from "./openai";
import { validTurns } from "./turns";
import { estimatedTokens, type CallUsage, type ConversationTurn, type ModelStreamEvent, type StopReason, type StreamRequest, type StreamingModel, type TurnContent } from "./ports";

/** Options of `OpenAICompatibleStreamingModel`. */
export interface OpenAICompatibleStreamingModelOptions extends OpenAICompatibleConnection {
  /** The chat model when a request names none (default `Config.openaiModel()`, OPENAI_MODEL). */
  model?: string;
  /** Prices, USD per 1M tokens (default `Config.openaiUsdPerMillionTokens()`: 0 unless set). */
  rates?: TokenRates;
  /** Backoff for transient errors before any output (default: 5 retries, 500 ms to 8 s). */
  retry?: Partial<RetrySettings>;
}

/** A chunk's delta with the reasoning fields some servers add (not in the SDK's types). */
type Delta = ChatCompletionChunk.Choice.Delta & { reasoning_content?: string | null; reasoning?: string | null };

/**
 * A model behind an OpenAI-compatible API, streamed (StreamingModel port, DESIGN.md 6.1).
 *
 * `stream(req)` yields, in order: `text` / `thinking` deltas as they arrive, each tool call once the stream has finished
 * (`input` parsed from the joined fragments; no arguments is `{}`), `retry` before each retry of a transient failure
 * that happened before any output, then exactly one `stop` with the stop reason and the call's `CallUsage` (tokens
 * from the stream's `usage`, cost at the configured rates, `attempts` = requests made, `latencyMs` = wall time from
 * the first request to the end of the stream, retries included).
 *
 * Request mapping: model `req.modelId ?? the configured model`; `system` as the first message; assistant turns as
 * one message with their text as `content` and their tool uses as `tool_calls` (arguments JSON-encoded); user turns
 * as one `tool` message per tool result (first: they must follow the assistant message that called them; content a
 * string as is, anything else JSON-encoded; an error result prefixed `Error: `, the API having no status field),
 * then one user message with the turn's text; `tools` only when offered (as function tools); `max_tokens` default
 * 4,096; `temperature` when set. `thinking` is not sent: Chat Completions has no portable thinking budget, and
 * models that reason do it unasked.
 *
 * @throws AppError SERVICE_UNAVAILABLE when a transient failure persists after the retries or happens after output
 *   was yielded, or when the server cannot be reached at all (the message names the address)
 * @throws AppError INTERNAL when a tool call's arguments are not a JSON object or a tool call has no name (unless the
 *   output cap cut the call off: `finish_reason: "length"` drops it and stops with `max_tokens`), the stream
 *   ends without a `finish_reason`, or the finish reason is one we do not know
 * @throws an Error named "AbortError" when `req.signal` fires, also while waiting between retries
 * @throws the SDK's APIError unchanged for other failures (400 such as "model does not support tools", 401, 404)
 */
export class OpenAICompatibleStreamingModel implements StreamingModel {
  /** Recorded on agent runs. */
  readonly engine = OPENAI_COMPATIBLE;
  private readonly client: OpenAI;
  private readonly model: string;
  private readonly rates: TokenRates;
  private readonly retry: RetrySettings;

  constructor(opts: OpenAICompatibleStreamingModelOptions = {}) {
    // The address first: with nothing set, the error names OPENAI_BASE_URL, as checkAiSettings does.
    this.client = opts.client ?? openAICompatibleClient(opts);
    this.model = opts.model ?? Config.openaiModel();
    this.rates = opts.rates ?? Config.openaiUsdPerMillionTokens();
    this.retry = { ...OPENAI_DEFAULT_RETRY, ...opts.retry };
  }

  /** The model used when the request names none. */
  modelId(): string {
    return this.model;
  }

  async *stream(req: StreamRequest): AsyncGenerator<ModelStreamEvent, void, undefined> {
    const model = req.modelId ?? this.model;
    const body = streamBody(req, model);
    const started = performance.now();
    let attempts = 0;
    // What a call cut short is billed at (the `cut` event): the request as sent, and the output streamed so far.
    const requestChars = JSON.stringify({ messages: body.messages, tools: body.tools }).length;

    for (;;) {
      attempts++;
      // Output already handed to the consumer by this call: once true, a retry would repeat it.
      let yielded = false;
      // Whether the server accepted the request (its stream opened), and the characters of output it streamed since.
      let opened = false;
      let streamedChars = 0;
      // The usage the provider reported (at the stream's end), when it did.
      let inputTokens = 0;
      let outputTokens = 0;
      try {
        req.signal?.throwIfAborted();
        const stream = await this.client.chat.completions.create(body, { signal: req.signal });
        opened = true;

        const tools = new Map<number, { id: string; name: string; parts: string[] }>();
        const reasoningParts: string[] = [];
        let finish: string | undefined;
        for await (const chunk of stream) {
          // Stop handing out events as soon as the caller gave up.
          if (req.signal?.aborted) throw abortError(req.signal);
          if (chunk.usage) {
            inputTokens = chunk.usage.prompt_tokens ?? 0;
            outputTokens = chunk.usage.completion_tokens ?? 0;
          }
          const choice = chunk.choices?.[0];
          if (!choice) continue;
          const delta: Delta = choice.delta ?? {};
          const reasoning = delta.reasoning_content ?? delta.reasoning;
          if (typeof reasoning === "string" && reasoning !== "") {
            reasoningParts.push(reasoning);
            yielded = true;
            streamedChars += reasoning.length;
            yield { type: "thinking", delta: reasoning };
          }
          // Reasoning ends where the answer (text or a tool call) begins: its block goes first in the turn.
          if (reasoningParts.length > 0 && ((typeof delta.content === "string" && delta.content !== "") || delta.tool_calls?.length)) {
            yield { type: "thinking_block", block: { type: "thinking", text: reasoningParts.splice(0).join("") } };
          }
          if (typeof delta.content === "string" && delta.content !== "") {
            yielded = true;
            streamedChars += delta.content.length;
            yield { type: "text", delta: delta.content };
          }
          for (const piece of delta.tool_calls ?? []) {
            // `index` is required by the API; a server that leaves it out sends each call whole, so count them.
            const index = typeof piece.index === "number" ? piece.index : tools.size;
            let tool = tools.get(index);
            if (!tool) {
              tool = { id: "", name: "", parts: [] };
              tools.set(index, tool);
            }
            if (piece.id) tool.id = piece.id;
            if (piece.function?.name) tool.name = piece.function.name;
            if (piece.function?.arguments) {
              tool.parts.push(piece.function.arguments);
              streamedChars += piece.function.arguments.length;
            }
          }
          if (choice.finish_reason) finish = choice.finish_reason;
        }
        if (req.signal?.aborted) throw abortError(req.signal);
        if (finish === undefined) throw new AppError("INTERNAL", "The model server's stream ended without a finish_reason");
        if (reasoningParts.length > 0) yield { type: "thinking_block", block: { type: "thinking", text: reasoningParts.splice(0).join("") } };
        // A call the output cap cut off (`length`) may hold half-written JSON: it is dropped and the turn ends as cut
        // (max_tokens), keeping what came before, as on Bedrock; with any other finish it is the model's error.
        const cut = finish === "length";
        let sent = 0;
        for (const [index, tool] of [...tools.entries()].sort((a, b) => a[0] - b[0])) {
          const call = toolCall(tool, index, cut);
          if (!call) continue;
          sent++;
          yielded = true;
          yield call;
        }
        const usage = callUsage({ modelId: model, tier: req.tier, rates: this.rates, started, attempts }, inputTokens, outputTokens);
        yield { type: "stop", reason: stopReason(finish, sent > 0), usage };
        return;
      } catch (err) {
        // A call the server accepted and that ends here is billed once the model generated (or the caller
        // aborted it while it ran); one refused or throttled before any output is not. Its usage goes before the error.
        // Only for a call that ends here: an attempt that is retried reports nothing (its use could only be guessed).
        const retried = !req.signal?.aborted && !isUnreachable(err) && isRetryable(err) && !yielded && attempts <= this.retry.retries;
        if (opened && !retried && (req.signal?.aborted || yielded || streamedChars > 0)) {
          const usage = callUsage({ modelId: model, tier: req.tier, rates: this.rates, started, attempts }, inputTokens || estimatedTokens(requestChars), outputTokens || estimatedTokens(streamedChars));
          yield { type: "cut", usage };
        }
        // The SDK reports the caller's abort as its own error; say it the one way callers know.
        if (req.signal?.aborted) throw abortError(req.signal);
        if (isUnreachable(err)) throw unreachableError(err, this.client.baseURL);
        if (!isRetryable(err)) throw err;
        if (yielded || attempts > this.retry.retries) throw busyError(this.retry);
        const delayMs = backoffDelay(attempts, this.retry);
        yield { type: "retry", attempt: attempts + 1, delayMs, reason: describe(err) };
        await sleep(delayMs, req.signal);
      }
    }
  }
}

/** The Chat Completions request for a stream request (the mapping documented on the class). */
export function streamBody(req: StreamRequest, model: string): ChatCompletionCreateParamsStreaming {
  const body: ChatCompletionCreateParamsStreaming = {
    model,
    // Thinking is never sent back (see the module comment); tool blocks only when tools are offered.
    messages: [{ role: "system", content: req.system }, ...validTurns(req.messages, { tools: req.tools.length > 0, thinking: false }).flatMap(toMessages)],
    stream: true,
    stream_options: { include_usage: true },
    max_tokens: req.maxTokens ?? DEFAULT_MAX_TOKENS,
    ...(req.temperature === undefined ? {} : { temperature: req.temperature }),
  };
  if (req.tools.length > 0) {
    body.tools = req.tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.inputSchema } }));
  }
  return body;
}

function toMessages(turn: ConversationTurn): ChatCompletionMessageParam[] {
  const text = turn.content
    .filter((p): p is Extract<TurnContent, { type: "text" }> => p.type === "text" && p.text.trim() !== "")
    .map((p) => p.text)
    .join("\n\n");
  if (turn.role === "assistant") {
    const calls: ChatCompletionMessageToolCall[] = turn.content.flatMap((p) =>
      p.type === "tool_use" ? [{ id: p.id, type: "function" as const, function: { name: p.name, arguments: JSON.stringify(p.input) } }] : [],
    );
    if (!text && calls.length === 0) return [];
    const message: ChatCompletionAssistantMessageParam = { role: "assistant", content: text || null };
    if (calls.length > 0) message.tool_calls = calls;
    return [message];
  }
  const results: ChatCompletionMessageParam[] = turn.content.flatMap((p) =>
    p.type === "tool_result" ? [{ role: "tool" as const, tool_call_id: p.id, content: toolResultText(p) }] : [],
  );
  return text ? [...results, { role: "user", content: text }] : results;
}

function toolResultText(part: Extract<TurnContent, { type: "tool_result" }>): string {
  const text = typeof part.content === "string" ? part.content : (JSON.stringify(part.content) ?? "null");
  return part.status === "error" ? `Error: ${text}` : text;
}

/**
 * A finished tool call: fragments joined and parsed; a call without an id gets one (the loop answers by id).
 * @returns undefined for a call the output cap cut off (`cut`) whose name or arguments are not usable
 */
function toolCall(tool: { id: string; name: string; parts: string[] }, index: number, cut = false): Extract<ModelStreamEvent, { type: "tool_call" }> | undefined {
  const id = tool.id || `call_${index}`;
  if (!tool.name) {
    if (cut) return undefined;
    throw new AppError("INTERNAL", `The AI model streamed a tool call (${id}) without a function name`);
  }
  const raw = tool.parts.join("");
  const args = parseArguments(raw);
  if (!args.ok) {
    if (cut) return undefined;
    throw new AppError("INTERNAL", `The AI model sent tool input for ${tool.name} (${id}) that is not usable: ${args.problem}`, {
      model_error: raw.slice(0, 500),
    });
  }
  return { type: "tool_call", id, name: tool.name, input: args.value };
}

/** The finish reason as the port's stop reason (see the module comment). */
export function stopReason(finish: string, sentToolCalls: boolean): StopReason {
  switch (finish) {
    case "stop":
      return sentToolCalls ? "tool_use" : "end_turn";
    case "tool_calls":
    case "function_call":
      return "tool_use";
    case "length":
      return "max_tokens";
    case "content_filter":
      return "content_filtered";
    default:
      throw new AppError("INTERNAL", `The AI model stopped with finish_reason ${finish}`);
  }
}

/** Transient per ./openai.ts, plus an `error` payload inside an open stream (the SDK throws it without a status). */
function isRetryable(err: unknown): boolean {
  if (err instanceof APIUserAbortError) return false;
  return isTransient(err) || (err instanceof APIError && err.status === undefined && !isUnreachable(err));
}
